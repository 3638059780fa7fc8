"""csd_lib.viz.acceptance: acceptance curves, pooled calls and pair acceptance, on hand-made runs."""
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest

from csd_lib.engine.stats import PairStats
from csd_lib.viz.acceptance import (acceptance_figure, calls_figure, merged_acceptance, pair_acceptance_figure,
                                    total_calls)
from csd_lib.viz.palette import LEVEL_COLORS, model_color


def pair(reached, accepted):
    return PairStats(list(reached), list(accepted))


def run(n_tokens, calls, acceptance=None):
    """What the figures read of a Generation: its stats."""
    return SimpleNamespace(stats=SimpleNamespace(n_tokens=n_tokens, calls=calls, acceptance=acceptance or {}))


A = run(12, {"target": 4, "small": 9, "mag": 5}, {"target<-small": pair([4, 3], [3, 1])})
B = run(8, {"target": 2, "base": 3, "small": 6}, {"target<-small": pair([2, 2, 1], [2, 1, 0]),
                                                   "base<-small": pair([3], [3])})
CURVE = {"unconditional": [0.8, 0.6, 0.3], "conditional": [0.8, 0.75, 0.5], "alpha": 0.7}


def test_total_calls_sums_runs():
    assert total_calls([A, B]) == {"target": 6, "small": 15, "mag": 5, "base": 3}
    assert total_calls(A) == A.stats.calls  # one run as is


def test_merged_acceptance_adds_counts_position_by_position():
    m = merged_acceptance([A, B])
    assert m["target<-small"].reached == [6, 5, 1] and m["target<-small"].accepted == [5, 2, 0]
    assert m["base<-small"].reached == [3]
    assert A.stats.acceptance["target<-small"].reached == [4, 3]  # the runs' own counts are left alone


def test_acceptance_figure_traces():
    fig = acceptance_figure({"tiny-t5: small->target": CURVE})
    assert isinstance(fig, go.Figure)
    assert len(fig.data) == 5  # unconditional, conditional, fit, two paper marks
    unc, cond, fit = fig.data[:3]
    assert list(unc.y) == CURVE["unconditional"] and list(cond.y) == CURVE["conditional"]
    assert list(fit.y) == pytest.approx([0.7, 0.49, 0.343]) and fit.name.endswith("fit 0.70^i")
    assert unc.line.color == LEVEL_COLORS["small"] == cond.marker.color  # the drafter's own colour
    assert fig.layout.title.text == "acceptance by draft position"
    bare = acceptance_figure({"x": dict(CURVE, alpha=float("nan"))}, conditional=False, paper=False)
    assert len(bare.data) == 1  # no fit for a NaN alpha


def test_calls_figure_bars_in_cascade_order_and_tokens_per_call():
    fig = calls_figure({"run A": A, "both": [A, B]})
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.name for b in bars] == ["target", "base", "small", "mag (free)"]
    assert [list(b.y) for b in bars] == [[4, 6], [0, 3], [9, 15], [5, 5]]
    assert [b.marker.color for b in bars] == [model_color(n) for n in ("target", "base", "small", "mag")]
    ratio = fig.data[-1]
    assert list(ratio.y) == pytest.approx([12 / 4, 20 / 6]) and list(ratio.text) == ["3.00", "3.33"]


def test_pair_acceptance_figure_one_line_per_run_and_pair():
    fig = pair_acceptance_figure({"A": A, "B": B}, max_pos=2)
    assert [t.name for t in fig.data] == ["A: target<-small", "B: target<-small", "B: base<-small"]
    assert list(fig.data[0].y) == pytest.approx([0.75, 1 / 3])
    assert list(fig.data[1].y) == pytest.approx([1.0, 0.5])  # cut at max_pos
    assert fig.data[0].line.color == model_color("small")
