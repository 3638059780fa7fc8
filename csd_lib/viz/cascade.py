"""Cascade figures: Algorithm 1's call tree (notebooks 00, 03, 04), planned and measured coverage of the
reviewed blocks, grids (04)."""
from __future__ import annotations

import numpy as np

from ..engine.lenience import lenience_note, lenience_word, token_lenience
from ..engine.plan import MAG, MAG_LENIENCE, check_lenience, check_mag_lenience, validate_k
from .palette import SEQUENTIAL_SCALE, bar_pattern, level_pattern, model_color, proposer_color, text_color


def planned_coverage(k, drafters: list[str], reviewer: str = "target") -> list[dict]:
    """The draft positions each drafter must at least fill, read from K alone.

    Row ``i`` of K is used when ``drafters[i:]`` draft for the level above; drafter ``j``
    fills positions ``[K[i][i] + ... + K[i][j-1], K[i][i] + ... + K[i][j])`` of that
    reviewer's block (0-based, block-relative). Real blocks overshoot these minimums.
    Returns one dict per segment: reviewer, drafter, start, end.
    """
    K = np.asarray(k, dtype=int)
    n = len(drafters)
    if K.shape != (n, n):
        raise ValueError(f"K must be {n}x{n} for drafters {drafters}; got shape {K.shape}")
    rows = []
    reviewers = [reviewer] + list(drafters[:-1])
    for i in range(n):
        if i > 0 and drafters[i - 1] == MAG:
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
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    rows = planned_coverage(k, drafters, reviewer)
    fig = go.Figure()
    seen = set()
    for r in rows:
        label = f"{r['reviewer']} reviews"
        col = proposer_color(r["drafter"])
        fig.add_bar(y=[label], x=[r["end"] - r["start"]], base=[r["start"]], orientation="h",
                    marker=dict(color=col, line=dict(color="#000000", width=1),
                                pattern=bar_pattern(level_pattern(r["drafter"]), col)), name=r["drafter"],
                    legendgroup=r["drafter"], showlegend=r["drafter"] not in seen,
                    text=[f"{r['drafter']} {r['start'] + 1}-{r['end']}"], textposition="inside",
                    hovertemplate=f"{r['drafter']}: positions {r['start'] + 1}..{r['end']}<extra></extra>")
        seen.add(r["drafter"])
    fig.update_layout(title=title or f"planned draft positions for K = {k}", barmode="overlay",
                      xaxis_title="draft position in the block (minimum budgets)", template="plotly_white",
                      yaxis=dict(autorange="reversed", title="reviewer"), height=120 + 60 * len({r['reviewer'] for r in rows}))
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
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    cov = coverage_from_events(events, depth, max_pos)
    n = max((len(v) for v in cov.values()), default=0)
    tot = [sum(cov[w][i] for w in cov) for i in range(n)]
    order = [w for w in ("base", "small", MAG) if w in cov] + [w for w in cov if w not in ("base", "small", MAG)]
    fig = go.Figure()
    for w in order:
        col = proposer_color(w)
        fig.add_bar(x=list(range(1, n + 1)), y=[c / t if t else 0 for c, t in zip(cov[w], tot)], name=w,
                    marker=dict(color=col, line=dict(color="#000000", width=0.5),
                                pattern=bar_pattern(level_pattern(w), col)), customdata=cov[w],
                    hovertemplate=f"{w}: %{{customdata}} blocks<extra></extra>")
    reviewer = next((e.reviewer for e in events if e.depth == depth), "?")
    fig.add_scatter(x=list(range(1, n + 1)), y=[t / max(tot) if tot else 0 for t in tot], mode="lines",
                    line=dict(color="black", dash="dot"), name="blocks this long (share)")
    who = "the target" if reviewer == "target" else reviewer
    fig.update_layout(title=title or f"who drafted each position of the blocks {who} reviewed",
                      barmode="stack", xaxis_title="position in the reviewed block",
                      yaxis_title="share of blocks", yaxis_tickformat=".0%", template="plotly_white",
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0))
    return fig


