"""Figures and trace views. One colour per cascade level, everywhere."""
from __future__ import annotations

from .mag import BIGRAM, MATCH
from .trace import TARGET_BONUS, TARGET_CORRECTION, Generation

# Who proposed a token -> colour. Drafter roles of every family map onto these names.
LEVEL_COLORS = {
    MATCH: "#2ca02c",            # MaG, copied from a match
    BIGRAM: "#98df8a",           # MaG, bigram fill
    "small": "#17becf",
    "base": "#1f77b4",
    TARGET_CORRECTION: "#d62728",
    TARGET_BONUS: "#ff7f0e",
}
LEVEL_ORDER = [MATCH, BIGRAM, "small", "base", TARGET_CORRECTION, TARGET_BONUS]
_ANSI = {MATCH: "42;30", BIGRAM: "102;30", "small": "46;30", "base": "44;97",
         TARGET_CORRECTION: "41;97", TARGET_BONUS: "43;30"}


def level_color(name: str) -> str:
    """The colour of a provenance label (unknown drafters get grey)."""
    return LEVEL_COLORS.get(name, "#7f7f7f")


def token_pieces(g: Generation, tokenizer) -> list[str]:
    """The text of every output token, so that their concatenation is the decoded text."""
    pieces, prev = [], ""
    for i in range(len(g.token_ids)):
        cur = tokenizer.decode(g.token_ids[:i + 1], skip_special_tokens=True)
        pieces.append(cur[len(prev):] if cur.startswith(prev) else tokenizer.decode([g.token_ids[i]]))
        prev = cur
    return pieces


def trace_text(g: Generation, tokenizer, color: bool = True) -> str:
    """The output with every token coloured (ANSI) by the level that proposed it, plus a legend."""
    pieces = token_pieces(g, tokenizer)
    if color:
        body = "".join(f"\x1b[{_ANSI.get(p, '47;30')}m{t}\x1b[0m" for t, p in zip(pieces, g.provenance))
        legend = "  ".join(f"\x1b[{_ANSI[k]}m {k} \x1b[0m" for k in LEVEL_ORDER)
    else:
        body = "".join(f"[{t}|{p}]" for t, p in zip(pieces, g.provenance))
        legend = ", ".join(LEVEL_ORDER)
    return f"{body}\nlegend: {legend}"


def bench_figure(summary: dict, title: str = "speedup over AR"):
    """Grouped bars: walltime and SWI speedups per method (plotly Figure)."""
    import plotly.graph_objects as go
    methods = [m for m in summary if m != "ar"]
    fig = go.Figure()
    for key, label in (("speedup_walltime", "walltime (measured)"), ("speedup_swi_ms", "SWI model-size"),
                       ("speedup_swi_pw", "SWI previous-work")):
        fig.add_bar(name=label, x=methods, y=[summary[m].get(key) for m in methods])
    fig.add_hline(y=1.0, line_dash="dot", annotation_text="AR")
    fig.update_layout(title=title, barmode="group", yaxis_title="speedup over AR (x)", template="plotly_white")
    return fig


# -- notebooks 04-07: coverage, grids, EWIF, benchmarks, sampling ----------------------
# (appended by the 04-07 notebooks; every function returns a plotly Figure or plain data)

_PROPOSER_ALIAS = {"mag": MATCH, "target": TARGET_CORRECTION}


def proposer_color(name: str) -> str:
    """Colour of an immediate proposer key of ``Event.proposers`` ('base', 'small', 'mag')."""
    return level_color(_PROPOSER_ALIAS.get(name, name))


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


def ewif_k_figure(settings: list[tuple[float, float]], k_max: int = 20, title: str | None = None):
    """EWIF of speculative decoding (Cor 4.2) against k, one line per (alpha, c), best k marked."""
    import plotly.graph_objects as go
    from .ewif import best_k_sd, ewif_sd
    fig = go.Figure()
    ks = list(range(1, k_max + 1))
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
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
    import plotly.graph_objects as go
    fig = go.Figure()
    for name, y in series.items():
        fig.add_scatter(x=list(x), y=list(y), mode="lines+markers", name=name,
                        line=dict(color=(colors or {}).get(name), dash=(dash or {}).get(name)))
    fig.update_layout(title=title, xaxis_title=xlabel, yaxis_title=ylabel, template="plotly_white")
    return fig


