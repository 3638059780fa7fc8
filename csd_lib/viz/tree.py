"""A token tree reviewed in one call: the nodes coloured by who drafted them, the accepted path
marked, and the tree attention mask as a small heatmap.

Both figures take plain lists, so they draw any tree: ``parents[i]`` is node ``i``'s parent
(``-1``: the last committed token, drawn as the root), ``proposers[i]`` the level that drafted it
(a name of :data:`csd_lib.viz.palette.LEVEL_ORDER` or a drafter's role), ``accepted`` the nodes on
the path the reviewer kept. Nodes come in the order the reviewer fed them (a parent before its
children).
"""
from __future__ import annotations

import plotly.graph_objects as go

from ..engine.tree import check_parents
from .palette import SEQUENTIAL_SCALE, level_color


def _depths(labels, parents) -> list[int]:
    """Node depths (:func:`csd_lib.engine.tree.check_parents`), one label per node checked."""
    if len(labels) != len(parents):
        raise ValueError(f"{len(labels)} labels for {len(parents)} nodes: give one label per node")
    return check_parents(list(parents))


def _layout(parents) -> list[float]:
    """A y per node: leaves spread one apart in feeding order, a parent at its children's mean."""
    kids: dict[int, list[int]] = {}
    for i, p in enumerate(parents):
        kids.setdefault(p, []).append(i)
    y: dict[int, float] = {}
    nxt = [0.0]

    def place(i: int) -> float:
        ch = kids.get(i, [])
        if not ch:
            y[i] = nxt[0]
            nxt[0] += 1
        else:
            y[i] = sum(place(c) for c in ch) / len(ch)
        return y[i]

    place(-1)
    return [y[i] for i in range(len(parents))] + [y[-1]]


def token_tree_figure(labels, parents, proposers, accepted, root_label: str = "context",
                      title: str = "One tree review") -> go.Figure:
    """The tree left to right by depth; each node a marker in its drafter's colour with its token,
    the accepted path drawn thick and its nodes outlined."""
    depth = _depths(labels, parents)
    if len(proposers) != len(labels):
        raise ValueError(f"{len(proposers)} proposers for {len(labels)} nodes")
    kept = set(accepted)
    if any(not 0 <= a < len(labels) for a in kept):
        raise ValueError(f"accepted nodes {sorted(kept)} are not all nodes of the tree")
    ys, xs = _layout(parents), depth + [0]
    fig = go.Figure()
    for i, p in enumerate(parents):
        on = i in kept
        fig.add_trace(go.Scatter(x=[xs[p], xs[i]], y=[ys[p], ys[i]], mode="lines", hoverinfo="skip",
                                 showlegend=False, line={"color": "#000000" if on else "#999999",
                                                         "width": 4 if on else 1.5, "dash": "solid" if on else "dot"}))
    for who in dict.fromkeys(proposers):
        idx = [i for i, w in enumerate(proposers) if w == who]
        fig.add_trace(go.Scatter(
            x=[xs[i] for i in idx], y=[ys[i] for i in idx], mode="markers+text", name=f"drafted by {who}",
            text=[labels[i] for i in idx], textposition="top center",
            marker={"size": 18, "color": level_color(who), "symbol": ["circle" if i in kept else "circle-open" for i in idx],
                    "line": {"width": 3, "color": "#000000"}},
            hovertext=[f"node {i} (depth {xs[i]}): {labels[i]!r} by {who}; " + ("accepted" if i in kept else "not kept")
                       for i in idx], hoverinfo="text"))
    fig.add_trace(go.Scatter(x=[0], y=[ys[-1]], mode="markers+text", text=[root_label], textposition="top center",
                             marker={"size": 14, "color": "#ffffff", "symbol": "square", "line": {"width": 2, "color": "#000000"}},
                             name="last committed token", hoverinfo="text", hovertext=[root_label]))
    fig.update_layout(title=title + f": {len(labels)} nodes fed in one call, {len(kept)} accepted (filled, thick path)",
                      xaxis={"title": "depth (draft position)", "dtick": 1}, yaxis={"visible": False},
                      height=260 + 22 * (max(ys) - min(ys)), template="simple_white")
    return fig


def tree_mask_figure(mask, labels, title: str = "Tree attention mask") -> go.Figure:
    """``mask[i][j]`` true when node ``i`` may attend to node ``j`` (its ancestors and itself); every node
    also sees the whole committed context, which the heatmap leaves out."""
    n = len(labels)
    rows = [[1.0 if bool(v) else 0.0 for v in row] for row in mask]
    if len(rows) != n or any(len(r) != n for r in rows):
        raise ValueError(f"the mask must be {n} x {n} for {n} nodes")
    names = [f"{i}: {t}" for i, t in enumerate(labels)]
    fig = go.Figure(go.Heatmap(z=rows, x=names, y=names, colorscale=SEQUENTIAL_SCALE, zmin=0, zmax=1, showscale=False,
                               hovertemplate="node %{y} sees %{x}: %{z}<extra></extra>", xgap=1, ygap=1))
    fig.update_layout(title=title + " (light: may attend; the context columns, all visible, are left out)",
                      xaxis={"title": "key node", "side": "top"}, yaxis={"title": "query node", "autorange": "reversed"},
                      height=220 + 24 * n, width=260 + 30 * n, template="simple_white")
    return fig
