"""Notebook 01's picker: choose a drafter, a task and whether to show the conditional curve; the figure redraws.

The curves are computed before; the widget only redraws them (:func:`csd_lib.viz.acceptance_figure`),
putting each figure into its ``Output`` as widget state (:func:`csd_lib.viz.show_in_output`), so a
headless client never waits on it.
"""
from __future__ import annotations

from ..viz.acceptance import acceptance_figure
from ..viz.notebook import show_in_output


def curve_picker(curves: dict, drafters: list[str], tasks: list[str], family_name: str):
    """A VBox of three controls (drafter or ``all``, task, conditional too) above the figure.

    ``curves[task, drafter]`` is an acceptance curve (:func:`csd_lib.measure.curves.acceptance_curve`)
    of ``drafter`` against the target on ``task``; every (task, drafter) pair must be there. The box
    keeps its controls as ``.drafter``, ``.task``, ``.conditional``, the figure's ``Output`` as ``.out``
    and the figure last drawn as ``.figure``.
    """
    import ipywidgets as w  # ipywidgets: imported when a widget is built
    missing = [(t, d) for t in tasks for d in drafters if (t, d) not in curves]
    if missing or not drafters or not tasks:
        raise ValueError(f"curves must hold every (task, drafter) of tasks {tasks} and drafters {drafters}; "
                         f"missing {missing}")
    pick_drafter = w.Dropdown(options=["all"] + list(drafters), description="drafter")
    pick_task = w.Dropdown(options=list(tasks), description="task")
    pick_cond = w.Checkbox(value=True, description="conditional too")
    out = w.Output()
    box = w.VBox([w.HBox([pick_drafter, pick_task, pick_cond]), out])

    def redraw(_=None):
        sel = {f"{d}->target": curves[pick_task.value, d] for d in drafters if pick_drafter.value in ("all", d)}
        box.figure = acceptance_figure(sel, conditional=pick_cond.value, title=f"{family_name} on {pick_task.value}")
        show_in_output(out, box.figure)

    for wd in (pick_drafter, pick_task, pick_cond):
        wd.observe(redraw, names="value")
    redraw()
    box.drafter, box.task, box.conditional, box.out = pick_drafter, pick_task, pick_cond, out
    return box