def table1_figure(rows_by_model: dict[str, list[dict]], title: str = "Table 1: horizontal cascade EWIF"):
    """Grouped bars: the paper's Table 1 numbers beside EWIF computed under each cost model."""
    import plotly.graph_objects as go
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


def parity_figure(points: list[dict], x: str, y: str, label: str = "label", xlabel: str | None = None,
                  ylabel: str | None = None, title: str = "", color: str | None = None):
    """Scatter of ``y`` against ``x`` with the line y = x (theory vs measured, SWI vs walltime)."""
    import plotly.graph_objects as go
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


def sampling_figure(exact, empirical: dict[str, "list[float]"], n_tokens: int, vocab: int, top: int = 24,
                    title: str = "first tokens: exact target law vs samples"):
    """Bars of the most likely joint outcomes: the exact law beside empirical laws (with TV)."""
    import numpy as np
    import plotly.graph_objects as go
    p = np.asarray(exact, dtype=float)
    idx = np.argsort(-p)[:top]
    names = ["-".join(map(str, np.unravel_index(int(i), (vocab,) * n_tokens))) for i in idx]
    fig = go.Figure()
    fig.add_bar(x=names, y=p[idx], name="exact (target)", marker_color=LEVEL_COLORS[TARGET_CORRECTION])
    palette = ["#1f77b4", "#9467bd", "#8c564b", "#e377c2"]
    for c, (name, e) in enumerate(empirical.items()):
        e = np.asarray(e, dtype=float)
        tv = 0.5 * np.abs(e - p).sum()
        fig.add_bar(x=names, y=e[idx], name=f"{name} (TV {tv:.3f})", marker_color=palette[c % len(palette)])
    fig.update_layout(title=title, barmode="group", xaxis_title="first tokens (ids)",
                      yaxis_title="probability", template="plotly_white")
    return fig


# -- trace views and figures for notebooks 00-03 -----------------------------------------
# A token's colour is the level that proposed it (LEVEL_COLORS). The replay of the target's
# reviews adds two marks: a struck, faded box for a drafted token the target rejected, and a
# thick black border for the token the target appended (correction or bonus).

def model_color(name: str) -> str:
    """The colour of a model (cascade role) in bar charts: the target red, MaG green."""
    return proposer_color(name)


def _text_color(hex_color: str) -> str:
    """Black or white, whichever reads better on ``hex_color``."""
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "#ffffff"


def _pieces(tokenizer, ids: list[int]) -> list[str]:
    """Text of each token of ``ids`` decoded in context (concatenation = decoded text)."""
    pieces, prev = [], ""
    for i in range(len(ids)):
        cur = tokenizer.decode(ids[:i + 1], skip_special_tokens=True)
        pieces.append(cur[len(prev):] if cur.startswith(prev) else tokenizer.decode([ids[i]]))
        prev = cur
    return pieces


def _label(tokenizer, tok: int, piece: str) -> str:
    """A visible label for a token box: special tokens by name, newlines as a symbol."""
    if piece == "":
        try:
            piece = tokenizer.convert_ids_to_tokens(int(tok))
        except (AttributeError, TypeError, ValueError):
            piece = f"<{tok}>"
        piece = str(piece)
    return piece.replace("\n", "\u23ce")


def _esc(text: str) -> str:
    """Escape a token for plotly's HTML-like text (``</s>`` would vanish as a tag)."""
    import html
    return html.escape(text, quote=False)


