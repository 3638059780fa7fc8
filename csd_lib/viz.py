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