def grid_heatmap(rows: list[dict], value: str, x: str = "k12", y: str = "k11", facet: str = "lenience",
                 title: str | None = None, zmid: float | None = 1.0, best: str | None = "max", label: str | None = None):
    """One heatmap of ``value`` over (x, y) per distinct ``facet``; cells are annotated, and the colour bar
    is titled ``label`` (default: ``value``).

    The scale is sequential (cividis: colour-blind-safe, lightness rising with the value, so
    greyscale keeps the order); the best cell over all facets (``best``: 'max', 'min' or None)
    is outlined and starred; with ``zmid`` (e.g. 1.0 = AR) cells below it are marked with a
    downward triangle (a note under the panels says what the marks mean).
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    from plotly.subplots import make_subplots  # plotly: imported when a figure is drawn
    if best not in ("max", "min", None):
        raise ValueError(f"best must be 'max', 'min' or None, got {best!r}")
    facets = sorted({r[facet] for r in rows})
    xs = sorted({r[x] for r in rows})
    ys = sorted({r[y] for r in rows})
    vals = [r[value] for r in rows]
    lo, hi = min(vals), max(vals)
    top = (max if best == "max" else min)(rows, key=lambda r: r[value]) if best else None
    fig = make_subplots(rows=1, cols=len(facets), subplot_titles=[f"{facet} = {f:g}" for f in facets],
                        shared_yaxes=True, horizontal_spacing=0.06)
    for c, f in enumerate(facets, start=1):
        cell = {(r[x], r[y]): r[value] for r in rows if r[facet] == f}
        z = [[cell.get((xv, yv)) for xv in xs] for yv in ys]  # [len(ys)][len(xs)]
        text = [[_cell_text(v, zmid, top is not None and top[facet] == f and (xv, yv) == (top[x], top[y]))
                 for xv, v in zip(xs, zrow)] for yv, zrow in zip(ys, z)]
        fig.add_trace(go.Heatmap(z=z, x=[str(v) for v in xs], y=[str(v) for v in ys], coloraxis="coloraxis",
                                 text=text, texttemplate="%{text}", textfont=dict(size=12),
                                 hovertemplate=f"{x}=%{{x}} {y}=%{{y}}: %{{z:.3f}}<extra></extra>"),
                      row=1, col=c)
        if top is not None and top[facet] == f:  # outline the best cell: white inside black, reads on any shade
            for col, size, width in (("#000000", 50, 4), ("#ffffff", 42, 2)):
                fig.add_trace(go.Scatter(x=[str(top[x])], y=[str(top[y])], mode="markers", showlegend=False,
                                         marker=dict(symbol="square-open", size=size, color=col, line=dict(width=width)),
                                         hoverinfo="skip"), row=1, col=c)
        fig.update_xaxes(title_text=x, type="category", row=1, col=c)
    fig.update_yaxes(title_text=y, type="category", row=1, col=1)
    bar = dict(title=dict(text=label or value, side="right"), tickformat=".2~f")
    notes = [f"\u2605 best ({best} of {value})"] if top is not None else []
    if zmid is not None and lo < zmid:
        notes.append(f"\u25bc below {zmid:g}")
    if notes:
        fig.add_annotation(text="; ".join(notes), xref="paper", yref="paper", x=0, y=-0.02, yanchor="top",
                           xanchor="left", showarrow=False, yshift=-40, font=dict(size=11))
    cell_px = 56
    fig.update_layout(title=title or value, template="plotly_white",
                      coloraxis=dict(colorscale=SEQUENTIAL_SCALE, cmin=lo, cmax=hi, colorbar=bar),
                      height=min(700, 200 + cell_px * len(ys)),
                      width=min(1100, 220 + len(facets) * (cell_px * len(xs) + 40)),
                      margin=dict(b=100))
    return fig


def _cell_text(v, zmid: float | None, is_best: bool) -> str:
    """A heatmap cell's label: the value, a star on the best cell, a triangle below ``zmid``."""
    if v is None:
        return ""
    return ("\u2605 " if is_best else "") + f"{v:.2f}" + (" \u25bc" if zmid is not None and v < zmid else "")


