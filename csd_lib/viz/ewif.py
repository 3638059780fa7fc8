"""EWIF figures (notebook 05): theory curves, the paper's Table 1, Cor 4.4."""
from __future__ import annotations

from ..engine.mag import MATCH
from ..price.ewif import best_k_sd, ewif_sd, ewif_vc
from .palette import LEVEL_COLORS, bar_pattern, series_style


def ewif_k_figure(settings: list[tuple[float, float]], k_max: int = 20, title: str | None = None):
    """EWIF of speculative decoding (Cor 4.2) against k, one line per (alpha, c), best k marked."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    ks = list(range(1, k_max + 1))
    for n, (alpha, c) in enumerate(settings):
        st = series_style(n)
        color = st["color"]
        fig.add_scatter(x=ks, y=[ewif_sd(alpha, k, c) for k in ks], mode="lines+markers",
                        line=dict(color=color, dash=st["dash"]), marker=dict(symbol=st["symbol"], size=6),
                        name=f"alpha={alpha:g}, c={c:g}")
        kb, tb = best_k_sd(alpha, c, k_max)
        fig.add_scatter(x=[kb], y=[tb], mode="markers", marker=dict(size=10, symbol="star", color=color),
                        showlegend=False, hovertemplate=f"best k={kb}: %{{y:.3f}}<extra></extra>")
    fig.add_hline(y=1.0, line_dash="dot", annotation_text="AR")
    fig.update_layout(title=title or "EWIF of speculative decoding (Cor 4.2)", xaxis_title="k (drafted tokens)",
                      yaxis_title="EWIF", template="plotly_white")
    return fig


def lines_figure(x, series: dict[str, list[float]], xlabel: str, ylabel: str, title: str = "",
                 colors: dict[str, str] | None = None, dash: dict[str, str] | None = None):
    """Several named lines over one x axis (theory curves, Monte Carlo points).

    Each line gets its own marker symbol, and a dash and colour of its own unless ``dash`` /
    ``colors`` name one, so lines differ in more than hue.
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    for i, (name, y) in enumerate(series.items()):
        st = series_style(i)
        fig.add_scatter(x=list(x), y=list(y), mode="lines+markers", name=name,
                        marker=dict(symbol=st["symbol"], size=8),
                        line=dict(color=(colors or {}).get(name, st["color"]), dash=(dash or {}).get(name, st["dash"])))
    fig.update_layout(title=title, xaxis_title=xlabel, yaxis_title=ylabel, template="plotly_white")
    return fig


def table1_figure(rows_by_model: dict[str, list[dict]], title: str = "Table 1: horizontal cascade EWIF"):
    """Grouped bars: the paper's Table 1 numbers beside EWIF computed under each cost model."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    first = next(iter(rows_by_model.values()))
    keep = [r for r in first if r["drafters"] in ("small", "base", "base+small")]
    labels = [[r["dataset"] for r in keep], [r["drafters"] for r in keep]]  # two-level axis: dataset, drafters
    fig = go.Figure()
    paper = "#555555"
    fig.add_bar(x=labels, y=[r["paper"] for r in keep], name="paper (Table 1)",
                marker=dict(color=paper, line=dict(color="#000000", width=1), pattern=bar_pattern("", paper)))
    for i, (name, rows) in enumerate(rows_by_model.items()):
        st = series_style(i + 1)  # the paper's bars take the solid fill
        by = {(r["dataset"], r["drafters"]): r["ewif"] for r in rows}
        fig.add_bar(x=labels, y=[by[(r["dataset"], r["drafters"])] for r in keep], name=f"computed, {name} costs",
                    marker=dict(color=st["color"], line=dict(color="#000000", width=1),
                                pattern=bar_pattern(st["pattern"], st["color"])))
    fig.update_layout(title=title, barmode="group", xaxis_title="dataset and drafters",
                      yaxis_title="EWIF (x over AR)", yaxis_tickformat=".1f", template="plotly_white",
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0))
    return fig


def cor44_figure(alpha: float, alpha_prime: float, c_d1: float, k: int, n_max: int = 12,
                 title: str | None = None):
    """EWIF of the vertical cascade (Thm 4.3, free bottom model) vs plain SD with step n (Cor 4.4)."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    ns = list(range(1, n_max + 1))
    vc = [ewif_vc(alpha, alpha_prime, k, n, c_d1, 0.0) for n in ns]
    sd = [ewif_sd(alpha, n, c_d1) for n in ns]
    fig = go.Figure()
    fig.add_scatter(x=ns, y=vc, mode="lines+markers", name=f"vertical cascade (k={k}, MaG free)",
                    line=dict(color=LEVEL_COLORS[MATCH]), marker=dict(symbol="circle", size=8))
    fig.add_scatter(x=ns, y=sd, mode="lines+markers", name="SD with d1 alone, k = n",
                    line=dict(color=LEVEL_COLORS["base"], dash="dash"), marker=dict(symbol="square", size=8))
    fig.update_layout(title=title or f"Cor 4.4 with measured rates: alpha={alpha:.2f}, alpha'={alpha_prime:.2f}, "
                      f"c_d1={c_d1:.2f}", xaxis_title="n (reviews of d1 per target review)",
                      yaxis_title="EWIF", template="plotly_white")
    return fig


def sd_vs_cascade_figure(alpha: float = 0.8, c: float = 0.05, alpha_prime: float = 0.5, k_max: int = 20,
                         block: int = 10):
    """EWIF of SD (Cor 4.2) against k beside a vertical cascade whose free bottom model drafts ``block``
    tokens per round (Thm 4.3, c_d2 = 0) against its rounds n; the dotted line is AR."""
    ks = list(range(1, k_max + 1))
    fig = lines_figure(ks, {"SD (Cor 4.2)": [ewif_sd(alpha, k, c) for k in ks],
                            f"vertical cascade with a free drafter (Thm 4.3, k={block})":
                                [ewif_vc(alpha, alpha_prime, block, n, c, 0.0) for n in ks]},
                       "k (SD) or n (cascade rounds)", "EWIF",
                       title=f"EWIF of SD and of a vertical cascade: alpha={alpha:.2f}, c={c:.3f}, alpha'={alpha_prime:.2f}")
    fig.add_hline(y=1.0, line_dash="dot")
    return fig
