"""The level palette: colour-blind-safe set, distinct in lightness, one underline per level."""
import itertools

from csd_lib import viz
from csd_lib.engine.generation import TARGET_BONUS, TARGET_CORRECTION
from csd_lib.engine.mag import BIGRAM, MATCH

# Okabe & Ito (2008), "Color Universal Design": the published sRGB values.
OKABE_ITO_RGB = {(0, 0, 0), (230, 159, 0), (86, 180, 233), (0, 158, 115), (240, 228, 66), (0, 114, 178),
                 (213, 94, 0), (204, 121, 167)}


def rgb(hex_color):
    h = hex_color.lstrip("#")
    return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))


def cie_lightness(hex_color):
    """CIE L* (D65) from sRGB, computed here independently of csd_lib."""
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in rgb(hex_color))
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    f = y ** (1 / 3) if y > (6 / 29) ** 3 else y / (3 * (6 / 29) ** 2) + 4 / 29
    return 116 * f - 16


def test_levels_cover_every_provenance_name_and_come_from_okabe_ito():
    assert set(viz.LEVEL_ORDER) == {MATCH, BIGRAM, "small", "base", TARGET_CORRECTION, TARGET_BONUS}
    assert set(viz.LEVEL_COLORS) == set(viz.LEVEL_ORDER) == set(viz.LEVEL_UNDERLINE)
    assert {rgb(c) for c in viz.LEVEL_COLORS.values()} <= OKABE_ITO_RGB
    assert len(set(viz.LEVEL_COLORS.values())) == len(viz.LEVEL_COLORS)


def test_neighbouring_levels_differ_in_lightness():
    ls = [cie_lightness(viz.LEVEL_COLORS[lv]) for lv in viz.LEVEL_ORDER]
    gaps = {f"{a}/{b}": abs(x - y) for (a, x), (b, y) in zip(zip(viz.LEVEL_ORDER, ls), zip(viz.LEVEL_ORDER[1:], ls[1:]))}
    assert min(gaps.values()) >= 15, f"neighbouring levels too close in CIE L*: {gaps}"
    # the two MaG sources, the two drafters and the two target marks each differ clearly
    for a, b in ((MATCH, BIGRAM), ("small", "base"), (TARGET_CORRECTION, TARGET_BONUS)):
        assert abs(cie_lightness(viz.LEVEL_COLORS[a]) - cie_lightness(viz.LEVEL_COLORS[b])) >= 15, (a, b)


def test_levels_that_share_a_lightness_have_different_underlines():
    for a, b in itertools.combinations(viz.LEVEL_ORDER, 2):
        if abs(cie_lightness(viz.LEVEL_COLORS[a]) - cie_lightness(viz.LEVEL_COLORS[b])) < 15:
            assert viz.LEVEL_UNDERLINE[a] != viz.LEVEL_UNDERLINE[b], (a, b)
    assert len(set(viz.LEVEL_UNDERLINE.values())) == len(viz.LEVEL_UNDERLINE)


def wcag_contrast(a, b):
    la, lb = sorted((viz.relative_luminance(a), viz.relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_token_text_is_readable_on_every_level():
    for lv, col in viz.LEVEL_COLORS.items():
        fg = viz.text_color(col)
        other = "#ffffff" if fg == "#000000" else "#000000"
        assert wcag_contrast(fg, col) >= wcag_contrast(other, col) and wcag_contrast(fg, col) >= 4.5, lv
        css = viz.level_css(lv)
        assert col in css and viz.LEVEL_UNDERLINE[lv] in css


def test_figures_use_the_palette():
    assert viz.proposer_color("mag") == viz.LEVEL_COLORS[MATCH]
    assert viz.model_color("target") == viz.LEVEL_COLORS[TARGET_CORRECTION]
    assert viz.level_color("some-drafter") not in viz.LEVEL_COLORS.values()
    assert abs(viz.relative_luminance("#ffffff") - 1) < 1e-12 and viz.relative_luminance("#000000") == 0
