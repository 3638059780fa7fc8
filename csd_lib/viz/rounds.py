"""One target round unrolled: every review of Algorithm 1 that led to one review by the target.

Reviews are logged in the order they finish (``Generation.events``): the innermost first,
the target's last. A *round* is the target's review ``r`` with every review logged since
the target's previous one. The figure draws one row per review, the target's on top and
the first review at the bottom, so it reads upwards as the cascade works: MaG proposes,
``small`` reviews, ``base`` reviews, the target reviews.
"""
from __future__ import annotations

from ..engine.generation import TARGET_BONUS, TARGET_CORRECTION, Event, Generation
from ..engine.lenience import lenience_note, lenience_word, token_lenience
from .palette import level_color, text_color
from .trace import esc, levels_pattern, token_label, token_texts


def round_events(g: Generation, r: int) -> list[Event]:
    """The reviews of target round ``r`` (0-based), in the order they happened; the target's is last."""
    tops = [i for i, e in enumerate(g.events) if e.depth == 0]
    if not tops:
        raise ValueError(f"method {g.method!r} logged no review by the target (AR drafts nothing)")
    if not 0 <= r < len(tops):
        raise ValueError(f"round {r} does not exist: this generation has rounds 0 to {len(tops) - 1}")
    first = tops[r - 1] + 1 if r > 0 else 0
    return g.events[first:tops[r] + 1]


def first_rejected_round(g: Generation) -> int:
    """The first target round (0-based) in which the target rejected a drafted token; 0 if none did."""
    tops = [e for e in g.events if e.depth == 0]
    return next((i for i, e in enumerate(tops) if e.n_accepted < len(e.tokens)), 0)


def applied_lenience(g: Generation, e: Event) -> list[float]:
    """The lenience each drafted token of review ``e`` was judged with (1 = strict), by the plan's rule
    (:func:`csd_lib.engine.lenience.token_lenience`: MaG's tokens strict unless ``mag_lenience``)."""
    return [token_lenience(who, e.lenience, g.plan.mag_lenience, by_target=e.depth == 0) for who in e.proposers]


def _lenience_note(e: Event, lam: list[float]) -> str:
    """``strict``, ``l = 3``, or, where a lenient reviewer kept some tokens strict, which:
    ``strict on mag`` or ``l = 3 on small; strict on mag``."""
    if e.depth > 0 and e.lenience > 1 and all(x == 1 for x in lam):
        return "strict on " + "+".join(dict.fromkeys(e.proposers))
    return lenience_note(dict(zip(e.proposers, lam)))


def _appended(e: Event, eos: int | None) -> bool:
    """Whether the reviewer added a token of its own (not after an accepted block that ends with EOS)."""
    return not (e.n_accepted == len(e.tokens) and e.tokens and e.tokens[-1] == eos)


def _own_level(e: Event) -> str:
    if e.depth == 0:
        return TARGET_BONUS if e.bonus else TARGET_CORRECTION
    return e.reviewer


