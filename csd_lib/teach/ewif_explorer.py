"""Notebook 05's sliders: EWIF of SD and of a vertical cascade with a free drafter, redrawn on every move.

The figure is put into the widget's ``Output`` with :func:`csd_lib.viz.show_in_output` (one widget state
change), never captured with ``with out:``, so a headless client never waits on the cell after it.
"""
from __future__ import annotations

from ..viz.ewif import sd_vs_cascade_figure
from ..viz.notebook import show_in_output


def ewif_explorer(alpha: float = 0.8, c: float = 0.05, alpha_prime: float = 0.5):
    """A VBox of three sliders (alpha, c on a log scale, alpha') above the figure they draw."""
    import ipywidgets as w  # ipywidgets: imported when a widget is built
    sliders = dict(alpha=w.FloatSlider(value=alpha, min=0.05, max=0.98, step=0.01, description="alpha"),
                   c=w.FloatLogSlider(value=c, base=10, min=-3, max=0, step=0.05, description="c"),
                   alpha_prime=w.FloatSlider(value=alpha_prime, min=0.0, max=0.98, step=0.01, description="alpha_prime"))
    out = w.Output()

    def redraw(_=None):
        show_in_output(out, sd_vs_cascade_figure(**{name: s.value for name, s in sliders.items()}))

    for s in sliders.values():
        s.observe(redraw, names="value")
    redraw()
    box = w.VBox([*sliders.values(), out])
    box.sliders, box.out = sliders, out
    return box
