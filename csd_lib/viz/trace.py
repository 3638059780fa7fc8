"""Trace views of one generation (notebooks 00 and 03): token boxes, review replay, HTML, stats.

A token's colour is the level that proposed it (LEVEL_COLORS); in the HTML trace its
underline style names the level too (LEVEL_UNDERLINE), for greyscale prints. The replay of the target's
reviews adds two marks: a struck, faded box for a drafted token the target rejected, and a
thick black border for the token the target appended (correction or bonus)."""
from __future__ import annotations

import html
import os
from pathlib import Path

from ..engine.generation import TARGET_BONUS, TARGET_CORRECTION, Generation
from .palette import ANSI_CODES, LEVEL_ORDER, LEVEL_UNDERLINE, level_color, level_css, level_pattern, text_color


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
        body = "".join(f"\x1b[{ANSI_CODES.get(p, '47;30')}m{t}\x1b[0m" for t, p in zip(pieces, g.provenance))
        legend = "  ".join(f"\x1b[{ANSI_CODES[k]}m {k} \x1b[0m" for k in LEVEL_ORDER)
    else:
        body = "".join(f"[{t}|{p}]" for t, p in zip(pieces, g.provenance))
        legend = ", ".join(LEVEL_ORDER)
    return f"{body}\nlegend: {legend}"


def token_texts(tokenizer, ids: list[int]) -> list[str]:
    """Text of each token of ``ids`` decoded in context (concatenation = decoded text)."""
    pieces, prev = [], ""
    for i in range(len(ids)):
        cur = tokenizer.decode(ids[:i + 1], skip_special_tokens=True)
        pieces.append(cur[len(prev):] if cur.startswith(prev) else tokenizer.decode([ids[i]]))
        prev = cur
    return pieces


def token_label(tokenizer, tok: int, piece: str) -> str:
    """A visible label for a token box: special tokens by name, newlines as a symbol."""
    if piece == "":
        try:
            piece = tokenizer.convert_ids_to_tokens(int(tok))
        except (AttributeError, TypeError, ValueError):
            piece = f"<{tok}>"
        piece = str(piece)
    return piece.replace("\n", "\u23ce")