def token_origins(g: Generation) -> list[dict]:
    """For every output token: the target review that committed it and how.

    Returns one dict per token with ``step`` (index among the target's reviews),
    ``reviewer``, ``how`` ("accepted" draft or "appended" by the reviewer), ``prob`` (the
    accept probability min(1, l p/q) of an accepted draft, else None) and ``replaced``
    (for an appended correction: the accept probability of the draft token it replaced).
    """
    out: list[dict] = [{"step": None, "reviewer": None, "how": "?", "prob": None, "replaced": None}
                       for _ in g.token_ids]
    top = [e for e in g.events if e.depth == 0]
    for s, e in enumerate(top):
        for j in range(e.n_accepted):
            if e.start + j < len(out):
                out[e.start + j] = {"step": s, "reviewer": e.reviewer, "how": "accepted",
                                    "prob": e.accept_prob[j], "replaced": None}
        pos = e.start + e.n_accepted
        if pos < len(out) and g.token_ids[pos] == e.next_token:
            rep = e.accept_prob[e.n_accepted] if e.n_accepted < len(e.tokens) else None
            out[pos] = {"step": s, "reviewer": e.reviewer, "how": "appended", "prob": None, "replaced": rep}
    return out


def _hover(i: int, label: str, level: str, o: dict) -> str:
    txt = f"#{i} {_esc(repr(label))}<br>proposed by: {level}"
    if o["step"] is not None:
        txt += f"<br>review step {o['step']} by {o['reviewer']}"
    if o["how"] == "accepted":
        txt += f"<br>accepted, accept prob {o['prob']:.2f}"
    elif o["how"] == "appended":
        txt += "<br>appended by the reviewer"
        if o["replaced"] is not None:
            txt += f" (the draft here had accept prob {o['replaced']:.2f})"
    return txt


def _wrap(labels: list[str], width: float) -> tuple[list[float], list[float], list[int]]:
    """Lay token boxes out like text: (x0, box width, row) per token, wrapping at ``width``."""
    x0s, ws, rows = [], [], []
    x, row = 0.0, 0
    for lab in labels:
        w = max(len(lab), 1) * 1.0 + 0.8
        if x > 0 and x + w > width:
            x, row = 0.0, row + 1
        x0s.append(x)
        ws.append(w)
        rows.append(row)
        x += w + 0.2
        if lab.endswith("\u23ce"):
            x, row = 0.0, row + 1
    return x0s, ws, rows


def _boxes(name, x0, w, rows, labels, colors, hover, visible=True, showlegend=False, opacity=1.0,
           line_color=None, line_width=0.0, pattern=None, strike=False, legendgroup=None):
    import plotly.graph_objects as go
    text = [f"<s>{_esc(t)}</s>" if strike else _esc(t) for t in labels]
    marker = dict(color=colors, line=dict(color=line_color or "rgba(0,0,0,0)", width=line_width))
    if pattern:
        marker["pattern"] = dict(shape=pattern, fgcolor="#555555", size=6, solidity=0.2)
    return go.Bar(name=name, orientation="h", base=x0, x=w, y=rows, text=text, width=0.78,
                  marker=marker, opacity=opacity, hovertext=hover, hoverinfo="text",
                  textposition="inside", insidetextanchor="middle", constraintext="none",
                  textangle=0, textfont=dict(color=[_text_color(c) for c in colors], family="monospace"),
                  visible=visible, showlegend=showlegend, legendgroup=legendgroup, cliponaxis=False)


