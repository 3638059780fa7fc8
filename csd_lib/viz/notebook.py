"""Notebook setup."""
from __future__ import annotations


def setup_notebook(family: str | None = None) -> None:
    """Notebook defaults: the plotly renderer named by CSD_PLOTLY_RENDERER, no progress bars.

    For the embedded tiny families one torch thread is used: per-call overhead dominates
    their forward passes, and more threads only add contention on a shared CPU.
    """
    from .. import config
    if family is not None and family.startswith("tiny"):
        import torch
        torch.set_num_threads(1)
    if config.PLOTLY_RENDERER:
        import plotly.io as pio
        pio.renderers.default = config.PLOTLY_RENDERER
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()
