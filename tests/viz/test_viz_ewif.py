"""csd_lib.viz.ewif: theory figures whose points are the theory's own numbers."""
import pytest

from csd_lib.price.ewif import best_k_sd, ewif_sd, ewif_vc, table1
from csd_lib.viz.ewif import cor44_figure, ewif_k_figure, lines_figure, table1_figure
from csd_lib.viz.palette import LEVEL_COLORS, series_style


def test_ewif_k_figure_curve_and_best_k_per_setting():
    fig = ewif_k_figure([(0.8, 0.05), (0.6, 0.2)], k_max=10)
    assert len(fig.data) == 4  # a curve and a star per setting
    for i, (alpha, c) in enumerate([(0.8, 0.05), (0.6, 0.2)]):
        curve, star = fig.data[2 * i], fig.data[2 * i + 1]
        assert curve.name == f"alpha={alpha:g}, c={c:g}" and list(curve.x) == list(range(1, 11))
        assert list(curve.y) == pytest.approx([ewif_sd(alpha, k, c) for k in range(1, 11)])
        assert (star.x[0], star.y[0]) == pytest.approx(best_k_sd(alpha, c, 10))
        assert star.y[0] == pytest.approx(max(curve.y))
        assert curve.line.color == star.marker.color == series_style(i)["color"]
    assert [s.y0 for s in fig.layout.shapes] == [1.0]


def test_lines_figure_styles_and_overrides():
    fig = lines_figure([1, 2, 3], {"a": [1, 2, 3], "b": [3, 2, 1]}, "x", "y", title="t",
                       colors={"b": "#123456"}, dash={"a": "dot"})
    a, b = fig.data
    assert list(a.y) == [1, 2, 3] and a.line.dash == "dot" and a.line.color == series_style(0)["color"]
    assert b.line.color == "#123456" and b.line.dash == series_style(1)["dash"]
    assert a.marker.symbol != b.marker.symbol
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text, fig.layout.title.text) == ("x", "y", "t")


def test_table1_figure_paper_beside_each_cost_model():
    rows = {"previous work": table1("previous_work"), "model size": table1("model_size")}
    fig = table1_figure(rows)
    assert [t.name for t in fig.data] == ["paper (Table 1)", "computed, previous work costs",
                                          "computed, model size costs"]
    keep = [r for r in rows["previous work"] if r["drafters"] in ("small", "base", "base+small")]
    assert list(fig.data[0].y) == [r["paper"] for r in keep]
    assert list(fig.data[2].y) == [r["ewif"] for r in rows["model size"] if r["drafters"] in
                                   ("small", "base", "base+small")]
    assert [list(level) for level in fig.data[0].x] == [[r["dataset"] for r in keep], [r["drafters"] for r in keep]]


def test_cor44_figure_is_theorem_4_3_against_sd():
    fig = cor44_figure(0.8, 0.6, 0.1, k=3, n_max=5)
    vc, sd = fig.data
    assert list(vc.y) == pytest.approx([ewif_vc(0.8, 0.6, 3, n, 0.1, 0.0) for n in range(1, 6)])
    assert list(sd.y) == pytest.approx([ewif_sd(0.8, n, 0.1) for n in range(1, 6)])
    assert vc.line.color == LEVEL_COLORS["mag-match"] and sd.line.color == LEVEL_COLORS["base"]
    assert "alpha=0.80, alpha'=0.60, c_d1=0.10" in fig.layout.title.text