def _tree_args(k, drafters, lenience, target, mag_lenience, plan):
    """(K, drafter names, lenience, target name, mag_lenience) from K and names, a Family or a Plan."""
    if plan is not None:
        if k is not None or drafters is not None or lenience is not None or mag_lenience is not None:
            raise ValueError("pass either plan= (its K, drafters, lenience and mag_lenience are used) or K, "
                             "drafters, lenience and mag_lenience, not both")
        return plan.k, list(plan.drafters), plan.lenience, target, plan.mag_lenience
    mag_lenience = MAG_LENIENCE if mag_lenience is None else check_mag_lenience(mag_lenience)
    if hasattr(k, "default_k") and hasattr(k, "drafters"):
        fam = k
        names = [d.name for d in fam.drafters] + ["mag"]
        if drafters is not None and list(drafters) != names:
            raise ValueError(f"pass either a family or K with drafters, not both (family drafters {names})")
        return (fam.default_k, names, fam.default_lenience if lenience is None else lenience, fam.target.name,
                mag_lenience)
    if k is None or drafters is None:
        raise ValueError("pass the drafter names with K, largest first and 'mag' last, "
                         "e.g. cascade_tree_figure(K, ['base', 'small', 'mag']), or pass a family or plan=")
    return k, list(drafters), 1.0 if lenience is None else lenience, target, mag_lenience


def cascade_tree(k=None, drafters: list[str] | None = None, lenience: float | None = None,
                 target: str = "target", mag_lenience: bool | None = None, plan=None) -> dict:
    """The call tree of Algorithm 1 for K: who drafts for whom, with which budget, under which review.

    The target reviews with row 0 of K; drafter ``i`` reviews the drafters below it with
    row ``i + 1`` (``csd_lib.engine.cascade.build_cascade``). Row ``r`` lets drafter ``j`` draft
    until the block holds at least ``K[r][r] + ... + K[r][j]`` tokens, so a zero entry
    skips that drafter for that reviewer. Reviews by the target are strict; a drafter reviews
    with ``lenience``, MaG's tokens strictly unless ``mag_lenience``
    (:func:`csd_lib.engine.lenience.token_lenience`, the engine's rule).

    Args:
        k: K, or a Family (its default K, drafters + MaG and default lenience).
        drafters: names largest first; MaG (``'mag'``) may only be last.
        mag_lenience: lenience on MaG's tokens too (None: False, the paper's rule).
        plan: a Plan instead of the above (its K, drafters, lenience and mag_lenience).

    Returns:
        ``nodes``: dicts with id, name, level (0 target, i + 1 drafter i), parent (id or
        None), budget (the K entry, None for the target), threshold, skipped (budget 0),
        by_target (the parent is the target), lenience (what the parent's review applies to this
        drafter's tokens; 1 strict) and strict; ``rows``: per reviewer level, the row of K it uses,
        its running thresholds, the lenience per drafter it reviews and ``note`` (in words);
        ``k``, ``drafters``, ``lenience``, ``mag_lenience``, ``target``.
    """
    k, names, lenience, target, mag_lenience = _tree_args(k, drafters, lenience, target, mag_lenience, plan)
    lam = check_lenience(lenience)
    n = len(names)
    if n == 0:
        raise ValueError("the cascade needs at least one drafter (AR has no tree to draw)")
    if MAG in names[:-1]:
        raise ValueError(f"MaG is the bottom of the cascade: 'mag' may only be the last drafter, got {names}")
    K = validate_k(k, n)
    nodes: list[dict] = []

    def add(name, level, parent, budget, threshold, by_target):
        applied = token_lenience(name, lam, mag_lenience, by_target) if parent is not None else 1.0
        nodes.append(dict(id=len(nodes), name=name, level=level, parent=parent, budget=budget,
                          threshold=threshold, skipped=budget == 0, by_target=by_target, lenience=applied,
                          strict=applied == 1))
        return len(nodes) - 1

    def expand(node_id: int, i: int) -> None:
        """Children of reviewer ``i`` (-1 = target): drafters i+1.. with row i+1."""
        if i + 1 >= n or (i >= 0 and names[i] == MAG):
            return
        thr = 0
        for j in range(i + 1, n):
            thr += K[i + 1][j]
            child = add(names[j], j + 1, node_id, K[i + 1][j], thr, i < 0)
            if K[i + 1][j] > 0:
                expand(child, j)

    expand(add(target, 0, None, None, None, True), -1)
    rows = _tree_rows(nodes, K, names, target, lam, mag_lenience)
    return dict(nodes=nodes, rows=rows, k=K, drafters=names, lenience=lam, mag_lenience=mag_lenience, target=target)


