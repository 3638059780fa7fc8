"""csd_lib.viz.lossless.sampling_figure: the exact law beside empirical ones, total variation by hand."""
import pytest

from csd_lib.viz.lossless import sampling_figure
from csd_lib.viz.palette import LEVEL_COLORS

# two tokens over a vocabulary of 2: outcomes 0-0, 0-1, 1-0, 1-1
EXACT = [0.1, 0.4, 0.3, 0.2]


def test_outcomes_sorted_by_exact_probability_and_named_by_ids():
    fig = sampling_figure(EXACT, {"csd": [0.1, 0.4, 0.3, 0.2]}, n_tokens=2, vocab=2)
    assert list(fig.data[0].x) == ["0-1", "1-0", "1-1", "0-0"]
    assert list(fig.data[0].y) == [0.4, 0.3, 0.2, 0.1]
    assert fig.data[0].name == "exact (target)" and fig.data[0].marker.color == LEVEL_COLORS["target-correction"]
    assert fig.data[1].name == "csd (TV 0.000)"


def test_total_variation_and_top():
    emp = {"naive": [0.3, 0.2, 0.3, 0.2], "csd": [0.12, 0.38, 0.3, 0.2]}
    fig = sampling_figure(EXACT, emp, n_tokens=2, vocab=2, top=2)
    # TV = half the L1 distance: (0.2 + 0.2) / 2 and (0.02 + 0.02) / 2
    assert [t.name for t in fig.data] == ["exact (target)", "naive (TV 0.200)", "csd (TV 0.020)"]
    assert all(len(t.x) == 2 for t in fig.data)
    assert list(fig.data[1].y) == pytest.approx([0.2, 0.3])  # the empirical law at the same outcomes
    assert fig.data[1].marker.color != fig.data[2].marker.color
    assert fig.data[1].marker.pattern.shape != fig.data[2].marker.pattern.shape
