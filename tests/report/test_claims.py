"""The words that notebooks compute their claims with (csd_lib.claims)."""
import math

import numpy as np
import pytest

from csd_lib.report.words import compare, paper_k_entries, pct, trend


def test_compare_follows_the_numbers_and_the_tolerance():
    assert compare(2.0, 1.0) == "higher" and compare(1.0, 2.0) == "lower"
    assert compare(1.04, 1.0, tol=0.05) == "about the same"
    assert compare(1.06, 1.0, tol=0.05, more="up") == "up"
    assert compare(math.nan, 1.0, same="n/a") == "n/a"
    with pytest.raises(ValueError, match="tol must be >= 0"):
        compare(1, 2, tol=-1)


def test_trend_compares_the_first_value_with_the_rest():
    assert trend([0.5, 0.8, 0.9]) == "rises"
    assert trend([0.9, 0.5, 0.4]) == "falls"
    assert trend([0.95, 0.94, 0.96, 0.95], tol=0.03) == "stays flat"   # a flat 0.95 curve
    assert trend([0.5, math.nan, 0.9]) == "rises"
    with pytest.raises(ValueError, match="at least two"):
        trend([0.5, math.nan])


def test_pct():
    assert pct(0.125, 1) == "12.5%" and pct(1) == "100%"


def test_paper_notation_of_the_shipped_t5_setting():
    # docs/REFERENCE.md: the official T5 setting [[5,14,10],[0,1,10],[0,0,10]] is k11=5, k12=14, k22=1
    k = [[5, 14, 10], [0, 1, 10], [0, 0, 10]]
    e = {x["name"]: x for x in paper_k_entries(k, ["base", "small"])}
    assert [e[n]["value"] for n in ("k11", "k12", "k13", "k22", "k23", "k33")] == [5, 14, 10, 1, 10, 10]
    assert (e["k12"]["reviewer"], e["k12"]["drafter"]) == ("target", "small")
    assert (e["k22"]["reviewer"], e["k22"]["drafter"]) == ("base", "small")
    assert "k21" not in e   # below the diagonal: never read


def test_paper_notation_rejects_a_k_of_the_wrong_size():
    with pytest.raises(ValueError, match="must be 2x2"):
        paper_k_entries([[1, 2, 3], [0, 1, 2], [0, 0, 1]], ["small"])


def test_readme_side_by_side_table_matches_the_presets():
    """The README's paper-notation table quotes each family's default K: it must be the preset's."""
    import ast
    import re
    from pathlib import Path

    from csd_lib import load_family
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The paper and this workbook side by side", 1)[1].split("\n## ", 1)[0]
    for name in ("tiny-t5", "tiny-llama"):
        row = re.search(rf"^\| `{name}` [^|]*\| `(\[\[.*?\]\])` \|[^|]*\| ([\d.]+) \|", section, re.M)
        assert row, f"README side-by-side table has no row for {name}"
        fam = load_family(name)
        assert ast.literal_eval(row.group(1)) == fam.default_k, f"README quotes an old K for {name}: update the table"
        assert float(row.group(2)) == fam.default_lenience, f"README quotes an old lenience for {name}"


# -- directions only beyond the noise (constructed data) -------------------------------------

from csd_lib.report.claims import expect
from csd_lib.report.intervals import _count_interval, min_prompts, paired_difference, rate, rate_difference, t_quantile


def test_a_difference_inside_the_noise_is_never_called_a_direction():
    rng = np.random.default_rng(0)
    said = 0
    for trial in range(200):   # equal means, per-prompt noise: a 95% interval says a direction ~5% of the time
        a, b = rng.normal(0.6, 0.05, 12), rng.normal(0.6, 0.05, 12)
        said += paired_difference(a, b, seed=trial).sign != 0
    assert said <= 25, f"{said} of 200 null comparisons called a direction"
    # notebook 03's case: 0.603 against 0.599, one call in about 180, noisy per prompt
    a = np.array([0.62, 0.58, 0.61, 0.60, 0.59, 0.62])
    d = paired_difference(a, a - np.array([0.02, -0.015, 0.01, -0.01, 0.012, 0.007]))
    assert d.sign == 0 and d.word() == "no different beyond the noise"
    assert "interval over n = 6 prompts" in d.says()