def trace_figure(g: Generation, tokenizer, width: int = 110, max_steps: int = 60, title: str | None = None):
    """The output as coloured token boxes, plus a slider that replays the target's reviews.

    Slider position "all" shows the whole output coloured by the level that proposed each
    token. Position s shows review s of the target: the tokens committed before it (solid),
    the block drafted for it (accepted tokens outlined, rejected ones faded and struck),
    and the token the target appended (thick black border). Plain plotly (no custom JS).

    Args:
        width: characters per row before wrapping.
        max_steps: replay at most this many reviews (the first ones).
    """
    import plotly.graph_objects as go
    ids = list(g.token_ids)
    labels = [_label(tokenizer, t, p) for t, p in zip(ids, _pieces(tokenizer, ids))]
    origins = token_origins(g)
    fig = go.Figure()
    # legend: one entry per level, always visible, drawing nothing
    present = [lv for lv in LEVEL_ORDER if lv in set(g.provenance)] + \
        sorted(set(g.provenance) - set(LEVEL_ORDER))
    for lv in present:
        fig.add_trace(go.Bar(name=lv, x=[None], y=[None], orientation="h", marker_color=level_color(lv),
                             showlegend=True, hoverinfo="skip"))
    fig.add_trace(go.Bar(name="rejected draft (replay)", x=[None], y=[None], orientation="h", opacity=0.35,
                         marker=dict(color="#7f7f7f", pattern=dict(shape="x")), hoverinfo="skip"))
    fig.add_trace(go.Bar(name="appended by the target (replay)", x=[None], y=[None], orientation="h",
                         marker=dict(color="#ffffff", line=dict(color="#000000", width=3)), hoverinfo="skip"))
    n_legend = len(fig.data)
    # view "all": the final output
    x0, w, rows = _wrap(labels, width)
    colors = [level_color(p) for p in g.provenance]
    hover = [_hover(i, lab, p, o) for i, (lab, p, o) in enumerate(zip(labels, g.provenance, origins))]
    fig.add_trace(_boxes("output", x0, w, rows, labels, colors, hover))
    n_rows_max = (max(rows) + 1) if rows else 1
    groups = [[n_legend]]  # trace indices shown at each slider position
    titles = [title or f"{g.method}: {len(ids)} tokens, {g.stats.calls.get(g.stats.target, 0)} target calls "
              f"({g.stats.tokens_per_target_call:.2f} tokens/call)"]
    top = [e for e in g.events if e.depth == 0]
    shown = top[:max_steps]
    for s, e in enumerate(shown):
        committed = ids[:e.start]
        seq = committed + list(e.tokens)
        appended = e.start + e.n_accepted < len(ids) and ids[e.start + e.n_accepted] == e.next_token
        if appended:
            seq = seq + [e.next_token]
        labs = [_label(tokenizer, t, p) for t, p in zip(seq, _pieces(tokenizer, seq))]
        if appended and len(e.tokens) > e.n_accepted:
            # the appended token sits after the rejected ones; decode it in its true context
            labs[-1] = _label(tokenizer, e.next_token,
                              _pieces(tokenizer, committed + list(e.tokens[:e.n_accepted]) + [e.next_token])[-1])
        sx0, sw, srows = _wrap(labs, width)
        n_rows_max = max(n_rows_max, (max(srows) + 1) if srows else 1)
        c, m = len(committed), len(e.tokens)
        idx = []

        def sl(a, b):
            return sx0[a:b], sw[a:b], srows[a:b], labs[a:b]

        if c:
            prov = g.provenance[:c]
            hv = [_hover(i, labs[i], prov[i], origins[i]) for i in range(c)]
            fig.add_trace(_boxes(f"step {s}: committed", *sl(0, c), [level_color(p) for p in prov], hv,
                                 visible=False))
            idx.append(len(fig.data) - 1)
        a = e.n_accepted
        if a:
            prov = e.provenance[:a]
            hv = [f"drafted by {prov[j]}<br>accepted by {e.reviewer}, accept prob {e.accept_prob[j]:.2f}"
                  for j in range(a)]
            fig.add_trace(_boxes(f"step {s}: accepted", *sl(c, c + a), [level_color(p) for p in prov], hv,
                                 visible=False, line_color="#222222", line_width=1.5))
            idx.append(len(fig.data) - 1)
        if m > a:
            prov = e.provenance[a:]
            hv = [f"drafted by {prov[j - a]}<br>rejected by {e.reviewer}" +
                  (f", accept prob {e.accept_prob[j]:.2f}" if j == a else " (after the first rejection)")
                  for j in range(a, m)]
            fig.add_trace(_boxes(f"step {s}: rejected", *sl(c + a, c + m), [level_color(p) for p in prov], hv,
                                 visible=False, opacity=0.35, pattern="x", strike=True))
            idx.append(len(fig.data) - 1)
        if appended:
            lv = TARGET_BONUS if e.bonus else TARGET_CORRECTION
            fig.add_trace(_boxes(f"step {s}: appended", *sl(c + m, c + m + 1), [level_color(lv)],
                                 [f"appended by {e.reviewer} ({'bonus' if e.bonus else 'correction'})"],
                                 visible=False, line_color="#000000", line_width=3.5))
            idx.append(len(fig.data) - 1)
        groups.append(idx)
        kind = "bonus" if e.bonus else "correction"
        titles.append(f"review {s + 1}/{len(top)} by {e.reviewer}: {m} drafted, {a} accepted"
                      + (f", +1 {kind}" if appended else ""))
    n = len(fig.data)
    steps = []
    for pos, (grp, ttl) in enumerate(zip(groups, titles)):
        vis = [True] * n_legend + [False] * (n - n_legend)
        for i in grp:
            vis[i] = True
        steps.append(dict(method="update", label="all" if pos == 0 else str(pos),
                          args=[{"visible": vis}, {"title.text": ttl}]))
    more = f" (first {len(shown)} of {len(top)})" if len(shown) < len(top) else ""
    fig.update_layout(
        title=dict(text=titles[0], font=dict(size=14)), barmode="overlay", template="plotly_white",
        height=140 + 30 * n_rows_max, margin=dict(l=10, r=10, t=50, b=10),
        xaxis=dict(visible=False, range=[-0.5, width + 1]),
        yaxis=dict(visible=False, range=[n_rows_max - 0.5, -0.5]),
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1.0, xanchor="right"),
        uniformtext=dict(minsize=8, mode="show"),
        sliders=[dict(active=0, steps=steps, pad=dict(t=10), x=0, len=1.0,
                      currentvalue=dict(prefix=f"target review{more}: "))])
    return fig