def _tree_rows(nodes, K, names, target, lam, mag_lenience) -> list[dict]:
    """Per reviewer level that reviews something: its row of K, running thresholds and lenience per drafter."""
    rows = []
    for r in range(len(names)):
        reviewer = target if r == 0 else names[r - 1]
        if reviewer == MAG or not any(nd["level"] == r and not nd["skipped"] for nd in nodes):
            continue
        thresholds = [sum(K[r][r:j + 1]) for j in range(r, len(names))]
        leniences = {d: token_lenience(d, lam, mag_lenience, r == 0) for d, b in zip(names[r:], K[r][r:]) if b > 0}
        rows.append(dict(row=r, reviewer=reviewer, level=r, budgets=K[r][r:], drafters=names[r:],
                         thresholds=thresholds, lenience=1.0 if r == 0 else lam, leniences=leniences,
                         note=lenience_note(leniences)))
    return rows


STRICT_EDGE = "strict review (l = 1)"  # the legend entry of a strict edge in cascade_tree_figure


def _review_words(node: dict) -> str:
    """How a tree node's tokens are reviewed, for its hover text."""
    if node["by_target"]:
        return "strictly by the target"
    return "strictly" if node["strict"] else f"with lenience {node['lenience']:g}"


# long: a plotting layout (boxes, arrows and labels of the cascade, placed one by one)
def cascade_tree_figure(k=None, drafters: list[str] | None = None, lenience: float | None = None,
                        target: str = "target", title: str | None = None, mag_lenience: bool | None = None,
                        plan=None):
    """A picture of Algorithm 1 (the paper's Fig. 1) for any K: who drafts for whom.

    One row per level, the target on top and MaG at the bottom. Every edge is one
    drafter drafting for the reviewer above it, labelled with its K entry and the block
    length it drafts up to; solid edges are strict reviews (thick: the target's; thin: a drafter's,
    e.g. of MaG's tokens under the paper's rule), dashed ones a drafter's lenient review (the rule of
    :func:`cascade_tree`); grey dotted stubs are zero entries (that drafter is skipped for that
    reviewer). The right margin lists each reviewer's row of K and the lenience it applies.

    ``cascade_tree_figure(fam)`` draws a family's default K, drafters and lenience;
    ``cascade_tree_figure(plan=g.plan)`` a run's K, drafters, lenience and ``mag_lenience``.
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    tree = cascade_tree(k, drafters, lenience, target, mag_lenience, plan)
    nodes = tree["nodes"]
    kids: dict = {}
    for nd in nodes:
        kids.setdefault(nd["parent"], []).append(nd["id"])
    xs: dict[int, float] = {}
    nxt = [0.0]

    def place(i):
        ch = kids.get(i, [])
        for c in ch:
            place(c)
        if ch:
            xs[i] = sum(xs[c] for c in ch) / len(ch)
        else:
            xs[i] = nxt[0]
            nxt[0] += 1.0

    place(0)
    width = max(nxt[0] - 1, 1.0)
    n_levels = len(tree["drafters"]) + 1
    fig = go.Figure()
    seen = set()
    for nd in nodes[1:]:
        par = nodes[nd["parent"]]
        x0, y0, x1, y1 = xs[nd["id"]], nd["level"], xs[par["id"]], par["level"]
        if nd["skipped"]:
            style, key = dict(color="#b0b0b0", dash="dot", width=1), "zero entry: skipped"
        elif nd["strict"]:  # the target's review is drawn thicker
            style, key = dict(color="#000000", dash="solid", width=2.5 if nd["by_target"] else 1.5), STRICT_EDGE
        else:
            key = f"lenient review ({lenience_word(nd['lenience'])})"
            style = dict(color="#000000", dash="dash", width=2)
        fig.add_scatter(x=[x0, x1], y=[y0, y1], mode="lines", line=style, name=key, legendgroup=key,
                        showlegend=key not in seen, hoverinfo="skip")
        seen.add(key)
        row = par["level"]  # the reviewer at level r uses row r of K
        label = (f"K[{row}][{nd['level'] - 1}] = 0" if nd["skipped"] else
                 f"+{nd['budget']} \u2192 block \u2265 {nd['threshold']}")
        fig.add_annotation(x=0.62 * x0 + 0.38 * x1, y=0.62 * y0 + 0.38 * y1, text=label, showarrow=False,
                           font=dict(size=11, color="#888888" if nd["skipped"] else "#000000"),
                           bgcolor="rgba(255,255,255,0.85)")
    for nd in nodes:
        col = model_color(nd["name"]) if nd["level"] else model_color("target")
        if nd["level"] == 0:
            hover = f"{nd['name']}: reviews with row 0 of K, strictly"
        elif nd["skipped"]:
            hover = f"{nd['name']} is skipped here: its K entry is 0"
        else:
            par = nodes[nd["parent"]]
            hover = (f"{nd['name']} drafts for {par['name']} until the block holds >= {nd['threshold']} tokens"
                     f"<br>reviewed {_review_words(nd)}")
        fig.add_scatter(x=[xs[nd["id"]]], y=[nd["level"]], mode="markers+text", text=[nd["name"]],
                        textposition="middle center", showlegend=False, hovertext=[hover], hoverinfo="text",
                        opacity=0.45 if nd["skipped"] else 1.0,
                        marker=dict(size=44 if nd["level"] == 0 else 38, color=col, symbol="square",
                                    line=dict(color="#000000", width=1)),
                        textfont=dict(color=text_color(col), size=11))
    for r in tree["rows"]:
        parts = ", ".join(f"{d} +{b} (\u2265 {t})" for d, b, t in zip(r["drafters"], r["budgets"], r["thresholds"]))
        how = r["note"]
        fig.add_annotation(x=width + 0.6, y=r["level"], xanchor="left", showarrow=False, align="left",
                           text=f"<b>{r['reviewer']}</b> reviews with K[{r['row']}] = {r['budgets']} ({how}):"
                                f"<br>{parts}", font=dict(size=11))
    if tree["drafters"][-1] == MAG:
        fig.add_annotation(x=width + 0.6, y=n_levels - 1, xanchor="left", showarrow=False, align="left",
                           font=dict(size=11), text="<b>mag</b>: Max-Gram, no model, never reviews")
    fig.update_layout(
        title=dict(text=title or f"Algorithm 1 for K = {tree['k']}: who drafts for whom<br><sup>each box drafts "
                   f"for the box above it; siblings draft left to right, each until the block reaches its "
                   f"length; then the parent reviews the block in one pass</sup>", font=dict(size=14)),
        template="plotly_white", height=150 + 95 * n_levels, width=max(640, 260 + 110 * (width + 1) + 330),
        xaxis=dict(visible=False, range=[-0.6, width + 4.2]),
        yaxis=dict(visible=False, range=[n_levels - 0.5, -0.6]),
        legend=dict(orientation="h", y=-0.02, yanchor="top", x=0),
        margin=dict(l=10, r=10, t=70, b=40))
    return fig
