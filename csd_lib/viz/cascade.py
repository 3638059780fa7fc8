"""Cascade figures (notebook 04): planned and measured coverage of the reviewed blocks, grids."""
from __future__ import annotations

from .palette import proposer_color


def planned_coverage(k, drafters: list[str], reviewer: str = "target") -> list[dict]:
    """The draft positions each drafter must at least fill, read from K alone.

    Row ``i`` of K is used when ``drafters[i:]`` draft for the level above; drafter ``j``
    fills positions ``[K[i][i] + ... + K[i][j-1], K[i][i] + ... + K[i][j])`` of that
    reviewer's block (0-based, block-relative). Real blocks overshoot these minimums.
    Returns one dict per segment: reviewer, drafter, start, end.
    """
    import numpy as np
    K = np.asarray(k, dtype=int)
    n = len(drafters)
    if K.shape != (n, n):
        raise ValueError(f"K must be {n}x{n} for drafters {drafters}; got shape {K.shape}")
    rows = []
    reviewers = [reviewer] + list(drafters[:-1])
    for i in range(n):
        if i > 0 and drafters[i - 1] == "mag":
            break
        start = 0
        for j in range(i, n):
            end = start + int(K[i][j])
            if end > start:
                rows.append(dict(reviewer=reviewers[i], drafter=drafters[j], start=start, end=end))
            start = end
    return rows


def planned_coverage_figure(k, drafters: list[str], reviewer: str = "target", title: str | None = None):
    """Horizontal segments: which drafter fills which positions of each review, from K."""
    import plotly.graph_objects as go
    rows = planned_coverage(k, drafters, reviewer)
    fig = go.Figure()
    seen = set()
    for r in rows:
        label = f"{r['reviewer']} reviews"
        fig.add_bar(y=[label], x=[r["end"] - r["start"]], base=[r["start"]], orientation="h",
                    marker_color=proposer_color(r["drafter"]), name=r["drafter"],
                    legendgroup=r["drafter"], showlegend=r["drafter"] not in seen,
                    text=[f"{r['drafter']} {r['start'] + 1}-{r['end']}"], textposition="inside",
                    hovertemplate=f"{r['drafter']}: positions {r['start'] + 1}..{r['end']}<extra></extra>")
        seen.add(r["drafter"])
    fig.update_layout(title=title or f"planned draft positions for K = {k}", barmode="overlay",
                      xaxis_title="draft position in the block (minimum budgets)", template="plotly_white",
                      yaxis=dict(autorange="reversed"), height=120 + 60 * len({r['reviewer'] for r in rows}))
    return fig


def coverage_from_events(events, depth: int = 0, max_pos: int | None = None) -> dict[str, list[int]]:
    """How often each immediate proposer filled each position of the reviews at ``depth``.

    Returns ``{proposer: counts}`` with ``counts[i]`` = reviews whose position ``i``
    (0-based in the reviewed block) came from that proposer.
    """
    longest = max((len(e.proposers) for e in events if e.depth == depth), default=0)
    n = longest if max_pos is None else min(longest, max_pos)
    out: dict[str, list[int]] = {}
    for e in events:
        if e.depth != depth:
            continue
        for i, who in enumerate(e.proposers[:n]):
            out.setdefault(who, [0] * n)[i] += 1
    return out


def coverage_figure(events, depth: int = 0, max_pos: int | None = 30, title: str | None = None):
    """Stacked bars: share of each proposer at every position of the reviewed blocks."""
    import plotly.graph_objects as go
    cov = coverage_from_events(events, depth, max_pos)
    n = max((len(v) for v in cov.values()), default=0)
    tot = [sum(cov[w][i] for w in cov) for i in range(n)]
    order = [w for w in ("base", "small", "mag") if w in cov] + [w for w in cov if w not in ("base", "small", "mag")]
    fig = go.Figure()
    for w in order:
        fig.add_bar(x=list(range(1, n + 1)), y=[c / t if t else 0 for c, t in zip(cov[w], tot)], name=w,
                    marker_color=proposer_color(w), customdata=cov[w],
                    hovertemplate=f"{w}: %{{customdata}} blocks<extra></extra>")
    reviewer = next((e.reviewer for e in events if e.depth == depth), "?")
    fig.add_scatter(x=list(range(1, n + 1)), y=[t / max(tot) if tot else 0 for t in tot], mode="lines",
                    line=dict(color="black", dash="dot"), name="blocks this long (share)")
    fig.update_layout(title=title or f"who drafted each position of the blocks {reviewer} reviewed",
                      barmode="stack", xaxis_title="position in the reviewed block",
                      yaxis_title="share of blocks", template="plotly_white")
    return fig


def grid_heatmap(rows: list[dict], value: str, x: str = "k12", y: str = "k11", facet: str = "lenience",
                 title: str | None = None, zmid: float | None = 1.0):
    """One heatmap of ``value`` over (x, y) per distinct ``facet``; cells are annotated."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    facets = sorted({r[facet] for r in rows})
    xs = sorted({r[x] for r in rows})
    ys = sorted({r[y] for r in rows})
    vals = [r[value] for r in rows]
    lo, hi = min(vals), max(vals)
    fig = make_subplots(rows=1, cols=len(facets), subplot_titles=[f"{facet} = {f:g}" for f in facets],
                        shared_yaxes=True, horizontal_spacing=0.04)
    for c, f in enumerate(facets, start=1):
        cell = {(r[x], r[y]): r[value] for r in rows if r[facet] == f}
        z = [[cell.get((xv, yv)) for xv in xs] for yv in ys]
        fig.add_trace(go.Heatmap(z=z, x=[str(v) for v in xs], y=[str(v) for v in ys], coloraxis="coloraxis",
                                 texttemplate="%{z:.2f}", hovertemplate=f"{x}=%{{x}} {y}=%{{y}}: %{{z:.3f}}<extra></extra>"),
                      row=1, col=c)
        fig.update_xaxes(title_text=x, row=1, col=c)
    fig.update_yaxes(title_text=y, row=1, col=1)
    if zmid is not None and lo < zmid < hi:  # diverging around zmid (red: slower than AR)
        cax = dict(colorscale="RdBu", cmid=zmid, colorbar=dict(title=value))
    else:
        cax = dict(colorscale="Blues", cmin=lo, cmax=hi, colorbar=dict(title=value))
    fig.update_layout(title=title or value, coloraxis=cax, template="plotly_white",
                      height=340, width=max(420, 300 * len(facets)))
    return fig