def trace_html(g: Generation, tokenizer, title: str | None = None) -> str:
    """The output as coloured ``<span class="csd-tok">`` tokens with hover titles and a legend."""
    import html
    ids = list(g.token_ids)
    pieces = _pieces(tokenizer, ids)
    origins = token_origins(g)
    spans = []
    for i, (t, p, lv, o) in enumerate(zip(ids, pieces, g.provenance, origins)):
        text = p if p else _label(tokenizer, t, p)
        tip = html.unescape(_hover(i, text, lv, o).replace("<br>", "\n"))
        col = level_color(lv)
        spans.append(f'<span class="csd-tok" data-level="{html.escape(lv)}" data-step="{o["step"]}" '
                     f'title="{html.escape(tip)}" style="background-color:{col};color:{_text_color(col)};'
                     f'border-radius:3px;padding:1px 0;margin:0 1px">{html.escape(text)}</span>')
    present = [lv for lv in LEVEL_ORDER if lv in set(g.provenance)] + sorted(set(g.provenance) - set(LEVEL_ORDER))
    legend = " ".join(f'<span class="csd-legend-item" data-level="{html.escape(lv)}" style="background-color:'
                      f'{level_color(lv)};color:{_text_color(level_color(lv))};border-radius:3px;padding:1px 6px">'
                      f'{html.escape(lv)}</span>' for lv in present)
    head = html.escape(title) if title else (
        f"{html.escape(g.method)}: {len(ids)} tokens, {g.stats.calls.get(g.stats.target, 0)} target calls "
        f"({g.stats.tokens_per_target_call:.2f} tokens per target call)")
    return (f'<div class="csd-trace" data-method="{html.escape(g.method)}" data-n-tokens="{len(ids)}" '
            f'style="font-family:sans-serif">'
            f'<div class="csd-trace-title" style="font-size:0.9em;color:#444;margin-bottom:4px">{head}</div>'
            f'<div class="csd-trace-tokens" style="font-family:monospace;white-space:pre-wrap;line-height:1.9;'
            f'color:#000">{"".join(spans)}</div>'
            f'<div class="csd-legend" style="margin-top:6px;font-size:0.85em">{legend}</div></div>')


def save_trace_html(g: Generation, tokenizer, path, title: str | None = None) -> None:
    """Write ``trace_html`` as a standalone HTML page (atomic: temp file, then rename)."""
    import html
    import os
    from pathlib import Path
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    page = (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title or "CS Drafting trace")}'
            f'</title></head><body style="max-width:60em;margin:1em auto">\n'
            f'<div id="csd-trace">{trace_html(g, tokenizer, title)}</div>\n</body></html>\n')
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, path)


