"""Level colours, shared by every figure and trace view (one palette, one place)."""
from __future__ import annotations

from ..mag import BIGRAM, MATCH
from ..trace import TARGET_BONUS, TARGET_CORRECTION


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


_PROPOSER_ALIAS = {"mag": MATCH, "target": TARGET_CORRECTION}


def proposer_color(name: str) -> str:
    """Colour of an immediate proposer key of ``Event.proposers`` ('base', 'small', 'mag')."""
    return level_color(_PROPOSER_ALIAS.get(name, name))


def model_color(name: str) -> str:
    """The colour of a model (cascade role) in bar charts: the target red, MaG green."""
    return proposer_color(name)


def _text_color(hex_color: str) -> str:
    """Black or white, whichever reads better on ``hex_color``."""
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "#ffffff"
