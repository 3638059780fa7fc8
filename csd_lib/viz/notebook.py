"""Notebook setup."""
from __future__ import annotations

import logging

import torch

from .. import config
from ..families.hub import hide_weight_loading_bars


QUIET_IN_NOTEBOOKS = ("csd_lib.families.tasks",)  # loggers whose notes (``load_task: ...``) a notebook hides


def setup_notebook(family_name: str | None = None) -> None:
    """Notebook defaults: the plotly renderer named by CSD_PLOTLY_RENDERER, no weight-loading bars,
    and no ``load_task:`` notes (they would show as stderr boxes above the figures; the CLI keeps them;
    warnings still show).

    Download bars of the Hugging Face hub stay visible, so a multi-GB first download of a
    real family shows its progress.

    For the embedded tiny families one torch thread is used: per-call overhead dominates
    their forward passes, and more threads only add contention on a shared CPU.
    """
    if family_name is not None and family_name.startswith("tiny"):
        torch.set_num_threads(1)
    if config.PLOTLY_RENDERER:
        import plotly.io as pio  # plotly: imported when a figure is drawn
        pio.renderers.default = config.PLOTLY_RENDERER
    for name in QUIET_IN_NOTEBOOKS:
        logging.getLogger(name).setLevel(logging.WARNING)
    hide_weight_loading_bars()


def show_in_output(out, fig) -> None:
    """Make the ipywidgets ``Output`` widget ``out`` show ``fig`` (and nothing else).

    The outputs are set as one widget state change rather than captured with ``with out:``.
    Capturing makes a headless client (nbclient, as nbval and nbconvert run notebooks) answer
    with its own comm message, which can leave the next cell waiting out its whole timeout;
    setting the state sends nothing back. A plotly figure is turned into its mime bundle for the
    session's renderer here: plotly displays itself as a side effect (``_ipython_display_``), which
    would land outside the widget.
    """
    if hasattr(fig, "to_plotly_json"):
        bundle = fig._repr_mimebundle_() or {"application/vnd.plotly.v1+json": fig.to_plotly_json(),
                                              "text/plain": repr(fig)}  # no renderer chosen: the mimetype
        outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)
        with out.hold_sync():
            out.outputs = outputs
        return
    with out.hold_sync():
        out.outputs = ()
        out.append_display_data(fig)
