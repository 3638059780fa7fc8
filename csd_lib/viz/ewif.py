"""EWIF figures (notebook 05): theory curves, the paper's Table 1, Cor 4.4."""
from __future__ import annotations

from ..ewif import best_k_sd, ewif_sd, ewif_vc
from ..mag import MATCH
from .palette import LEVEL_COLORS, OKABE_ITO


def ewif_k_figure(settings: list[tuple[float, float]], k_max: int = 20, title: str | None = None):
    """EWIF of speculative decoding (Cor 4.2) against k, one line per (alpha, c), best k marked."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    ks = list(range(1, k_max + 1))
    palette = [OKABE_ITO[c] for c in ("blue", "vermillion", "bluish green", "reddish purple", "orange", "black")]
    for n, (alpha, c) in enumerate(settings):
        color = palette[n % len(palette)]
        fig.add_scatter(x=ks, y=[ewif_sd(alpha, k, c) for k in ks], mode="lines", line=dict(color=color),
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
    """Several named lines over one x axis (theory curves, Monte Carlo points)."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    for name, y in series.items():
        fig.add_scatter(x=list(x), y=list(y), mode="lines+markers", name=name,
                        line=dict(color=(colors or {}).get(name), dash=(dash or {}).get(name)))
    fig.update_layout(title=title, xaxis_title=xlabel, yaxis_title=ylabel, template="plotly_white")
    return fig


def table1_figure(rows_by_model: dict[str, list[dict]], title: str = "Table 1: horizontal cascade EWIF"):
    """Grouped bars: the paper's Table 1 numbers beside EWIF computed under each cost model."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    first = next(iter(rows_by_model.values()))
    keep = [r for r in first if r["drafters"] in ("small", "base", "base+small")]
    labels = [f"{r['dataset']} {r['drafters']}" for r in keep]
    fig = go.Figure()
    fig.add_bar(x=labels, y=[r["paper"] for r in keep], name="paper (Table 1)", marker_color="#444")
    for name, rows in rows_by_model.items():
        by = {(r["dataset"], r["drafters"]): r["ewif"] for r in rows}
        fig.add_bar(x=labels, y=[by[(r["dataset"], r["drafters"])] for r in keep], name=f"computed, {name} costs")
    fig.update_layout(title=title, barmode="group", yaxis_title="EWIF (x over AR)", template="plotly_white")
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
                    line=dict(color=LEVEL_COLORS[MATCH]))
    fig.add_scatter(x=ns, y=sd, mode="lines+markers", name="SD with d1 alone, k = n",
                    line=dict(color=LEVEL_COLORS["base"]))
    fig.update_layout(title=title or f"Cor 4.4 with measured rates: alpha={alpha:.2f}, alpha'={alpha_prime:.2f}, "
                      f"c_d1={c_d1:.2f}", xaxis_title="n (reviews of d1 per target review)",
                      yaxis_title="EWIF", template="plotly_white")
    return fig
