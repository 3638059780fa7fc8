"""Claims about acceptance by draft position: counts pool to the curve, directions need an interval, Fig. 2 compared."""
import math

import numpy as np
import pytest

from csd_lib.measure.curves import curve_from_matches, run_lengths
from csd_lib.report.decay import conditional_change, fig2_match, half_difference, judge_position, last_reached, reach
from csd_lib.report.regimes import first_accepted_counts


def _matches(seed, n, p_right, length=40):
    rng = np.random.default_rng(seed)
    return [rng.random(length - i) < p_right for i in range(n)]


def test_half_difference_compares_each_prompts_own_rates():
    ms = _matches(0, 8, 0.7)
    d = half_difference(ms, 10)
    by_hand = []                                                # per prompt, over its starts with 10 tokens left
    for m in ms:
        runs = run_lengths(m)[:len(m) - 9]
        by_hand.append(np.mean(runs >= 10) - np.mean(runs >= 1) / 2)
    assert math.isclose(d.estimate, np.mean(by_hand)) and d.n == 8 and d.method == "bounded"
    h, t = first_accepted_counts(ms, 10)                        # the pooled curve is still the counts' sum
    assert math.isclose(sum(h) / sum(t), curve_from_matches(ms, max_pos=10)["unconditional"][9])
    assert d.verdict == "lower"                                 # 0.7**10 is far below 0.35
    # one prompt carries every accepted block at 10 (a few long runs, the rest never right twice):
    # a pooled rate would follow that prompt; per prompt it is one of eight, and the interval says so
    carried = [np.ones(60, bool)] + [np.tile([True, False], 15) for _ in range(7)]
    one = half_difference(carried, 10)
    assert math.isclose(one.estimate, (1 - 0.5 + 7 * (0 - 0.5 * 11 / 21)) / 8) and one.lo < one.estimate < one.hi
    assert half_difference(carried[:2], 10).verdict == "too few"
    assert half_difference(carried, None).verdict == "undefined"
    short = [np.ones(5, bool)] + carried                        # no start at 10: left out
    assert half_difference(short, 10).n == 8


def test_judge_position_gives_every_prompt_enough_starts():
    ms = [np.ones(n, bool) for n in (19, 40, 96)]
    assert judge_position(ms) == 10                             # 19 tokens: 10 starts at position 10
    assert judge_position(ms + [np.ones(15, bool)]) == 6        # 15 tokens: position 6 keeps 10 starts
    assert judge_position(ms, at=30, min_starts=5) == 15
    assert judge_position(ms + [np.ones(10, bool)]) is None     # 10 tokens: 10 starts only at position 1
    assert judge_position([]) is None
    h = judge_position(ms + [np.ones(15, bool)])
    assert min(first_accepted_counts(ms + [np.ones(15, bool)], h)[1]) == 10
    with pytest.raises(ValueError, match="at >= 2"):
        judge_position(ms, at=1)


def test_conditional_change_flat_for_iid_and_rising_for_phrases():
    ms = _matches(1, 12, 0.8)
    cv = curve_from_matches(ms, max_pos=10)
    flat = conditional_change(ms, last=10)
    acc = prev = 0                                             # by hand: every start that reached i - 1 counts at i
    for m in ms:
        r = run_lengths(m)
        for i in range(2, 11):
            ok = r[:max(len(r) - i + 1, 0)]
            acc, prev = acc + int((ok >= i).sum()), prev + int((ok >= i - 1).sum())
    assert math.isclose(cv["conditional"][0] + flat.estimate, acc / prev)
    assert abs(flat.estimate) < 0.05                           # i.i.d. matches: flat
    # a drafter right for whole phrases: after its first correct token it stays right
    phrases = [np.array(([0] * 5 + [1] * 5) * 4, dtype=bool) for _ in range(8)]  # 0.5 at 1, then 0.8 and more
    assert conditional_change(phrases, last=5).verdict == "higher"
    assert conditional_change(phrases[:2], last=5).verdict == "too few"
    with pytest.raises(ValueError, match="last must be"):
        conditional_change(ms, last=1)


def test_last_reached_and_reach():
    ms = [np.ones(5, bool), np.ones(12, bool), np.ones(30, bool), np.ones(30, bool)]
    assert reach(ms, 6) == [4, 4, 4, 4, 4, 3]
    assert last_reached(ms, 30, 3) == 12 and last_reached(ms, 30, 2) == 30 and last_reached(ms[:1], 30, 3) == 5
    with pytest.raises(ValueError, match="no prompt"):
        last_reached([np.ones(0, bool)], 30, 3)


def test_fig2_match_says_what_matches():
    paperlike = fig2_match([0.75 * 0.93 ** i for i in range(30)])
    assert paperlike.pos1_in_range and paperlike.first_below == 29 and "inside" in paperlike.says()
    fast = fig2_match([0.76 * 0.6 ** i for i in range(30)])
    assert fast.pos1_in_range and fast.first_below == 5 and "from position 5" in fast.says()
    assert not fig2_match([0.95] * 10).pos1_in_range and fig2_match([0.95] * 10).first_below is None
    assert math.isnan(fig2_match([0.95] * 10).late)
    with pytest.raises(ValueError, match="position 1"):
        fig2_match([float("nan")])
