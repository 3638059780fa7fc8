"""Benchmark figures (notebooks 00, 05, 06): speedups over AR, measured against predicted, latency."""
from __future__ import annotations

import numpy as np

from ..engine.methods import REFERENCE
from ..engine.methods import label as method_label
from ..measure.records import ALL_METHODS, fastest
from .palette import OKABE_ITO, bar_pattern, series_style


def bench_figure(summary: dict, title: str = "speedup over AR"):
    """Grouped bars: walltime and SWI speedups per method (plotly Figure).

    Each series has its own colour and fill pattern, and every bar carries its value, so the
    figure reads in greyscale.
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    methods = [m for m in summary if m != REFERENCE]
    fig = go.Figure()
    for i, (key, label) in enumerate((("speedup_walltime", "walltime (measured)"),
                                      ("speedup_swi_ms", "SWI model-size"), ("speedup_swi_pw", "SWI previous-work"))):
        st = series_style(i)
        ys = [summary[m].get(key) for m in methods]
        fig.add_bar(name=label, x=[method_label(m) for m in methods], y=ys, marker=dict(color=st["color"], line=dict(color="#000000", width=1),
                                                              pattern=bar_pattern(st["pattern"], st["color"])),
                    text=[f"{v:.2f}" if v is not None else "" for v in ys], textposition="outside",
                    textfont=dict(size=10), cliponaxis=False)
    fig.add_hline(y=1.0, line=dict(dash="dot", color=OKABE_ITO["black"]), annotation_text="AR")
    fig.update_layout(title=title, barmode="group", xaxis_title="method", yaxis_title="speedup over AR (x)",
                      yaxis_tickformat=".1f", xaxis_tickangle=-30 if len(methods) > 6 else 0,
                      template="plotly_white", legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0))
    return fig


def parity_figure(points: list[dict], x: str, y: str, label: str = "label", xlabel: str | None = None,
                  ylabel: str | None = None, title: str = "", color: str | None = None):
    """Scatter of ``y`` against ``x`` with the line y = x (theory vs measured, SWI vs walltime).

    Points are labelled directly (labels of close points alternate above and below); with ``color``
    each group also gets its own colour and marker symbol.
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    groups: dict = {}
    for p in points:
        groups.setdefault(p.get(color) if color else "", []).append(p)
    for i, (g, pts) in enumerate(groups.items()):
        st = series_style(i)
        fig.add_scatter(x=[p[x] for p in pts], y=[p[y] for p in pts], mode="markers+text", name=str(g) or y,
                        text=[p[label] for p in pts], textposition=_label_positions([p[y] for p in pts]),
                        textfont=dict(size=10),
                        marker=dict(size=10, color=st["color"], symbol=st["symbol"],
                                    line=dict(color="#ffffff", width=1)),
                        showlegend=bool(color))
    vals = [v for p in points for v in (p[x], p[y]) if v is not None]
    lo, hi = (min(vals + [1.0]), max(vals + [1.0])) if vals else (0, 1)
    fig.add_scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(color="grey", dash="dot"), name="y = x")
    fig.update_layout(title=title, xaxis_title=xlabel or x, yaxis_title=ylabel or y, template="plotly_white",
                      xaxis_tickformat=".2~f", yaxis_tickformat=".2~f")
    return fig


def _label_positions(ys: list) -> list[str]:
    """Text positions for point labels: in order of y, alternately above and below, so neighbours do not overlap."""
    order = sorted(range(len(ys)), key=lambda i: (ys[i] is None, ys[i] or 0.0))
    pos = [""] * len(ys)
    for rank, i in enumerate(order):
        pos[i] = "top center" if rank % 2 == 0 else "bottom center"
    return pos


def itl_figure(records, methods=None, title: str = "inter-token latency"):
    """The distribution of inter-token latencies per method: one empirical CDF each (plotly Figure).

    Every gap of every example's fastest round, pooled (the gaps the summaries' ITL percentiles read,
    :func:`csd_lib.report.bench_stats.latency_stats`); a block of tokens accepted together shows as the jump
    at 0. Methods whose lines hold no commit times are left out. Each line has its own colour, dash and
    marker, and its legend entry gives the median time to first token.
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    best = fastest(records)
    order = [m for m in (methods or ALL_METHODS) if m in best]
    fig = go.Figure()
    for i, m in enumerate(m for m in order if any(r.commit_times for r in best[m].values())):
        recs = [r for r in best[m].values() if r.commit_times]
        gaps = np.sort(np.concatenate([np.asarray(r.itl, dtype=float) for r in recs])) * 1e3  # (tokens,) ms
        ttft = float(np.median([r.ttft for r in recs])) * 1e3
        st = series_style(i)
        cdf = np.arange(1, gaps.size + 1) / gaps.size
        fig.add_scatter(x=gaps, y=cdf, mode="lines+markers", name=f"{method_label(m)} (TTFT median {ttft:.1f} ms)",
                        line=dict(color=st["color"], dash=st["dash"], shape="hv", width=2),
                        marker=dict(symbol=st["symbol"], color=st["color"], size=6, maxdisplayed=12))
    fig.update_layout(title=title, xaxis_title="inter-token latency (ms; 0: in the same block as the token before)",
                      yaxis_title="share of tokens with at most this gap", yaxis_tickformat=".0%",
                      template="plotly_white", legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0))
    return fig