def esc(text: str) -> str:
    """Escape a token for plotly's HTML-like text (``</s>`` would vanish as a tag)."""
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
    txt = f"#{i} {esc(repr(label))}<br>proposed by: {level}"
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
           line_color=None, line_width=0.0, pattern=None, strike=False, legendgroup=None, levels=None):
    """Token boxes as one horizontal bar trace; ``levels``: each box's level, drawn as a light fill
    pattern (LEVEL_PATTERN) so levels of one grey still differ."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    text = [f"<s>{esc(t)}</s>" if strike else esc(t) for t in labels]
    marker = dict(color=colors, line=dict(color=line_color or "rgba(0,0,0,0)", width=line_width))
    if pattern:
        marker["pattern"] = dict(shape=pattern, fgcolor="#555555", size=6, solidity=0.2)
    elif levels:
        marker["pattern"] = levels_pattern(levels, colors)
    return go.Bar(name=name, orientation="h", base=x0, x=w, y=rows, text=text, width=0.78,
                  marker=marker, opacity=opacity, hovertext=hover, hoverinfo="text",
                  textposition="inside", insidetextanchor="middle", constraintext="none",
                  textangle=0, textfont=dict(color=[text_color(c) for c in colors], family="monospace"),
                  visible=visible, showlegend=showlegend, legendgroup=legendgroup, cliponaxis=False)


def levels_pattern(levels: list[str], colors: list[str], strong: bool = False) -> dict:
    """``marker.pattern`` of boxes of these levels: a light overlay in the box's text colour (token
    boxes), or a strong one (``strong``: the legend's small swatches)."""
    return dict(shape=[level_pattern(lv) for lv in levels], fillmode="overlay",
                fgcolor=[text_color(c) for c in colors], fgopacity=1.0 if strong else 0.45,
                size=5 if strong else 7, solidity=0.35 if strong else 0.15)


def _legend(fig, g: Generation) -> int:
    """One legend entry per level of ``g`` and for the replay's marks, drawing nothing; returns their count."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    present = [lv for lv in LEVEL_ORDER if lv in set(g.provenance)] + \
        sorted(set(g.provenance) - set(LEVEL_ORDER))
    for lv in present:
        col = level_color(lv)
        fig.add_trace(go.Bar(name=lv, x=[None], y=[None], orientation="h", showlegend=True, hoverinfo="skip",
                             marker=dict(color=col, pattern=levels_pattern([lv], [col], strong=True))))
    fig.add_trace(go.Bar(name="rejected draft (replay)", x=[None], y=[None], orientation="h", opacity=0.35,
                         marker=dict(color="#7f7f7f", pattern=dict(shape="x")), hoverinfo="skip"))
    fig.add_trace(go.Bar(name="appended by the target (replay)", x=[None], y=[None], orientation="h",
                         marker=dict(color="#ffffff", line=dict(color="#000000", width=3)), hoverinfo="skip"))
    return len(fig.data)


def _review_traces(fig, g: Generation, e, s: int, tokenizer, width: int, origins) -> tuple[list[int], int, str]:
    """Add the hidden traces of target review ``s`` (event ``e``): committed, accepted, rejected and appended
    boxes. Returns their trace indices, the rows they span and the slider position's title."""
    ids = list(g.token_ids)
    committed = ids[:e.start]
    seq = committed + list(e.tokens)
    appended = e.start + e.n_accepted < len(ids) and ids[e.start + e.n_accepted] == e.next_token
    if appended:
        seq = seq + [e.next_token]
    labs = [token_label(tokenizer, t, p) for t, p in zip(seq, token_texts(tokenizer, seq))]
    if appended and len(e.tokens) > e.n_accepted:
        # the appended token sits after the rejected ones; decode it in its true context
        labs[-1] = token_label(tokenizer, e.next_token,
                               token_texts(tokenizer, committed + list(e.tokens[:e.n_accepted]) + [e.next_token])[-1])
    sx0, sw, srows = _wrap(labs, width)
    c, m, a = len(committed), len(e.tokens), e.n_accepted
    idx = []

    def add(name, lo, hi, prov, hv, **kw):
        fig.add_trace(_boxes(f"step {s}: {name}", sx0[lo:hi], sw[lo:hi], srows[lo:hi], labs[lo:hi],
                             [level_color(p) for p in prov], hv, visible=False, **kw))
        idx.append(len(fig.data) - 1)

    if c:
        prov = g.provenance[:c]
        add("committed", 0, c, prov, [_hover(i, labs[i], prov[i], origins[i]) for i in range(c)], levels=list(prov))
    if a:
        prov = e.provenance[:a]
        add("accepted", c, c + a, prov, [f"drafted by {prov[j]}<br>accepted by {e.reviewer}, accept prob "
                                         f"{e.accept_prob[j]:.2f}" for j in range(a)],
            line_color="#222222", line_width=1.5, levels=list(prov))
    if m > a:
        prov = e.provenance[a:]
        add("rejected", c + a, c + m, prov, [f"drafted by {prov[j - a]}<br>rejected by {e.reviewer}" +
                                             (f", accept prob {e.accept_prob[j]:.2f}" if j == a
                                              else " (after the first rejection)") for j in range(a, m)],
            opacity=0.35, pattern="x", strike=True)
    if appended:
        lv = TARGET_BONUS if e.bonus else TARGET_CORRECTION
        add("appended", c + m, c + m + 1, [lv], [f"appended by {e.reviewer} ({'bonus' if e.bonus else 'correction'})"],
            line_color="#000000", line_width=3.5, levels=[lv])
    n_top = sum(ev.depth == 0 for ev in g.events)
    title = (f"review {s + 1}/{n_top} by {e.reviewer}: {m} drafted, {a} accepted"
             + (f", +1 {'bonus' if e.bonus else 'correction'}" if appended else ""))
    return idx, (max(srows) + 1) if srows else 1, title


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
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    ids = list(g.token_ids)
    labels = [token_label(tokenizer, t, p) for t, p in zip(ids, token_texts(tokenizer, ids))]
    origins = token_origins(g)
    fig = go.Figure()
    n_legend = _legend(fig, g)
    # view "all": the final output
    x0, w, rows = _wrap(labels, width)
    colors = [level_color(p) for p in g.provenance]
    hover = [_hover(i, lab, p, o) for i, (lab, p, o) in enumerate(zip(labels, g.provenance, origins))]
    fig.add_trace(_boxes("output", x0, w, rows, labels, colors, hover, levels=list(g.provenance)))
    n_rows_max = (max(rows) + 1) if rows else 1
    groups = [[n_legend]]  # trace indices shown at each slider position
    titles = [title or _figure_title(g)]
    top = [e for e in g.events if e.depth == 0]
    shown = top[:max_steps]
    for s, e in enumerate(shown):
        idx, n_rows, ttl = _review_traces(fig, g, e, s, tokenizer, width, origins)
        n_rows_max = max(n_rows_max, n_rows)
        groups.append(idx)
        titles.append(ttl)
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


def _figure_title(g: Generation) -> str:
    return (f"{g.method}: {len(g.token_ids)} tokens, {g.stats.calls.get(g.stats.target, 0)} target calls "
            f"({g.stats.tokens_per_target_call:.2f} tokens/call)")


def _html_title(g: Generation) -> str:
    return (f"{g.method}: {len(g.token_ids)} tokens, {g.stats.calls.get(g.stats.target, 0)} target calls "
            f"({g.stats.tokens_per_target_call:.2f} tokens per target call)")


def trace_html(g: Generation, tokenizer, title: str | None = None, row: int | None = None) -> str:
    """The output as coloured ``<span class="csd-tok">`` tokens with hover titles and a legend; ``row``: the
    row of a batch it is (the trace's ``data-row``)."""
    ids = list(g.token_ids)
    pieces = token_texts(tokenizer, ids)
    origins = token_origins(g)
    spans = []
    for i, (t, p, lv, o) in enumerate(zip(ids, pieces, g.provenance, origins)):
        text = p if p else token_label(tokenizer, t, p)
        tip = html.unescape(_hover(i, text, lv, o).replace("<br>", "\n"))
        spans.append(f'<span class="csd-tok" data-level="{html.escape(lv)}" data-step="{o["step"]}" '
                     f'title="{html.escape(tip)}" style="{level_css(lv)}'
                     f'border-radius:3px;padding:1px 0;margin:0 1px">{html.escape(text)}</span>')
    present = [lv for lv in LEVEL_ORDER if lv in set(g.provenance)] + sorted(set(g.provenance) - set(LEVEL_ORDER))
    legend = " ".join(f'<span class="csd-legend-item" data-level="{html.escape(lv)}" style="{level_css(lv)}'
                      f'border-radius:3px;padding:1px 6px" title="{LEVEL_UNDERLINE.get(lv, "no line")}">'
                      f'{html.escape(lv)}</span>' for lv in present)
    head = html.escape(title or _html_title(g))
    at = "" if row is None else f'data-row="{int(row)}" '
    return (f'<div class="csd-trace" data-method="{html.escape(g.method)}" data-n-tokens="{len(ids)}" {at}'
            f'style="font-family:sans-serif">'
            f'<div class="csd-trace-title" style="font-size:0.9em;color:#444;margin-bottom:4px">{head}</div>'
            f'<div class="csd-trace-tokens" style="font-family:monospace;white-space:pre-wrap;line-height:1.9;'
            f'color:#000">{"".join(spans)}</div>'
            f'<div class="csd-legend" style="margin-top:6px;font-size:0.85em">{legend}</div></div>')


# -- one row of a batch (csd_lib.engine.batch.generate_batch) ------------------------------------

def batch_row(batch: list[Generation], row) -> Generation:
    """Row ``row`` of a batched generation (one :class:`Generation` per prompt, in order); a row that is not
    one of the batch's raises ValueError saying which rows there are."""
    n = len(batch)
    if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < n:
        raise ValueError(f"row {row!r} is not a row of this batch: it has {n} row{'s' * (n != 1)}, "
                         f"numbered 0 to {n - 1}")
    return batch[row]


def row_label(batch: list[Generation], row: int, prompts, tokenizer, width: int = 60) -> str:
    """Which row of the batch is drawn and its prompt (text, or token ids decoded; cut to ``width`` characters)."""
    batch_row(batch, row)
    if len(prompts) != len(batch):
        raise ValueError(f"{len(prompts)} prompts for a batch of {len(batch)} rows; pass the prompts the batch "
                         f"was generated from, one per row")
    p = prompts[row]
    text = p if isinstance(p, str) else tokenizer.decode(list(p), skip_special_tokens=True)
    text = " ".join(text.split())
    text = text if len(text) <= width else text[:width - 1] + "\u2026"
    return f"row {row} of {len(batch)}, prompt \"{text}\""


def row_trace_figure(batch: list[Generation], tokenizer, row: int, prompts, **kw):
    """:func:`trace_figure` of row ``row`` of a batch (same colours, styles and replay, over that row's target
    reviews), its title saying which row and its prompt (``prompts``: those the batch was generated from)."""
    g = batch_row(batch, row)
    fig = trace_figure(g, tokenizer, title=f"{row_label(batch, row, prompts, tokenizer)}: {_figure_title(g)}", **kw)
    for step in fig.layout.sliders[0].steps[1:]:  # the replay's titles name the row too
        vis, layout = step.args
        step.args = [vis, {"title.text": f"row {row}: {layout['title.text']}"}]
    return fig


def row_trace_html(batch: list[Generation], tokenizer, row: int, prompts) -> str:
    """:func:`trace_html` of row ``row`` of a batch, its title saying which row and its prompt."""
    g = batch_row(batch, row)
    return trace_html(g, tokenizer, f"{row_label(batch, row, prompts, tokenizer)}: {_html_title(g)}", row=row)


def save_trace_html(g: Generation, tokenizer, path, title: str | None = None) -> None:
    """Write ``trace_html`` as a standalone HTML page (atomic: temp file, then rename)."""
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
    st = g.stats
    rows = [("tokens", st.n_tokens), ("tokens per target call", f"{st.tokens_per_target_call:.2f}"),
            ("forward calls", ", ".join(f"{k} {v}" for k, v in st.calls.items())),
            ("wall time", f"{st.wall_time * 1000:.0f} ms"),
            ("SWI, model size", f"{st.swi_model_size:.2f}x"),
            ("SWI, previous work", f"{st.swi_previous_work:.2f}x")]
    if ar is not None:
        if g.plan.temperature == 0.0:
            same = g.token_ids == ar.token_ids
            rows.append(("identical to AR (greedy)", "yes" if same else "NO"))
            rows.append(("walltime speedup over AR", f"{ar.stats.wall_time / st.wall_time:.2f}x"
                         if st.wall_time > 0 else "-"))
        else:
            rows.append(("identical to AR", "n/a (sampling: same distribution, not same tokens)"))
    body = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(str(k))}</th>"
                   f"<td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f'<table class="csd-stats-table" style="font-size:0.9em">{body}</table>'
