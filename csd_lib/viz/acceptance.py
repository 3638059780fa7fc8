"""Acceptance and forward-call figures (notebooks 01 and 03)."""
from __future__ import annotations

from ..engine.plan import MAG
from ..engine.stats import PairStats
from .palette import LEVEL_COLORS, SERIES_SYMBOLS, bar_pattern, level_color, level_pattern, model_color, series_style

# measured curves: one dash per family; geometric fits: dashes no curve uses
_CURVE_DASHES = ["solid", "dot", "dashdot"]
_FIT_DASHES = ["dash", "longdash", "longdashdot", "8px,3px,2px,3px,2px,3px"]


def acceptance_figure(curves: dict, conditional: bool = True, fit: bool = True, paper: bool = True,
                      title: str = "acceptance by draft position"):
    """Per-position acceptance curves (paper Fig. 2) with geometric fits alpha**i.

    Args:
        curves: ``{"small->target": curve}`` with ``unconditional`` / ``conditional`` /
            ``alpha`` as returned by :func:`csd_lib.measure.curves.acceptance_curve`.
        paper: mark the paper's range (0.7-0.8 at position 1, <= 0.1 at position 30).
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    # "family: role->target" keys: colour by role, line dash by family (a legend swatch is mostly
    # line, so a marker shape alone does not tell two curves apart in greyscale).
    families = list(dict.fromkeys(name.split("->")[0].rpartition(": ")[0] for name in curves))
    for n, (name, cv) in enumerate(curves.items()):
        family, _, role = name.split("->")[0].rpartition(": ")
        col = level_color(role) if role in LEVEL_COLORS else series_style(n)["color"]
        sym = SERIES_SYMBOLS[n % len(SERIES_SYMBOLS)]  # one marker shape per pair, besides its colour
        curve_dash = _CURVE_DASHES[families.index(family) % len(_CURVE_DASHES)]
        pos = list(range(1, len(cv["unconditional"]) + 1))
        fig.add_scatter(x=pos, y=cv["unconditional"], mode="lines+markers", name=f"{name} P(first i accepted)",
                        line=dict(color=col, dash=curve_dash), marker=dict(symbol=sym, size=7), legendgroup=name)
        if conditional:
            fig.add_scatter(x=pos, y=cv["conditional"], mode="markers", name=f"{name} P(i | 1..i-1 accepted)",
                            marker=dict(color=col, symbol=f"{sym}-open", size=8, line=dict(width=2)),
                            legendgroup=name)
        if fit and cv.get("alpha") == cv.get("alpha"):  # not nan
            a = cv["alpha"]
            fig.add_scatter(x=pos, y=[a ** i for i in pos], mode="lines", name=f"{name} fit {a:.2f}^i",
                            line=dict(color=col, dash=_FIT_DASHES[n % len(_FIT_DASHES)], width=1.5),
                            legendgroup=name)
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
    order = [k for k in ("target", "base", "small", MAG) if k in names] + \
        [k for k in names if k not in ("target", "base", "small", MAG)]
    fig = go.Figure()
    labels = list(gens)
    ticks = [_wrap_label(lab) for lab in labels]
    for k in order:
        ys = [calls[lab].get(k, 0) for lab in labels]
        col = model_color(k)
        fig.add_bar(name=k + (" (free)" if k == MAG else ""), x=ticks, y=ys,
                    marker=dict(color=col, line=dict(color="#000000", width=1), pattern=bar_pattern(level_pattern(k), col)),
                    text=ys, textposition="outside", textangle=0, textfont=dict(size=9), cliponaxis=False)
    tpc = [sum(g.stats.n_tokens for g in _runs(gens[lab])) / max(1, calls[lab].get("target", 0)) for lab in labels]
    # the ratio gets its own strip above the bars (yaxis2), so its labels never sit on the bars' labels
    fig.add_scatter(x=ticks, y=tpc, mode="markers+text", name="tokens per target call (top strip)", yaxis="y2",
                    marker=dict(color="#000000", symbol="diamond", size=11),
                    text=[f"{v:.2f}" for v in tpc], textposition="middle right", textfont=dict(size=10),
                    cliponaxis=False)
    top = max([v for c in calls.values() for v in c.values()] + [1])
    fig.update_layout(title=title, barmode="group", template="plotly_white",
                      xaxis=dict(title="configuration", tickangle=0),
                      yaxis=dict(title="forward calls", tickformat=",d", range=[0, 1.15 * top], domain=[0, 0.72]),
                      yaxis2=dict(title="tokens per<br>target call", anchor="x", domain=[0.8, 1.0], tickformat=".1f",
                                  range=[0, 1.25 * max(tpc + [1.0])], nticks=3),
                      legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0), height=540,
                      margin=dict(t=110))
    return fig


def _wrap_label(text: str, width: int = 18) -> str:
    """A tick label broken into lines of about ``width`` characters (plotly ``<br>``), so labels never overlap."""
    lines, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}".strip()
    return "<br>".join(lines + [cur])


def pair_acceptance_figure(gens: dict, max_pos: int = 15, title: str = "measured acceptance per review pair"):
    """Conditional acceptance by position for every reviewer<-proposer pair of each run.

    Args:
        gens: ``{label: Generation or list of Generations}`` (lists are pooled).
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    dashes = ["solid", "dash", "dot", "dashdot", "longdash"]
    pairs: list[str] = []  # one marker symbol per reviewer<-proposer pair, one dash per run
    for i, (lab, g) in enumerate(gens.items()):
        for key, ps in merged_acceptance(g).items():
            if key not in pairs:
                pairs.append(key)
            n_pair = pairs.index(key)
            proposer = key.split("<-")[1]
            cond = ps.conditional()[:max_pos]
            fig.add_scatter(x=list(range(1, len(cond) + 1)), y=cond, mode="lines+markers",
                            name=f"{lab}: {key}", line=dict(color=model_color(proposer), dash=dashes[i % 5], width=2.5),
                            marker=dict(symbol=SERIES_SYMBOLS[n_pair % len(SERIES_SYMBOLS)] + ("-open" if i % 2 else ""),
                                        size=9, line=dict(width=2)),
                            hovertext=[f"reached {r}, accepted {a}" for r, a in
                                       zip(ps.reached[:max_pos], ps.accepted[:max_pos])])
    fig.update_layout(title=title, xaxis_title="position in the reviewed block",
                      yaxis_title="P(accept | earlier accepted)", yaxis_range=[0, 1.02], template="plotly_white")
    return fig
