"""csd_lib.viz helpers of notebooks 04-07: K coverage, event coverage, figures build."""
import plotly.graph_objects as go
import pytest

from csd_lib.price import ewif
from csd_lib import generate, random_family, viz

K3 = [[5, 14, 10], [0, 1, 10], [0, 0, 10]]


def test_planned_coverage_reads_k_as_increments():
    rows = viz.planned_coverage(K3, ["base", "small", "mag"])
    top = [(r["drafter"], r["start"], r["end"]) for r in rows if r["reviewer"] == "target"]
    assert top == [("base", 0, 5), ("small", 5, 19), ("mag", 19, 29)]
    inner = [(r["drafter"], r["start"], r["end"]) for r in rows if r["reviewer"] == "base"]
    assert inner == [("small", 0, 1), ("mag", 1, 11)]
    # zero entries give no segment; MaG never reviews
    rows = viz.planned_coverage([[3, 0], [0, 10]], ["small", "mag"])
    assert [(r["reviewer"], r["drafter"]) for r in rows] == [("target", "small"), ("small", "mag")]
    with pytest.raises(ValueError):
        viz.planned_coverage([[1, 2]], ["small", "mag"])


def test_coverage_from_events_counts_every_drafted_token():
    f = random_family("t5", vocab_size=32, n_drafters=2, seed=1)
    g = generate(f, [5, 6, 7, 5, 6], "csd", max_new_tokens=30)
    cov = viz.coverage_from_events(g.events, depth=0)
    top = [e for e in g.events if e.depth == 0]
    assert sum(map(sum, cov.values())) == sum(len(e.tokens) for e in top)
    assert cov["base"][0] == sum(1 for e in top if e.tokens)  # row 1 of K: base starts every block
    assert set(cov) <= {"base", "small", "mag"}


def test_figures_build():
    f = random_family("t5", vocab_size=32, n_drafters=2, seed=1)
    g = generate(f, [5, 6, 7, 5, 6], "csd", max_new_tokens=20)
    rows = [dict(k11=a, k12=b, lenience=l, v=a + b + l) for a in (1, 2) for b in (0, 3) for l in (1.0, 2.0)]
    figs = [viz.planned_coverage_figure(K3, ["base", "small", "mag"]), viz.coverage_figure(g.events),
            viz.grid_heatmap(rows, "v"), viz.ewif_k_figure([(0.8, 0.05)]),
            viz.lines_figure([1, 2], {"a": [1, 2]}, "x", "y"), viz.table1_figure({"pw": ewif.table1()}),
            viz.parity_figure([dict(label="m", x=1.0, y=2.0)], "x", "y"),
            viz.sampling_figure([0.5, 0.25, 0.25, 0.0], {"emp": [0.4, 0.3, 0.3, 0.0]}, 2, 2)]
    assert all(isinstance(fig, go.Figure) and fig.data for fig in figs)
    assert sum(t.type == "heatmap" for t in figs[2].data) == 2  # one heatmap per lenience
    assert viz.proposer_color("mag") == viz.LEVEL_COLORS["mag-match"]


def _edges(tree, positive=True):
    """(reviewer, drafter) pairs of the tree, with a positive K entry (or zero when positive=False)."""
    nodes = tree["nodes"]
    return {(nodes[n["parent"]]["name"], n["name"]) for n in nodes[1:] if n["skipped"] != positive}


