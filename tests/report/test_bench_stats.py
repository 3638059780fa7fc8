"""csd_lib.report.bench_stats.bootstrap_median_ci: a percentile bootstrap interval of the median."""
import math

import numpy as np

from csd_lib.report.bench_stats import bootstrap_median_ci


def test_empty_input_gives_nan_bounds():
    lo, hi = bootstrap_median_ci([])
    assert math.isnan(lo) and math.isnan(hi)


def test_constant_and_single_values_give_a_point():
    assert bootstrap_median_ci([2.5] * 7) == [2.5, 2.5]
    assert bootstrap_median_ci([1.7]) == [1.7, 1.7]


def test_two_values_bounds_lie_in_their_range():
    # resampled medians of (2, 4) are 2, 3 or 4 (probabilities 1/4, 1/2, 1/4): a 95% interval spans them
    assert bootstrap_median_ci([2.0, 4.0]) == [2.0, 4.0]
    assert bootstrap_median_ci([2.0, 4.0], level=0.4) == [3.0, 3.0]


def test_reproducible_with_a_seed_and_bracketing_the_median():
    v = np.random.default_rng(1).lognormal(0.3, 0.4, size=25)
    a = bootstrap_median_ci(v, seed=3)
    assert a == bootstrap_median_ci(list(v), seed=3)  # any iterable, same seed: same interval
    assert a[0] < float(np.median(v)) < a[1]
    narrow = bootstrap_median_ci(v, seed=3, level=0.5)
    assert a[0] <= narrow[0] <= narrow[1] <= a[1]  # a lower level gives a nested, narrower interval
    assert bootstrap_median_ci(iter(v), seed=3) == a  # a generator is read once


def test_coverage_of_the_true_median_is_roughly_the_level():
    rng = np.random.default_rng(0)
    true_median = 1.0  # exponential with scale 1/ln 2 has median 1
    hits = 0
    n_trials = 200
    for i in range(n_trials):
        lo, hi = bootstrap_median_ci(rng.exponential(1 / math.log(2), size=41), n_boot=400, seed=i)
        hits += lo <= true_median <= hi
    assert 0.85 <= hits / n_trials <= 0.995