def stats_html(g: Generation, ar: Generation | None = None) -> str:
    """A small HTML table of one generation's stats (class ``csd-stats-table``)."""
    import html
    st = g.stats
    rows = [("tokens", st.n_tokens), ("tokens per target call", f"{st.tokens_per_target_call:.2f}"),
            ("forward calls", ", ".join(f"{k} {v}" for k, v in st.calls.items())),
            ("wall time", f"{st.wall_time * 1000:.0f} ms"),
            ("SWI, model size", f"{st.swi_model_size:.2f}x"),
            ("SWI, previous work", f"{st.swi_previous_work:.2f}x")]
    if ar is not None:
        if g.config.get("temperature", 0.0) == 0.0:
            same = g.token_ids == ar.token_ids
            rows.append(("identical to AR (greedy)", "yes" if same else "NO"))
            rows.append(("walltime speedup over AR", f"{ar.stats.wall_time / st.wall_time:.2f}x"
                         if st.wall_time > 0 else "-"))
        else:
            rows.append(("identical to AR", "n/a (sampling: same distribution, not same tokens)"))
    body = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(str(k))}</th>"
                   f"<td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f'<table class="csd-stats-table" style="font-size:0.9em">{body}</table>'


def acceptance_figure(curves: dict, conditional: bool = True, fit: bool = True, paper: bool = True,
                      title: str = "acceptance by draft position"):
    """Per-position acceptance curves (paper Fig. 2) with geometric fits alpha**i.

    Args:
        curves: ``{"small->target": curve}`` with ``unconditional`` / ``conditional`` /
            ``alpha`` as returned by :func:`csd_lib.acceptance.acceptance_curve`.
        paper: mark the paper's range (0.7-0.8 at position 1, <= 0.1 at position 30).
    """
    import plotly.graph_objects as go
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
    from .trace import PairStats
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
    import plotly.graph_objects as go
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
    import plotly.graph_objects as go
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


def mag_hits_figure(rows: list[dict], title: str = "Max-Gram on reference solutions"):
    """Bars per MaG variant: share of calls whose first token is right, mean tokens accepted per call.

    Args:
        rows: dicts with ``variant``, ``hit_rate``, ``mean_accepted`` and optionally
            ``color``; variants get neutral colours, never a level's colour.
    """
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=1, cols=2, subplot_titles=("first token right (hit rate)",
                                                       "tokens accepted per call (greedy)"))
    cols = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#393b79"]  # no level colours
    for i, r in enumerate(rows):
        c = r.get("color") or cols[i % len(cols)]
        fig.add_bar(x=[r["variant"]], y=[r["hit_rate"]], marker_color=c, name=r["variant"], showlegend=False,
                    text=[f"{r['hit_rate']:.2f}"], textposition="outside", row=1, col=1)
        fig.add_bar(x=[r["variant"]], y=[r["mean_accepted"]], marker_color=c, name=r["variant"],
                    showlegend=False, text=[f"{r['mean_accepted']:.2f}"], textposition="outside", row=1, col=2)
    fig.update_layout(title=title, template="plotly_white", height=380)
    fig.update_yaxes(rangemode="tozero")
    return fig


def match_length_figure(lengths: dict, title: str = "length of the longest suffix match"):
    """Histogram bars of MaG match lengths (0 = no match, bigram fill) per labelled source."""
    import plotly.graph_objects as go
    fig = go.Figure()
    cols = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]  # sources, not levels
    for i, (lab, ls) in enumerate(lengths.items()):
        top = min(max(ls) if ls else 0, 20)
        counts = [sum(1 for x in ls if min(x, 20) == v) / max(1, len(ls)) for v in range(top + 1)]
        fig.add_bar(x=[str(v) if v < 20 else "20+" for v in range(top + 1)], y=counts, name=lab,
                    marker_color=cols[i % len(cols)])
    fig.update_layout(title=title, barmode="group", template="plotly_white", xaxis_title="match length (tokens)",
                      yaxis_title="share of positions")
    return fig


def cor44_figure(alpha: float, alpha_prime: float, c_d1: float, k: int, n_max: int = 12,
                 title: str | None = None):
    """EWIF of the vertical cascade (Thm 4.3, free bottom model) vs plain SD with step n (Cor 4.4)."""
    import plotly.graph_objects as go
    from .ewif import ewif_sd, ewif_vc
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


