"""Figures of the lessons' committed evidence (notebooks 01-04): one answer per task with its interval, and the
decay curves it rests on. Rows come from :mod:`csd_lib.report.evidence`; colours and marker shapes are the
palette's series (Okabe-Ito, colour-blind safe), so each task stays apart in greyscale too."""
from __future__ import annotations

from .palette import series_style


def evidence_figure(rows: list[dict], label: str, title: str = "the committed evidence", live: dict | None = None):
    """Each task's answer (``estimate`` with its interval ``lo``..``hi``) as a point with error bars, and 0 as a line.

    Args:
        rows: answers of :func:`csd_lib.report.evidence.lesson_evidence` (one per task).
        label: the axis title (what the difference measures).
        live: optional ``{name: value}``: the student's live values, drawn as open markers (an illustration).
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    for i, r in enumerate(rows):
        st = series_style(i)
        fig.add_scatter(x=[r["estimate"]], y=[r["task"]], mode="markers", name=f"{r['task']} ({r['n']} prompts)",
                        marker=dict(color=st["color"], symbol=st["symbol"], size=11),
                        error_x=dict(type="data", symmetric=False, array=[r["hi"] - r["estimate"]],
                                     arrayminus=[r["estimate"] - r["lo"]], color=st["color"], thickness=2))
    for j, (name, v) in enumerate((live or {}).items()):
        st = series_style(len(rows) + j)
        fig.add_scatter(x=[v], y=[name], mode="markers", name=name,
                        marker=dict(color=st["color"], symbol=f"{st['symbol']}-open", size=11, line=dict(width=2)))
    fig.add_vline(x=0, line=dict(color="#000000", dash="dash", width=1))
    fig.update_layout(title=title, xaxis_title=f"{label} (95% interval)", yaxis_title="", height=140 + 45 * (len(rows) + len(live or {})),
                      margin=dict(l=10, r=10, t=50, b=40))
    return fig


def decay_evidence_figure(rows: list[dict], title: str = "P(first i accepted), committed runs"):
    """The pooled share of blocks that keep their first i drafted tokens, one line per task (the rows' ``curve``)."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    for i, r in enumerate(rows):
        st = series_style(i)
        pos = list(range(1, len(r["curve"]) + 1))
        fig.add_scatter(x=pos, y=r["curve"], mode="lines+markers", name=f"{r['task']}: {r['pair']} ({r['n']} prompts)",
                        line=dict(color=st["color"], dash=st["dash"]), marker=dict(symbol=st["symbol"], size=7))
    fig.update_layout(title=title, xaxis_title="draft position i", yaxis_title="P(first i accepted)", yaxis_range=[0, 1.02])
    return fig