def test_a_clear_difference_gets_its_direction_and_interval():
    rng = np.random.default_rng(1)
    b = rng.normal(0.5, 0.05, 20)
    up = paired_difference(b + 0.1 + rng.normal(0, 0.01, 20), b)
    assert up.sign == 1 and up.lo > 0 and up.word("raised", "lowered") == "raised"
    assert abs(up.estimate - 0.1) < 0.02
    down = paired_difference(b, b + 0.1)
    assert down.sign == -1 and down.word() == "lower"


def test_nan_stays_nan():
    d = paired_difference([math.nan, math.nan], [0.1, 0.2])
    assert math.isnan(d.estimate) and not d.defined and d.word() == "undefined" and d.sign == 0
    assert "undefined" in d.says()
    assert math.isnan(rate(0, 0)) and rate(1, 4) == 0.25
    assert all(math.isnan(x) for x in _count_interval(0, 0))
    r = rate_difference([0, 0, 0], [0, 0, 0], [1, 2, 3], [4, 4, 4])   # a pair never reached
    assert math.isnan(r.estimate) and r.word() == "undefined"
    # a NaN prompt is left out, not counted as 0
    assert paired_difference([0.5, math.nan, 0.7], [0.4, 0.3, 0.6]).n == 2


def test_four_noisy_prompts_show_no_direction():
    # notebook 03's case: base<-mag 117/272 at l = 1 against 112/265 at l = 5, spread over 4 prompts; the old
    # percentile bootstrap called it "lower" with [-0.012, -0.001]; the t interval of the jackknife
    # pseudo-values (3 degrees of freedom) is about four times as wide and holds 0
    d = rate_difference([30, 28, 31, 23], [70, 66, 72, 57], [29, 30, 29, 29], [68, 66, 66, 72])
    assert d.method == "t" and d.sign == 0 and d.verdict == "no difference" and d.defined
    assert abs(d.estimate - (112 / 265 - 117 / 272)) < 1e-12
    assert d.says() == "no different beyond the noise (-0.008 [-0.032, +0.018], 95% interval over n = 4 prompts)"
    assert d.claim(+1) == "not settled" and expect(d, +1, "lenience lowered base<-mag") == "not settled"
    few = rate_difference([30, 28], [70, 66], [29, 30], [68, 66])
    assert few.too_few and few.verdict == "too few" and not few.defined and few.sign == 0
    assert few.says() == "too few prompts to decide (n = 2 prompts; a 95% interval needs at least 3)"
    assert few.claim(+1) == "too few" and expect(few, -1, "x") == "too few"
    big = rate_difference([60] * 8, [100] * 8, [30] * 8, [100] * 8)
    assert big.sign == 1 and abs(big.estimate - 0.3) < 1e-12 and big.lo <= 0.3 <= big.hi


def test_rate_difference_counts_only_prompts_that_carry_it_and_keeps_the_pooled_estimate():
    h_a, t_a, h_b, t_b = [5, 0, 7, 6, 4, 8, 5, 0], [10, 0, 12, 11, 9, 14, 10, 0], [3, 0, 4, 5, 2, 6, 3, 1], [10, 0, 12, 11, 9, 14, 10, 2]
    d = rate_difference(h_a, t_a, h_b, t_b)
    assert d.n == 7 and abs(d.estimate - (35 / 66 - 24 / 68)) < 1e-12   # prompt 2 has no count on either side
    assert d.sign == 1 and d.lo <= d.estimate <= d.hi
    # one side's rate rests on a single prompt: no noise estimate for it, whatever n is
    one = rate_difference([5, 0, 0, 0, 0, 0], [9, 0, 0, 0, 0, 0], [1] * 6, [4] * 6)
    assert one.too_few and one.n == 6 and "rests on a single prompt" in one.says()
    # every prompt reached, but no hit anywhere on one side: the pooled 0 has no spread over prompts,
    # so a jackknife interval would be the other side's noise alone (a degenerate, far too narrow one)
    none = rate_difference([0] * 12, [2, 1, 4, 1, 4, 1, 1, 1, 2, 4, 1, 1], [9] * 12, [20] * 12)
    assert none.too_few and none.estimate == -0.45 and "hits come from 0 prompts" in none.says()
    two = rate_difference([3, 4] + [0] * 10, [5] * 12, [9] * 12, [20] * 12)
    assert two.too_few and "hits come from 2 prompts" in two.says()
    assert not rate_difference([3, 4, 1] + [0] * 9, [5] * 12, [9] * 12, [20] * 12).too_few
    with pytest.raises(ValueError, match="totals_a must hold"):
        rate_difference([1] * 6, [-1] * 6, [1] * 6, [2] * 6)