def setup_notebook(family: str | None = None) -> None:
    """Notebook defaults: the plotly renderer named by CSD_PLOTLY_RENDERER, no progress bars.

    For the embedded tiny families one torch thread is used: per-call overhead dominates
    their forward passes, and more threads only add contention on a shared CPU.
    """
    from . import config
    if family is not None and family.startswith("tiny"):
        import torch
        torch.set_num_threads(1)
    if config.PLOTLY_RENDERER:
        import plotly.io as pio
        pio.renderers.default = config.PLOTLY_RENDERER
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()


def mag_step_html(tokenizer, prompt_ids: list[int], gen_ids: list[int], mag, truth: list[int] | None = None) -> str:
    """One MaG call as HTML: the matched suffix, where it occurred, and what MaG proposes.

    Yellow: the longest suffix of the sequence and its earlier occurrence; underlined: the
    tokens that followed that occurrence (what MaG copies). The proposal is coloured by
    source (mag-match / mag-bigram) and, with ``truth``, checked token by token.
    """
    import html
    import numpy as np
    from .mag import longest_suffix_match
    prompt_ids, gen_ids = list(prompt_ids), list(gen_ids)
    hay = prompt_ids + gen_ids
    end, length = longest_suffix_match(np.asarray(hay, dtype=np.int64), mag.rule, mag.max_match)
    prop = mag.propose(np.asarray(hay, dtype=np.int64))
    src = set(range(end - length, end)) if length else set()
    suffix = set(range(len(hay) - length, len(hay))) if length else set()
    copied = set(range(end, min(end + len(prop.tokens), len(hay)))) if length else set()

    def row(ids, offset):
        spans = []
        for i, (t, p) in enumerate(zip(ids, _pieces(tokenizer, ids))):
            k = offset + i
            style = ""
            if k in src or k in suffix:
                style += "background-color:#ffe066;"
            if k in copied:
                style += f"text-decoration:underline 3px {LEVEL_COLORS[MATCH]};"
            cls = "csd-mag-src" if k in src else ("csd-mag-suffix" if k in suffix else "")
            spans.append(f'<span class="{cls}" style="{style}">{html.escape(p or _label(tokenizer, t, p))}</span>')
        return "".join(spans)

    props = []
    prop_pieces = _pieces(tokenizer, hay + list(prop.tokens))[len(hay):]
    for j, (t, lv) in enumerate(zip(prop.tokens, prop.provenance)):
        piece = _label(tokenizer, t, prop_pieces[j])
        mark = ""
        if truth is not None:
            ok = j < len(truth) and all(prop.tokens[i] == truth[i] for i in range(j + 1))
            mark = " \u2713" if ok else " \u2717"
        col = level_color(lv)
        props.append(f'<span class="csd-tok" data-level="{lv}" title="{lv}" style="background-color:{col};'
                     f'color:{_text_color(col)};border-radius:3px;padding:1px 3px;margin:0 1px">'
                     f'{html.escape(piece)}{mark}</span>')
    where = ("no earlier occurrence of the last token: bigram fill only" if not length else
             f"longest suffix match: {length} token{'s' if length > 1 else ''}, found in the "
             f"{'prompt' if end - length < len(prompt_ids) else 'generated text'} "
             f"(rule '{mag.rule}')")
    box = "font-family:monospace;white-space:pre-wrap;border:1px solid #ddd;padding:4px;margin:2px 0"
    return (f'<div class="csd-mag-step" style="font-family:sans-serif">'
            f'<div><b>prompt</b></div><div style="{box}">{row(prompt_ids, 0)}</div>'
            f'<div><b>generated so far</b></div><div style="{box}">{row(gen_ids, len(prompt_ids))}</div>'
            f'<div style="margin:4px 0"><i>{html.escape(where)}</i></div>'
            f'<div><b>MaG proposes</b> ({len(prop.tokens)} tokens)</div>'
            f'<div style="font-family:monospace;white-space:pre-wrap">{"".join(props)}</div></div>')
