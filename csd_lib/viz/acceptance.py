"""Acceptance and forward-call figures (notebooks 01 and 03)."""
from __future__ import annotations

from ..trace import PairStats
from .palette import level_color, model_color


def acceptance_figure(curves: dict, conditional: bool = True, fit: bool = True, paper: bool = True,
                      title: str = "acceptance by draft position"):
    """Per-position acceptance curves (paper Fig. 2) with geometric fits alpha**i.

    Args:
        curves: ``{"small->target": curve}`` with ``unconditional`` / ``conditional`` /
            ``alpha`` as returned by :func:`csd_lib.acceptance.acceptance_curve`.
        paper: mark the paper's range (0.7-0.8 at position 1, <= 0.1 at position 30).
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    for name, cv in curves.items():
        role = name.split("->")[0]
        col = level_color(role)
        pos = list(range(1, len(cv["unconditional"]) + 1))
        fig.add_scatter(x=pos, y=cv["unconditional"], mode="lines+markers", name=f"{name} P(first i accepted)",
                        line=dict(color=col), legendgroup=name)
        if conditional:
            fig.add_scatter(x=pos, y=cv["conditional"], mode="markers", name=f"{name} P(i | 1..i-1 accepted)",
                            marker=dict(color=col, symbol="circle-open", size=7), legendgroup=name)
        if fit and cv.get("alpha") == cv.get("alpha"):  # not nan
            a = cv["alpha"]
            fig.add_scatter(x=pos, y=[a ** i for i in pos], mode="lines", name=f"{name} fit {a:.2f}^i",
                            line=dict(color=col, dash="dash"), legendgroup=name)
    if paper:
        fig.add_scatter(x=[1, 1], y=[0.7, 0.8], mode="lines", line=dict(color="#7f7f7f", width=8),
                        opacity=0.5, name="paper Fig. 2 (pos 1: 0.7-0.8, pos 30: <= 0.1)")
        fig.add_scatter(x=[30, 30], y=[0.0, 0.1], mode="lines", line=dict(color="#7f7f7f", width=8),
                        opacity=0.5, showlegend=False)
    fig.update_layout(title=title, xaxis_title="draft position i", yaxis_title="acceptance",
                      yaxis_range=[0, 1.02], template="plotly_white", legend=dict(font=dict(size=10)))
    return fig


def _runs(x) -> list:
    """A Generation or a list of them, as a list."""
    return list(x) if isinstance(x, (list, tuple)) else [x]


def total_calls(runs) -> dict[str, int]:
    """Forward calls per model summed over one or several generations."""
    out: dict[str, int] = {}
    for g in _runs(runs):
        for k, v in g.stats.calls.items():
            out[k] = out.get(k, 0) + v
    return out


def merged_acceptance(runs) -> dict:
    """Per-pair acceptance (``reviewer<-proposer`` -> PairStats) summed over generations."""
    out: dict = {}
    for g in _runs(runs):
        for key, ps in g.stats.acceptance.items():
            m = out.setdefault(key, PairStats())
            for i, (r, a) in enumerate(zip(ps.reached, ps.accepted)):
                while len(m.reached) <= i:
                    m.reached.append(0)
                    m.accepted.append(0)
                m.reached[i] += r
                m.accepted[i] += a
    return out


def calls_figure(gens: dict, title: str = "forward calls per model"):
    """Grouped bars: forward calls of each model (and MaG proposals) for each labelled run.

    Args:
        gens: ``{label: Generation or list of Generations}`` (lists are summed).
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    calls = {lab: total_calls(g) for lab, g in gens.items()}
    names = []
    for c in calls.values():
        for k in c:
            if k not in names:
                names.append(k)
    order = [k for k in ("target", "base", "small", "mag") if k in names] + \
        [k for k in names if k not in ("target", "base", "small", "mag")]
    fig = go.Figure()
    labels = list(gens)
    for k in order:
        ys = [calls[lab].get(k, 0) for lab in labels]
        fig.add_bar(name=k + (" (free)" if k == "mag" else ""), x=labels, y=ys, marker_color=model_color(k),
                    text=ys, textposition="outside")
    tpc = [sum(g.stats.n_tokens for g in _runs(gens[lab])) / max(1, calls[lab].get("target", 0)) for lab in labels]
    fig.add_scatter(x=labels, y=tpc, mode="markers+text", name="tokens per target call", yaxis="y2",
                    marker=dict(color="#000000", symbol="diamond", size=11),
                    text=[f"{v:.2f}" for v in tpc], textposition="top center")
    fig.update_layout(title=title, barmode="group", template="plotly_white", yaxis_title="forward calls",
                      yaxis2=dict(title="tokens per target call", overlaying="y", side="right",
                                  rangemode="tozero", showgrid=False),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def pair_acceptance_figure(gens: dict, max_pos: int = 15, title: str = "measured acceptance per review pair"):
    """Conditional acceptance by position for every reviewer<-proposer pair of each run.

    Args:
        gens: ``{label: Generation or list of Generations}`` (lists are pooled).
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    dashes = ["solid", "dash", "dot", "dashdot", "longdash"]
    for i, (lab, g) in enumerate(gens.items()):
        for key, ps in merged_acceptance(g).items():
            proposer = key.split("<-")[1]
            cond = ps.conditional()[:max_pos]
            fig.add_scatter(x=list(range(1, len(cond) + 1)), y=cond, mode="lines+markers",
                            name=f"{lab}: {key}", line=dict(color=model_color(proposer), dash=dashes[i % 5]),
                            hovertext=[f"reached {r}, accepted {a}" for r, a in
                                       zip(ps.reached[:max_pos], ps.accepted[:max_pos])])
    fig.update_layout(title=title, xaxis_title="position in the reviewed block",
                      yaxis_title="P(accept | earlier accepted)", yaxis_range=[0, 1.02], template="plotly_white")
    return fig
