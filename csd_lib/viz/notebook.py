"""Notebook setup."""
from __future__ import annotations

import torch

from .. import config
from ..families.hub import hide_weight_loading_bars


def setup_notebook(family: str | None = None) -> None:
    """Notebook defaults: the plotly renderer named by CSD_PLOTLY_RENDERER, no weight-loading bars.

    Download bars of the Hugging Face hub stay visible, so a multi-GB first download of a
    real family shows its progress.

    For the embedded tiny families one torch thread is used: per-call overhead dominates
    their forward passes, and more threads only add contention on a shared CPU.
    """
    if family is not None and family.startswith("tiny"):
        torch.set_num_threads(1)
    if config.PLOTLY_RENDERER:
        import plotly.io as pio  # plotly: imported when a figure is drawn
        pio.renderers.default = config.PLOTLY_RENDERER
    hide_weight_loading_bars()
