"""csd_lib.viz.cascade: planned and measured coverage, grid heatmaps and the call tree, from hand-made input."""
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest

from csd_lib.engine.generation import Event
from csd_lib.viz.cascade import (cascade_tree, cascade_tree_figure, coverage_figure, coverage_from_events,
                                 grid_heatmap, planned_coverage, planned_coverage_figure)
from csd_lib.viz.palette import SEQUENTIAL_SCALE, proposer_color

K3 = [[2, 3, 4], [0, 1, 5], [0, 0, 6]]
NAMES = ["base", "small", "mag"]


def event(depth, proposers, reviewer="target"):
    n = len(proposers)
    return Event(0, depth, reviewer, 0, [3] * n, list(proposers), list(proposers), [1.0] * n, n, 3, True, 1.0)


EVENTS = [event(0, ["base", "base", "small", "mag", "mag"]), event(0, ["base", "mag"]),
          event(1, ["small", "mag", "mag"], reviewer="base")]


def test_coverage_from_events_by_hand():
    assert coverage_from_events(EVENTS) == {"base": [2, 1, 0, 0, 0], "small": [0, 0, 1, 0, 0],
                                            "mag": [0, 1, 0, 1, 1]}
    assert coverage_from_events(EVENTS, max_pos=2) == {"base": [2, 1], "mag": [0, 1]}
    assert coverage_from_events(EVENTS, depth=1) == {"small": [1, 0, 0], "mag": [0, 1, 1]}
    assert coverage_from_events(EVENTS, depth=2) == {}


def test_coverage_figure_shares_by_hand():
    fig = coverage_figure(EVENTS)
    bars = {t.name: list(t.y) for t in fig.data if t.type == "bar"}
    assert list(bars) == ["base", "small", "mag"]
    assert bars["base"] == [1.0, 0.5, 0, 0, 0] and bars["mag"] == [0, 0.5, 0, 1.0, 1.0]
    assert [sum(col) for col in zip(*bars.values())] == [1.0] * 5  # every position's shares add up to one
    line = fig.data[-1]
    assert list(line.y) == [1.0, 1.0, 0.5, 0.5, 0.5]  # blocks reaching each position, over the most
    assert [t.marker.color for t in fig.data[:3]] == [proposer_color(n) for n in ("base", "small", "mag")]
    assert fig.layout.title.text == "who drafted each position of the blocks the target reviewed"
    assert coverage_figure(EVENTS, depth=1).layout.title.text.endswith("blocks base reviewed")


def test_planned_coverage_figure_draws_the_segments():
    fig = planned_coverage_figure(K3, NAMES)
    segs = [(t.y[0], t.name, t.base[0], t.x[0]) for t in fig.data]
    want = [(f"{r['reviewer']} reviews", r["drafter"], r["start"], r["end"] - r["start"])
            for r in planned_coverage(K3, NAMES)]
    assert segs == want
    assert segs[:3] == [("target reviews", "base", 0, 2), ("target reviews", "small", 2, 3),
                        ("target reviews", "mag", 5, 4)]
    assert [t.showlegend for t in fig.data].count(True) == 3  # one legend entry per drafter
    assert fig.layout.title.text == f"planned draft positions for K = {K3}"


ROWS = [dict(k11=a, k12=b, lenience=lam, v=0.5 * a + b / lam) for a in (1, 2) for b in (0, 3) for lam in (1.0, 2.0)]


def test_grid_heatmap_one_panel_per_facet_and_the_best_cell():
    fig = grid_heatmap(ROWS, "v")
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 2 and list(fig.layout.coloraxis.colorscale[0]) == [0.0, SEQUENTIAL_SCALE[0]]
    # lenience 1: z[y][x], y = k11 in (1, 2), x = k12 in (0, 3)
    assert [list(r) for r in heat[0].z] == [[0.5, 3.5], [1.0, 4.0]]
    assert heat[0].text[1][1] == "\u2605 4.00"  # the best cell (k11 2, k12 3, lenience 1)
    assert heat[0].text[0][0] == "0.50 \u25bc"  # below zmid 1.0
    assert not any("\u2605" in c for row in heat[1].text for c in row)
    marks = [t for t in fig.data if t.type == "scatter"]
    assert len(marks) == 2 and list(marks[0].x) == ["3"] and list(marks[0].y) == ["2"]
    assert fig.layout.coloraxis.colorbar.title.text == "v"
    assert grid_heatmap(ROWS, "v", label="SWI").layout.coloraxis.colorbar.title.text == "SWI"  # the colour bar says what
    low = grid_heatmap(ROWS, "v", best="min", zmid=None)
    assert [t.text for t in low.data if t.type == "heatmap"][0][0][0] == "\u2605 0.50"
    with pytest.raises(ValueError, match="best must be 'max', 'min' or None"):
        grid_heatmap(ROWS, "v", best="top")


def test_cascade_tree_figure_from_a_family_like_object():
    fam = SimpleNamespace(default_k=K3, default_lenience=2.0, target=SimpleNamespace(name="target"),
                          drafters=[SimpleNamespace(name="base"), SimpleNamespace(name="small")])
    tree = cascade_tree(fam)
    assert tree == cascade_tree(K3, NAMES, 2.0)
    fig = cascade_tree_figure(fam)
    assert isinstance(fig, go.Figure)
    boxes = [t for t in fig.data if t.mode == "markers+text"]
    edges = [t for t in fig.data if t.mode == "lines"]
    assert [b.text[0] for b in boxes] == [n["name"] for n in tree["nodes"]]
    assert len(edges) == len(tree["nodes"]) - 1
    thick = [e for e in edges if e.line.dash == "solid" and e.line.width == 2.5]
    assert len(thick) == sum(1 for n in tree["nodes"] if n["parent"] == 0)  # the target's three drafters
    dashed = [e for e in edges if e.line.dash == "dash"]
    assert len(dashed) == 1  # only base<-small is lenient: MaG's tokens are reviewed strictly by default
    with pytest.raises(ValueError, match="pass either a family or K with drafters"):
        cascade_tree(fam, ["small", "mag"])
