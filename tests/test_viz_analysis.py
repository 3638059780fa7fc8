"""csd_lib.viz helpers of notebooks 04-07: K coverage, event coverage, figures build."""
import plotly.graph_objects as go
import pytest

from csd_lib import ewif, generate, random_family, viz

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
    assert len(figs[2].data) == 2  # one heatmap per lenience
    assert viz.proposer_color("mag") == viz.LEVEL_COLORS["mag-match"]
