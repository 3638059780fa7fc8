"""csd_lib.regimes: the per-prompt counts behind the two-regime side-by-sides."""
from types import SimpleNamespace

import numpy as np
import pytest

from csd_lib.measure.curves import curve_from_matches
from csd_lib.report.regimes import (first_accepted_counts, gain_difference, relative_gain, runs_swi, swi_counts,
    swi_difference)


def _gen(tokens, target_calls, drafter_calls, c_drafter=0.1, pw=0.02):
    stats = SimpleNamespace(n_tokens=tokens, calls={"target": target_calls, "base": drafter_calls, "mag": 5},
                            model_size_costs=lambda: {"target": 1.0, "base": c_drafter, "mag": 0.0},
                            previous_work_costs={"target": 1.0, "base": pw, "mag": 0.0})
    return SimpleNamespace(stats=stats)


def test_first_accepted_counts_pool_to_the_curve():
    rng = np.random.default_rng(0)
    ms = [rng.random(n) < 0.7 for n in (5, 12, 30, 1)]
    curve = curve_from_matches(ms, max_pos=10)
    for pos in (1, 3, 7):
        hits, totals = first_accepted_counts(ms, pos)
        assert sum(hits) / sum(totals) == pytest.approx(curve["unconditional"][pos - 1])
        assert sum(totals) == curve["counts"][pos - 1]
    assert first_accepted_counts([np.array([1, 1, 0, 1], bool)], 2) == ([1], [3])
    with pytest.raises(ValueError):
        first_accepted_counts(ms, 0)


def test_swi_counts_price_calls_by_the_chosen_costs():
    g = _gen(40, 10, 20)
    assert swi_counts([g]) == ([40], [pytest.approx(12.0)])
    assert swi_counts([g], "previous work") == ([40], [pytest.approx(10.4)])
    assert runs_swi([g, _gen(20, 5, 10)]) == pytest.approx(60 / 18)
    with pytest.raises(ValueError):
        swi_counts([g], "walltime")


def test_differences_and_gains_have_a_direction_only_beyond_the_noise():
    fast = [_gen(40, 5 + i % 2, 10) for i in range(8)]
    slow = [_gen(40, 20 + i % 3, 10) for i in range(8)]
    assert swi_difference(fast, slow).sign == 1 and swi_difference(slow, fast).sign == -1
    assert swi_difference(fast, fast).sign == 0
    assert relative_gain(fast[:1], slow[:1])[0] == pytest.approx((40 / 6) / (40 / 21) - 1)
    # a regime where fast gains nothing over itself against one where it gains a lot: larger beyond the noise
    assert gain_difference(fast, fast, fast, slow).sign == 1
    with pytest.raises(ValueError):
        swi_difference(fast, slow[:3])


def test_side_family_pairs_only_the_embedded_families():
    from csd_lib.report.regimes import no_side_reason, side_family
    assert side_family("tiny-t5") == "tiny-t5-paper" and side_family("tiny-llama") == "tiny-t5-paper"
    assert side_family("tiny-t5-paper") == "tiny-t5"
    for real in ("flan-t5", "flan-t5-colab", "vicuna"):
        assert side_family(real) is None
        assert real in no_side_reason(real)
    assert no_side_reason("tiny-t5") == ""
