"""The lessons' committed answers drawn (notebooks 05-08): each (family, task) answer a point with its 95%
interval, 0 marked, one colour, dash and marker per family (Okabe-Ito, readable in grey)."""
from __future__ import annotations

import plotly.graph_objects as go

from .palette import OKABE_ITO, series_style


def answer_figure(rows: list[dict], title: str, xlabel: str, here: dict | None = None) -> go.Figure:
    """Rows of ``results/evidence.json`` (estimate, lo, hi, family, task; ``pair`` where present) as horizontal
    interval bars, one line per answer, beside a dotted line at 0. ``here``: {row label: value} of a live run,
    drawn as open diamonds on the same lines ("your prompts")."""
    if not rows:
        raise ValueError("answer_figure needs at least one answer row")
    fig = go.Figure()
    families = list(dict.fromkeys(r["family"] for r in rows))
    for i, fam in enumerate(families):
        mine = [r for r in rows if r["family"] == fam]
        st = series_style(i)
        fig.add_trace(go.Scatter(
            x=[r["estimate"] for r in mine], y=[answer_label(r) for r in mine], mode="markers", name=fam,
            marker=dict(color=st["color"], symbol=st["symbol"], size=10),
            error_x=dict(type="data", symmetric=False, array=[r["hi"] - r["estimate"] for r in mine],
                         arrayminus=[r["estimate"] - r["lo"] for r in mine], color=st["color"], thickness=2, width=6),
            hovertemplate="%{y}: %{x:.3f}<extra>" + fam + "</extra>"))
    if here:
        fig.add_trace(go.Scatter(x=list(here.values()), y=list(here), mode="markers", name="your prompts",
                                 marker=dict(color=OKABE_ITO["black"], symbol="diamond-open", size=12)))
    fig.add_vline(x=0.0, line=dict(dash="dot", color=OKABE_ITO["black"]))
    fig.update_layout(title=title, xaxis_title=xlabel, yaxis=dict(autorange="reversed"), template="plotly_white",
                      height=140 + 34 * len(rows), legend=dict(orientation="h", y=-0.25))
    return fig


def answer_label(row: dict) -> str:
    """One answer's line label: 'tiny-t5, synth-gsm8k' (and its pair, when the answer is about one)."""
    return f"{row['family']}, {row['task']}" + (f", {row['pair']}" if row.get("pair") else "")
