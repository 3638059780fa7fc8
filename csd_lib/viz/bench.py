"""Benchmark figures (notebooks 00, 05, 06): speedups over AR, measured against predicted."""
from __future__ import annotations


def bench_figure(summary: dict, title: str = "speedup over AR"):
    """Grouped bars: walltime and SWI speedups per method (plotly Figure)."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    methods = [m for m in summary if m != "ar"]
    fig = go.Figure()
    for key, label in (("speedup_walltime", "walltime (measured)"), ("speedup_swi_ms", "SWI model-size"),
                       ("speedup_swi_pw", "SWI previous-work")):
        fig.add_bar(name=label, x=methods, y=[summary[m].get(key) for m in methods])
    fig.add_hline(y=1.0, line_dash="dot", annotation_text="AR")
    fig.update_layout(title=title, barmode="group", yaxis_title="speedup over AR (x)", template="plotly_white")
    return fig


def parity_figure(points: list[dict], x: str, y: str, label: str = "label", xlabel: str | None = None,
                  ylabel: str | None = None, title: str = "", color: str | None = None):
    """Scatter of ``y`` against ``x`` with the line y = x (theory vs measured, SWI vs walltime)."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    groups: dict = {}
    for p in points:
        groups.setdefault(p.get(color) if color else "", []).append(p)
    for g, pts in groups.items():
        fig.add_scatter(x=[p[x] for p in pts], y=[p[y] for p in pts], mode="markers+text", name=str(g) or y,
                        text=[p[label] for p in pts], textposition="top center", marker=dict(size=10),
                        showlegend=bool(color))
    vals = [v for p in points for v in (p[x], p[y]) if v is not None]
    lo, hi = (min(vals + [1.0]), max(vals + [1.0])) if vals else (0, 1)
    fig.add_scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(color="grey", dash="dot"), name="y = x")
    fig.update_layout(title=title, xaxis_title=xlabel or x, yaxis_title=ylabel or y, template="plotly_white")
    return fig
