"""Figures of notebook 10 (draft-length policies): the per-round draft lengths of one generation per policy, and
the committed answers (each policy against fixed K) with their intervals. Series take the palette's
``series_style`` (Okabe-Ito colours, and a dash and a marker symbol each), so they stay apart in greyscale."""
from __future__ import annotations

from .palette import series_style


def draft_length_figure(lengths: dict[str, list[int]], title: str = "draft length per round, one generation"):
    """One line per policy: the tokens drafted for each target review, round by round.

    Args:
        lengths: policy label -> ``Generation.draft_lengths()`` (one entry per round).
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    for i, (name, ns) in enumerate(lengths.items()):
        st = series_style(i)
        fig.add_scatter(x=list(range(1, len(ns) + 1)), y=list(ns), mode="lines+markers",
                        name=f"{name} ({len(ns)} rounds)", line=dict(color=st["color"], dash=st["dash"], width=2),
                        marker=dict(symbol=st["symbol"], size=8, color=st["color"]))
    fig.update_layout(title=title, xaxis_title="round (one target review each)", yaxis_title="tokens drafted",
                      yaxis_rangemode="tozero", legend_title_text="policy")
    return fig


def policy_evidence_figure(rows: list[dict], label: str, title: str = "each policy against fixed K, committed runs",
                           live: dict | None = None):
    """Each row's answer (policy minus fixed K) as a point with its interval, one colour and symbol per task, one
    line of the y axis per method and policy; 0 (no change from fixed K) as a dashed line.

    Args:
        rows: answers of :func:`csd_lib.report.evidence.policy_evidence` (one per task, method and policy).
        label: the axis title (what the difference measures).
        live: optional ``{"method, policy": value}``: the student's live values, drawn as open markers.
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    for i, task in enumerate(tasks):
        st = series_style(i)
        rs = [r for r in rows if r["task"] == task]
        fig.add_scatter(x=[r["estimate"] for r in rs], y=[f"{r['method']}, {r['policy']}" for r in rs],
                        mode="markers", name=f"{task} ({rs[0]['n']} prompts)",
                        marker=dict(color=st["color"], symbol=st["symbol"], size=11),
                        error_x=dict(type="data", symmetric=False, array=[r["hi"] - r["estimate"] for r in rs],
                                     arrayminus=[r["estimate"] - r["lo"] for r in rs], color=st["color"], thickness=2))
    if live:
        st = series_style(len(tasks))
        fig.add_scatter(x=list(live.values()), y=list(live), mode="markers", name="your prompts (live)",
                        marker=dict(color=st["color"], symbol=f"{st['symbol']}-open", size=11, line=dict(width=2)))
    fig.add_vline(x=0, line=dict(color="#000000", dash="dash", width=1))
    n_y = len({f"{r['method']}, {r['policy']}" for r in rows} | set(live or {}))
    fig.update_layout(title=title, xaxis_title=f"{label} (95% interval)", yaxis_title="method, policy",
                      height=160 + 40 * n_y, margin=dict(l=10, r=10, t=50, b=40))
    return fig