def test_cascade_tree_three_levels_reads_k_as_increments():
    tree = viz.cascade_tree(K3, ["base", "small", "mag"], lenience=2)
    top = [(n["name"], n["budget"], n["threshold"], n["strict"]) for n in tree["nodes"] if n["parent"] == 0]
    assert top == [("base", 5, 5, True), ("small", 14, 19, True), ("mag", 10, 29, True)]
    base = next(n["id"] for n in tree["nodes"] if n["name"] == "base")
    inner = [(n["name"], n["threshold"], n["strict"]) for n in tree["nodes"] if n["parent"] == base]
    # base reviews with row 1: small's tokens leniently, MaG's strictly (the paper's rule, the default)
    assert inner == [("small", 1, False), ("mag", 11, True)]
    assert [r["reviewer"] for r in tree["rows"]] == ["target", "base", "small"]
    assert tree["rows"][0]["lenience"] == 1.0 and tree["rows"][1]["lenience"] == 2.0
    assert [r["note"] for r in tree["rows"]] == ["strict", "l = 2 on small; strict on mag", "strict"]
    lenient = viz.cascade_tree(K3, ["base", "small", "mag"], lenience=2, mag_lenience=True)
    assert [n["strict"] for n in lenient["nodes"] if n["parent"] == base] == [False, False]
    assert [r["note"] for r in lenient["rows"]] == ["strict", "l = 2", "l = 2"]
    assert max(n["level"] for n in tree["nodes"] if n["name"] == "mag") == 3  # MaG at the bottom
    assert not any(n["parent"] is not None and tree["nodes"][n["parent"]]["name"] == "mag" for n in tree["nodes"])


def test_cascade_tree_two_levels_and_zeros():
    tree = viz.cascade_tree([[3, 7], [0, 10]], ["small", "mag"])
    assert _edges(tree) == {("target", "small"), ("target", "mag"), ("small", "mag")}
    # k12 = 0: small drafts alone for the target, nothing below it is skipped for small
    z = viz.cascade_tree([[4, 0, 0], [0, 0, 6], [0, 0, 10]], ["base", "small", "mag"], lenience=3)
    assert _edges(z) == {("target", "base"), ("base", "mag")}
    assert _edges(z, positive=False) == {("target", "small"), ("target", "mag"), ("base", "small")}
    assert [r["reviewer"] for r in z["rows"]] == ["target", "base"]  # small never reviews here
    fig = viz.cascade_tree_figure([[4, 0, 0], [0, 0, 6], [0, 0, 10]], ["base", "small", "mag"], lenience=3)
    texts = " ".join(a.text for a in fig.layout.annotations)
    assert "K[0][1] = 0" in texts and "K[1][1] = 0" in texts
    assert "l = 3" not in texts  # base reviews only MaG's tokens: strictly, under the paper's rule
    names = {t.name for t in fig.data if t.showlegend}
    assert names == {"strict review (l = 1)", "zero entry: skipped"}
    fig = viz.cascade_tree_figure([[4, 0, 0], [0, 0, 6], [0, 0, 10]], ["base", "small", "mag"], lenience=3,
                                  mag_lenience=True)
    assert "(l = 3)" in " ".join(a.text for a in fig.layout.annotations)
    assert {t.name for t in fig.data if t.showlegend} == {"strict review (l = 1)", "lenient review (l = 3)",
                                                          "zero entry: skipped"}


def test_cascade_tree_rejects_bad_input():
    with pytest.raises(ValueError, match="negative"):
        viz.cascade_tree([[3, -1], [0, 10]], ["small", "mag"])
    with pytest.raises(ValueError, match="not an integer"):
        viz.cascade_tree([[3, 1.5], [0, 10]], ["small", "mag"])
    with pytest.raises(ValueError, match="last"):
        viz.cascade_tree([[3, 1], [0, 10]], ["mag", "small"])
    with pytest.raises(ValueError, match="drafter names"):
        viz.cascade_tree_figure([[3, 1], [0, 10]])


def test_cascade_tree_matches_the_reviews_of_a_run():
    f = random_family("t5", vocab_size=32, n_drafters=2, seed=1, lenience=2.0)
    fig = viz.cascade_tree_figure(f)
    assert isinstance(fig, go.Figure) and str(f.default_k) in fig.layout.title.text
    tree = viz.cascade_tree(f)
    assert tree["drafters"] == ["base", "small", "mag"] and tree["lenience"] == 2.0
    g = generate(f, [5, 6, 7, 5, 6], "csd", max_new_tokens=30)
    seen = {(e.reviewer, who) for e in g.events for who in e.proposers}
    assert seen and seen <= _edges(tree)
    assert {e.lenience for e in g.events if e.depth == 0} == {1.0}
    assert {e.lenience for e in g.events if e.depth > 0} <= {2.0}
