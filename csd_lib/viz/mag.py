"""Max-Gram figures (notebook 02)."""
from __future__ import annotations

import html

import numpy as np

from ..engine.mag import MATCH, longest_suffix_match
from .palette import LEVEL_COLORS, SERIES_PATTERNS, bar_pattern, level_css
from .trace import token_label, token_texts


def mag_hits_figure(rows: list[dict], title: str = "Max-Gram on reference solutions"):
    """Bars per MaG variant: share of calls whose first token is right, mean tokens accepted per call.

    Args:
        rows: dicts with ``variant``, ``hit_rate``, ``mean_accepted`` and optionally
            ``color``; variants get neutral colours, never a level's colour.
    """
    from plotly.subplots import make_subplots  # plotly: imported when a figure is drawn
    fig = make_subplots(rows=1, cols=2, subplot_titles=("first token right (hit rate)",
                                                       "tokens accepted per call (greedy)"))
    cols = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#393b79"]  # no level colours
    for i, r in enumerate(rows):
        c = r.get("color") or cols[i % len(cols)]
        fig.add_bar(x=[r["variant"]], y=[r["hit_rate"]], marker_color=c, name=r["variant"], showlegend=False,
                    text=[f"{r['hit_rate']:.2f}"], textposition="outside", row=1, col=1)
        fig.add_bar(x=[r["variant"]], y=[r["mean_accepted"]], marker_color=c, name=r["variant"],
                    showlegend=False, text=[f"{r['mean_accepted']:.2f}"], textposition="outside", row=1, col=2)
    fig.update_layout(title=title, template="plotly_white", height=400)
    fig.update_yaxes(rangemode="tozero")
    fig.update_xaxes(title_text="MaG variant", tickangle=-30 if len(rows) > 4 else 0)
    fig.update_yaxes(title_text="share of calls", tickformat=".0%", row=1, col=1)
    fig.update_yaxes(title_text="tokens per call", tickformat=".1f", row=1, col=2)
    return fig


def match_length_figure(lengths: dict, title: str = "length of the longest suffix match"):
    """Histogram bars of MaG match lengths (0 = no match, bigram fill) per labelled source."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    cols = ["#cc79a7", "#393b79", "#c7c7c7", "#8c564b"]  # sources, not levels; far apart in lightness
    for i, (lab, ls) in enumerate(lengths.items()):
        top = min(max(ls) if ls else 0, 20)
        counts = [sum(1 for x in ls if min(x, 20) == v) / max(1, len(ls)) for v in range(top + 1)]
        col = cols[i % len(cols)]
        fig.add_bar(x=[str(v) if v < 20 else "20+" for v in range(top + 1)], y=counts, name=lab,
                    marker=dict(color=col, line=dict(color="#000000", width=1),
                                pattern=bar_pattern(SERIES_PATTERNS[i % len(SERIES_PATTERNS)], col)))
    fig.update_layout(title=title, barmode="group", template="plotly_white", xaxis_title="match length (tokens)",
                      xaxis_type="category", yaxis_title="share of positions", yaxis_tickformat=".0%")
    return fig


def mag_step_html(tokenizer, prompt_ids: list[int], gen_ids: list[int], mag, truth: list[int] | None = None) -> str:
    """One MaG call as HTML: the matched suffix, where it occurred, and what MaG proposes.

    Lavender: the longest suffix of the sequence and its earlier occurrence; underlined: the
    tokens that followed that occurrence (what MaG copies). The proposal is coloured by
    source (mag-match / mag-bigram) and, with ``truth``, checked token by token.
    """
    prompt_ids, gen_ids = list(prompt_ids), list(gen_ids)
    hay = prompt_ids + gen_ids
    end, length = longest_suffix_match(np.asarray(hay, dtype=np.int64), mag.rule, mag.max_match)
    prop = mag.lookup(np.asarray(hay, dtype=np.int64))
    src = set(range(end - length, end)) if length else set()
    suffix = set(range(len(hay) - length, len(hay))) if length else set()
    copied = set(range(end, min(end + len(prop.tokens), len(hay)))) if length else set()

    def row(ids, offset):
        spans = []
        for i, (t, p) in enumerate(zip(ids, token_texts(tokenizer, ids))):
            k = offset + i
            style = ""
            if k in src or k in suffix:
                style += "background-color:#d9d2e9;"
            if k in copied:
                style += f"text-decoration:underline 3px {LEVEL_COLORS[MATCH]};"
            cls = "csd-mag-src" if k in src else ("csd-mag-suffix" if k in suffix else "")
            spans.append(f'<span class="{cls}" style="{style}">{html.escape(p or token_label(tokenizer, t, p))}</span>')
        return "".join(spans)

    props = []
    prop_pieces = token_texts(tokenizer, hay + list(prop.tokens))[len(hay):]
    for j, (t, lv) in enumerate(zip(prop.tokens, prop.provenance)):
        piece = token_label(tokenizer, t, prop_pieces[j])
        mark = ""
        if truth is not None:
            ok = j < len(truth) and all(prop.tokens[i] == truth[i] for i in range(j + 1))
            mark = " \u2713" if ok else " \u2717"
        props.append(f'<span class="csd-tok" data-level="{lv}" title="{lv}" style="{level_css(lv)}'
                     f'border-radius:3px;padding:1px 3px;margin:0 1px">'
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