def test_t_quantiles_match_the_tables():
    for df, t in {1: 12.706205, 2: 4.302653, 3: 3.182446, 4: 2.776445, 5: 2.570582, 30: 2.042272}.items():
        assert abs(t_quantile(0.95, df) - t) < 1e-6, df
    assert abs(t_quantile(0.99, 2) - 9.924843) < 1e-6 and abs(t_quantile(0.9, 4) - 2.131847) < 1e-6
    with pytest.raises(ValueError, match="df must be"):
        t_quantile(0.95, 0)


def test_paired_difference_t_below_six_prompts_sign_flip_from_six_on():
    assert min_prompts(0.95) == 6 and min_prompts(0.9) == 5 and min_prompts(0.99) == 8
    assert paired_difference([1, 2], [0] * 2).too_few                  # 2 prompts: no interval at all
    three = paired_difference([1, 2, 3], [0] * 3)                        # t with 2 df: 2 +- 4.303 / sqrt(3)
    assert three.method == "t" and three.sign == 0 and abs(three.hi - (2 + 4.302653 / 3 ** 0.5)) < 1e-5
    five = paired_difference([1, 2, 3, 4, 5], [0] * 5)
    assert five.method == "t" and five.sign == 1 and abs(five.lo - (3 - 2.776445 * 2.5 ** 0.5 / 5 ** 0.5)) < 1e-5
    six = paired_difference([1, 2, 3, 4, 5, 6], [0] * 6)
    assert six.method == "sign-flip" and six.sign == 1 and (six.lo, six.hi) == (1.0, 6.0)  # only all-positive decides
    assert paired_difference([1, 2, -3, 4, 5, 6], [0] * 6).sign == 0
    assert paired_difference([1, 2, 3, 4, 5], [0] * 5, level=0.9).method == "sign-flip"
    assert paired_difference([1, 2, 3, 4, 5], [0] * 5, stat="median").too_few   # the sign test needs 6 at 95%
    med = paired_difference([1, 2, 3, 4, 5, 60], [0] * 6, stat="median")
    assert med.estimate == 3.5 and (med.lo, med.hi) == (1.0, 60.0)
    # above EXACT_FLIPS prompts random flips: seeded, and the interval still holds the estimate
    d = np.random.default_rng(3).normal(0.2, 1, 40)
    r1, r2 = paired_difference(d, np.zeros(40), seed=1), paired_difference(d, np.zeros(40), seed=1)
    assert r1 == r2 and r1.lo < r1.estimate < r1.hi
    with pytest.raises(ValueError, match="level must be"):
        paired_difference([1] * 6, [0] * 6, level=95)
    with pytest.raises(ValueError, match="n_flips"):
        paired_difference([1] * 6, [0] * 6, n_flips=10)


def test_verdicts_claims_and_the_assert_helper():
    up = paired_difference([1, 2, 3, 4, 5, 6], [0] * 6)
    flat = paired_difference([1, -2, 3, -4, 5, -6], [0] * 6)
    assert (up.verdict, flat.verdict) == ("higher", "no difference")
    assert (up.claim(+1), up.claim(-1), flat.claim(-1)) == ("holds", "broken", "not settled")
    assert expect(up, +1, "x") == "holds" and expect(flat, -1, "x") == "not settled"
    # a live run that disagrees is printed, never raised
    assert expect(up, -1, "lenience lowered it") == "not this time: lenience lowered it (+3.500 [+1.000, +6.000], 95% interval over n = 6 prompts)"
    with pytest.raises(ValueError, match="expected must be"):
        up.claim(0)
    few = paired_difference([1, 2], [0, 0])
    assert few.word("up", "down", few="not enough prompts") == "not enough prompts"