# long: a plotting layout (one row per review of the round, its boxes and annotations)
def round_figure(g: Generation, tokenizer, r: int | None = None, title: str | None = None):
    """Target round ``r`` (default: the first round in which the target rejected a drafted token).

    Each row is one review: boxes at the output positions it reviewed, filled with the colour
    of the level that proposed each token (``provenance``); accepted tokens are outlined, the
    rejected ones faded, struck and hatched (readable without colour), and the reviewer's own
    token has a thick black border. Each row label says the lenience its review applied (see
    :func:`applied_lenience`): ``l = ...``, ``strict``, or which proposers' tokens got which.
    Hover a box for the lenience it was judged with and its acceptance probability min(1, l p(x)/q(x)).
    """
    import plotly.graph_objects as go  # optional dependency: plotly
    tops = [e for e in g.events if e.depth == 0]
    if r is None:
        r = first_rejected_round(g)
    evs = round_events(g, r)
    eos = getattr(tokenizer, "eos_token_id", None)
    ids = list(g.token_ids)
    start = evs[-1].start
    lams = [applied_lenience(g, e) for e in evs]
    rows = [f"{e.reviewer} reviews {'+'.join(dict.fromkeys(e.proposers))} ({_lenience_note(e, lam)})" if e.tokens
            else f"{e.reviewer} reviews nothing" for e, lam in zip(evs, lams)]
    fig = go.Figure()
    legend_done: dict[str, str] = {}  # level -> colour, in order of appearance
    for y, (e, lam) in enumerate(zip(evs, lams)):
        ctx = ids[:e.start]
        seq = ctx + list(e.tokens) + ([e.next_token] if _appended(e, eos) else [])
        labels = [token_label(tokenizer, t, p) for t, p in zip(seq, token_texts(tokenizer, seq))][len(ctx):]
        a = e.n_accepted
        for j, tok in enumerate(e.tokens):
            ok = j < a
            lv = e.provenance[j]
            col = level_color(lv)
            first_no = j == a
            judged = f"{e.reviewer} ({lenience_word(lam[j])})"
            hover = (f"{esc(labels[j])}: proposed by {e.proposers[j]} ({lv})<br>"
                     + (f"accepted by {judged}, min(1, l p/q) = {e.accept_prob[j]:.2f}" if ok else
                        f"rejected by {judged}, min(1, l p/q) = {e.accept_prob[j]:.2f}" if first_no else
                        f"discarded after the first rejection"))
            legend_done.setdefault(lv, col)
            fig.add_trace(go.Bar(
                x=[0.92], base=[e.start - start + j + 0.04], y=[y], orientation="h", width=0.7,
                marker=dict(color=col, line=dict(color="#222222", width=1.2 if ok else 0),
                            pattern=levels_pattern([lv], [col])),
                opacity=1.0 if ok else 0.4, text=[esc(labels[j]) if ok else f"<s>{esc(labels[j])}</s>"],
                textposition="inside", insidetextanchor="middle", textangle=0,
                textfont=dict(color=text_color(col), family="monospace"), hovertext=[hover], hoverinfo="text",
                name=lv, legendgroup=lv, showlegend=False, constraintext="none", cliponaxis=False))
        if _appended(e, eos):
            lv = _own_level(e)
            col = level_color(lv)
            kind = "bonus" if e.bonus else "correction"
            fig.add_trace(go.Bar(
                x=[0.92], base=[e.start - start + a + 0.04], y=[y], orientation="h", width=0.7,
                marker=dict(color=col, line=dict(color="#000000", width=3.5)),
                text=[esc(labels[len(e.tokens)] if len(labels) > len(e.tokens) else "")],
                textposition="inside", insidetextanchor="middle", textangle=0,
                textfont=dict(color=text_color(col), family="monospace"),
                hovertext=[f"written by {e.reviewer} itself ({kind})"], hoverinfo="text",
                name=f"{e.reviewer}'s own token", showlegend=False, constraintext="none", cliponaxis=False))
    for lv, col in legend_done.items():  # legend swatches: the level's colour and its strong pattern
        fig.add_trace(go.Bar(x=[None], y=[None], orientation="h", name=lv, legendgroup=lv, hoverinfo="skip",
                             marker=dict(color=col, pattern=levels_pattern([lv], [col], strong=True))))
    fig.add_trace(go.Bar(x=[None], y=[None], orientation="h", name="rejected (faded, struck through)",
                         marker=dict(color="#bbbbbb"), opacity=0.4, hoverinfo="skip"))
    fig.add_trace(go.Bar(x=[None], y=[None], orientation="h", name="the reviewer's own token (thick border)",
                         marker=dict(color="#ffffff", line=dict(color="#000000", width=3)), hoverinfo="skip"))
    top = evs[-1]
    n_pos = max(e.start - start + len(e.tokens) + 1 for e in evs)
    fig.update_layout(
        title=dict(text=title or f"{g.method}, target round {r + 1} of {len(tops)}: {len(evs)} reviews, the target "
                                 f"kept {top.n_accepted} of {len(top.tokens)} drafted tokens", font=dict(size=14),
                   yref="container", y=1, yanchor="top", pad=dict(t=12)),
        barmode="overlay", template="plotly_white", height=200 + 42 * len(evs),
        margin=dict(l=10, r=10, t=100, b=40),  # the title on top, the legend (up to two lines) below it
        xaxis=dict(title=f"output position (from {start})", range=[-0.2, n_pos + 0.2], dtick=1, showgrid=False),
        yaxis=dict(tickmode="array", tickvals=list(range(len(evs))), ticktext=rows, range=[-0.6, len(evs) - 0.4]),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0, xanchor="left"),
        uniformtext=dict(minsize=8, mode="show"))
    return fig
