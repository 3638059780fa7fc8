"""Notebook 05's cost-ratio slider: every drafter's measured cost scaled by a factor, the predicted speedups
and the sentence redrawn on every move.

The figure goes into the widget's ``Output`` with :func:`csd_lib.viz.show_in_output`, never ``with out:``.
"""
from __future__ import annotations

from ..viz.costs import cost_ratio_figure
from ..viz.notebook import show_in_output


def ratio_explorer(sweep, factor: float = 1.0):
    """A VBox: a log slider for the factor on this machine's drafter costs, the sentence, the figure."""
    import ipywidgets as w  # ipywidgets: imported when a widget is built
    slider = w.FloatLogSlider(value=factor, base=10, min=-2, max=0.7, step=0.05, description="drafter cost x")
    words, out = w.HTML(), w.Output()

    def redraw(_=None):
        f = slider.value
        words.value = sweep.sentence(f)
        show_in_output(out, cost_ratio_figure(sweep, None if f == 1.0 else (f, sweep.at(f))))

    slider.observe(redraw, names="value")
    redraw()
    box = w.VBox([slider, words, out])
    box.slider, box.words, box.out = slider, words, out
    return box