def test_count_interval_covers_the_rate():
    lo, hi = _count_interval(117, 272)
    assert lo < 117 / 272 < hi and 0.3 < lo and hi < 0.5
    assert _count_interval(0, 10)[0] == 0.0 and abs(_count_interval(10, 10)[1] - 1.0) < 1e-12
    # Clopper-Pearson's closed forms at the edges: 0 of n has upper bound 1 - (alpha/2) ** (1/n)
    assert abs(_count_interval(0, 10)[1] - (1 - 0.025 ** 0.1)) < 1e-9
    assert abs(_count_interval(10, 10)[0] - 0.025 ** 0.1) < 1e-9
    with pytest.raises(ValueError, match="hits <= total"):
        _count_interval(5, 4)


def test_paired_difference_rejects_unpaired_input():
    with pytest.raises(ValueError, match="same length"):
        paired_difference([1, 2, 3], [1, 2])


def test_claims_that_need_trained_weights_are_not_checked_on_random_weights():
    from csd_lib.families.family import load_family
    from csd_lib.families.toy import random_family
    from csd_lib.report.claims import NOT_CHECKED, holds
    toy, tiny = random_family("llama", seed=0), load_family("tiny-llama")
    assert toy.random_weights and not tiny.random_weights
    assert holds(False, "drafts are accepted", family=toy) == NOT_CHECKED
    assert holds(True, "drafts are accepted", family=tiny) == "holds"
    assert holds(False, "drafts are accepted", family=tiny) == "not this time: drafts are accepted"
    assert holds(False, "drafts are accepted") == "not this time: drafts are accepted"  # no family: judged
    lower = paired_difference([0.1, 0.2, 0.1, 0.15], [0.5, 0.6, 0.55, 0.5])
    assert expect(lower, -1, "a lower rate", family=tiny) == "holds"
    assert expect(lower, +1, "a higher rate", family=toy) == NOT_CHECKED
    assert expect(lower, +1, "a higher rate", family=tiny).startswith("not this time: a higher rate (-")


def test_bounded_mean_interval_makes_room_for_prompts_it_has_not_seen():
    zeros = paired_difference([0.0] * 12, [0.4] * 12, bounds=(-0.5, 1.0))    # every prompt -0.4
    assert zeros.method == "bounded" and abs(zeros.estimate + 0.4) < 1e-12
    # a t or sign-flip interval of twelve equal values has width 0; this one leaves room for a share of
    # prompts, unseen, at either bound: at the 97.5% quantile of a Beta(1, 12) spacing, 0.265 of them
    b = 1 - 0.025 ** (1 / 12)
    assert abs(zeros.hi - (-0.4 + 1.4 * b)) < 0.02 and abs(zeros.lo - (-0.4 - 0.1 * b)) < 0.005 and zeros.sign == -1
    assert abs(paired_difference([0.0] * 12, [0.4] * 12).hi + 0.4) < 1e-12
    mixed = paired_difference([0.9, 0.8, 0.85, 0.0, 0.9, 0.7], [0.45] * 6, bounds=(-0.5, 1.0), seed=3)
    assert mixed.lo < mixed.estimate < mixed.hi and -0.5 <= mixed.lo and mixed.hi <= 1.0
    assert mixed == paired_difference([0.9, 0.8, 0.85, 0.0, 0.9, 0.7], [0.45] * 6, bounds=(-0.5, 1.0), seed=3)
    assert paired_difference([0.5, 0.6], [0.1, 0.1], bounds=(-1, 1)).too_few    # from MIN_PROMPTS on, as the mean
    assert paired_difference([0.5, 0.6, float("nan"), 0.7], [0.1] * 4, bounds=(-1, 1)).n == 3
    with pytest.raises(ValueError, match="outside bounds"):
        paired_difference([0.5, 1.6, 0.7], [0.1] * 3, bounds=(-1, 1))
    with pytest.raises(ValueError, match="bounds must be"):
        paired_difference([0.5] * 3, [0.1] * 3, bounds=(1, -1))
    with pytest.raises(ValueError, match="'mean' with bounds"):
        paired_difference([0.5] * 6, [0.1] * 6, bounds=(-1, 1), stat="median")


def test_a_bound_that_is_not_zero_never_prints_as_zero():
    d = paired_difference([-0.02, -0.03, -0.025, -0.018, -0.004, -0.03], [0] * 6)  # the upper bound is -0.004
    assert d.sign == -1 and d.interval(digits=2) == "-0.021 [-0.030, -0.004], 95% interval over n = 6 prompts"
    assert paired_difference([1, 2, 3, 4, 5, 6], [0] * 6).interval(digits=2).startswith("+3.50 [+1.00, +6.00]")
