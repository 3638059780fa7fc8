"""The one palette for cascade levels, shared by every figure and trace view.

Colours come from the Okabe-Ito set (Okabe and Ito, "Color Universal Design", 2008), which
stays distinguishable under the common colour-vision deficiencies. They are assigned so
that levels next to each other in ``LEVEL_ORDER`` also differ in CIE L* lightness by at
least 15, so a greyscale print still separates them (tests/viz/test_palette.py measures it).
The HTML trace adds one underline style per level (``LEVEL_UNDERLINE``), which reads
without any colour at all; bar charts add one fill pattern per level (``LEVEL_PATTERN``).

Figures whose series are not cascade levels (methods, cost models, sources) take
``series_style(i)``: an Okabe-Ito colour, a bar pattern, a line dash and a marker symbol,
so series differ in more than hue. Heatmaps use ``SEQUENTIAL_SCALE`` (cividis: made for
colour-vision deficiencies, its lightness rises monotonically, so greyscale keeps the order).
"""
from __future__ import annotations

from ..engine.generation import TARGET_BONUS, TARGET_CORRECTION
from ..engine.mag import BIGRAM, MATCH

# Okabe-Ito colours by their names in that set.
OKABE_ITO = {"black": "#000000", "orange": "#e69f00", "sky blue": "#56b4e9", "bluish green": "#009e73",
             "yellow": "#f0e442", "blue": "#0072b2", "vermillion": "#d55e00", "reddish purple": "#cc79a7"}

# Who proposed a token, from the bottom of the cascade to the top. Drafter roles of every
# family map onto these names.
LEVEL_ORDER = [MATCH, BIGRAM, "small", "base", TARGET_CORRECTION, TARGET_BONUS]
LEVEL_COLORS = {
    MATCH: OKABE_ITO["bluish green"],      # MaG, copied from a match       (L* 58)
    BIGRAM: OKABE_ITO["yellow"],           # MaG, bigram fill               (L* 89)
    "small": OKABE_ITO["sky blue"],        # the smaller neural drafter     (L* 70)
    "base": OKABE_ITO["blue"],             # the larger neural drafter      (L* 46)
    TARGET_CORRECTION: OKABE_ITO["orange"],  # the target replaced a draft  (L* 71)
    TARGET_BONUS: OKABE_ITO["vermillion"],   # the target's bonus token     (L* 54)
}
UNKNOWN_COLOR = "#7f7f7f"  # a drafter name outside LEVEL_ORDER

# CSS text-decoration per level: the trace stays readable without colour.
LEVEL_UNDERLINE = {
    MATCH: "underline solid",
    BIGRAM: "underline dotted",
    "small": "underline dashed",
    "base": "underline double",
    TARGET_CORRECTION: "underline wavy",
    TARGET_BONUS: "overline solid",
}

# plotly bar fill pattern per level (marker.pattern.shape): bars read without colour.
LEVEL_PATTERN = {
    MATCH: "x",
    BIGRAM: "+",
    "small": "/",
    "base": "\\",
    TARGET_CORRECTION: "",
    TARGET_BONUS: "|",
}

# Series that are not levels: colours whose neighbours differ by >= 15 in CIE L* (blue 46,
# orange 71, black 0, sky blue 70, vermillion 54, reddish purple 61), and per series one
# pattern, one dash and one symbol, all distinct.
SERIES_COLORS = [OKABE_ITO[c] for c in ("blue", "orange", "black", "sky blue", "vermillion", "reddish purple")]
SERIES_PATTERNS = ["", "/", ".", "x", "\\", "+", "-", "|"]
SERIES_DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
SERIES_SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "star", "cross", "triangle-down"]

# Sequential heatmap scale: cividis (Nunez, Anderton and Renslow, PLoS ONE 2018), dark to light.
SEQUENTIAL_SCALE = ["#00224e", "#123570", "#3b496c", "#575d6d", "#707173", "#8a8678", "#a59c74", "#c3b369",
                    "#e1cc55", "#fee838"]

# 256-colour terminal backgrounds nearest to LEVEL_COLORS (foreground chosen like text_color).
ANSI_CODES = {MATCH: "48;5;36;38;5;16", BIGRAM: "48;5;227;38;5;16", "small": "48;5;74;38;5;16",
         "base": "48;5;25;38;5;231", TARGET_CORRECTION: "48;5;214;38;5;16", TARGET_BONUS: "48;5;166;38;5;16"}


def level_color(name: str) -> str:
    """The colour of a provenance label (unknown drafters get grey)."""
    return LEVEL_COLORS.get(name, UNKNOWN_COLOR)


def level_css(name: str) -> str:
    """Inline CSS for a token of level ``name``: background, readable text colour, underline style."""
    col = level_color(name)
    deco = LEVEL_UNDERLINE.get(name)
    line = (f"text-decoration:{deco} {text_color(col)};text-decoration-thickness:2px;"
            f"text-underline-offset:3px;" if deco else "")
    return f"background-color:{col};color:{text_color(col)};{line}"


_PROPOSER_ALIAS = {"mag": MATCH, "target": TARGET_CORRECTION}


def proposer_color(name: str) -> str:
    """Colour of an immediate proposer key of ``Event.proposers`` ('base', 'small', 'mag')."""
    return level_color(_PROPOSER_ALIAS.get(name, name))


def model_color(name: str) -> str:
    """The colour of a model (cascade role) in bar charts: the target as its corrections, MaG as a match."""
    return proposer_color(name)


def level_pattern(name: str) -> str:
    """The bar fill pattern of a level, proposer key or model name ('' = solid; unknown names: '-')."""
    return LEVEL_PATTERN.get(_PROPOSER_ALIAS.get(name, name), "-")


def bar_pattern(shape: str, color: str) -> dict:
    """``marker.pattern`` for a bar of ``color``: the colour fills, the pattern is drawn over it in
    black or white (whichever reads on that colour), so the shape survives greyscale."""
    return dict(shape=shape, fillmode="overlay", fgcolor=text_color(color), fgopacity=0.6, size=7, solidity=0.3)


def series_style(i: int) -> dict:
    """Colour, bar pattern, line dash and marker symbol of the ``i``-th series of a figure."""
    return dict(color=SERIES_COLORS[i % len(SERIES_COLORS)], pattern=SERIES_PATTERNS[i % len(SERIES_PATTERNS)],
                dash=SERIES_DASHES[i % len(SERIES_DASHES)], symbol=SERIES_SYMBOLS[i % len(SERIES_SYMBOLS)])


def relative_luminance(hex_color: str) -> float:
    """WCAG relative luminance Y of an sRGB colour ``#rrggbb`` (0 black .. 1 white)."""
    h = hex_color.lstrip("#")
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
           for c in (int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def text_color(hex_color: str) -> str:
    """Black or white, whichever has the higher WCAG contrast ratio on ``hex_color``."""
    y = relative_luminance(hex_color)
    return "#000000" if (y + 0.05) / 0.05 >= 1.05 / (y + 0.05) else "#ffffff"
