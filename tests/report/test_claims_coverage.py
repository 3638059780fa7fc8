"""The intervals of csd_lib.claims keep their stated coverage at small n, measured by simulation.

Each process draws per-prompt data with a known true difference; the coverage of a cell is the
share of its stated intervals (trials not ``too few``) that hold the truth: the t interval at 3 to 5
prompts, the sign-flip (or, for a median, the sign test's) interval from ``min_prompts`` (6 at 95%) on,
Gaffke's interval of a bounded mean from 3 prompts. A cell must state an interval in at least half its
trials (rate_difference declines when a side's hits come from fewer than 3 prompts); with fewer prompts
than its method needs every result must say ``too few``. ``python tests/report/test_claims_coverage.py``
prints the whole table, with the processes these methods do not claim to cover (strong skew,
heavy-tailed totals, a pooled rate where a few prompts carry every hit) below a rule.
"""
import math
import sys

import numpy as np
import pytest

from csd_lib.report.intervals import MIN_PROMPTS, _count_interval, min_prompts, paired_difference, rate_difference

LEVEL, FLOOR = 0.95, 0.93          # nominal level, and the least coverage a cell may show
SMALL_N, SPOT_N = range(3, 13), (20, 50)
TRIALS, SPOT_TRIALS = 2000, 600    # Monte Carlo standard error about 0.005 and 0.009 at 95%


def _beta_moments(a, b):
    return a / (a + b), a * (a + 1) / ((a + b) * (a + b + 1))


# -- processes: (draw(rng, n) -> Difference, true difference) ---------------------------------

def _paired(sample, truth, stat="mean"):
    def draw(rng, n):
        b = rng.normal(0.6, 0.1, n)            # each prompt's own level, shared by both sides
        return paired_difference(b + sample(rng, n), b, stat=stat)
    return draw, truth


def _rates(p_a, totals, mix=0.9, u=(2, 2)):
    """Per-prompt binomial rates: p_a ~ Beta(p_a), p_b = mix p_a + (1 - mix) Beta(u) (the same prompt,
    correlated), totals per side from ``totals(rng, p)``; truth from the moments (the ratio of expectations)."""
    def draw(rng, n):
        pa = rng.beta(*p_a, n)
        pb = mix * pa + (1 - mix) * rng.beta(*u, n)
        ta, tb = totals(rng, pa), totals(rng, pb)
        return rate_difference(rng.binomial(ta, pa), ta, rng.binomial(tb, pb), tb)
    (m1, m2), (u1, u2) = _beta_moments(*p_a), _beta_moments(*u)
    mb1 = mix * m1 + (1 - mix) * u1
    mb2 = mix ** 2 * m2 + 2 * mix * (1 - mix) * m1 * u1 + (1 - mix) ** 2 * u2
    return draw, (m1, m2), (mb1, mb2)


def _uniform_totals(lo, hi):
    draw, (m1, _), (mb1, _) = _rates((6, 4), lambda rng, p: rng.integers(lo, hi + 1, p.size))
    return draw, m1 - mb1                       # totals independent of the rate: the ratio is E[p]


def _growing_totals(scale=60):
    """Totals that grow with the rate (1 + Poisson(scale p)): a lenient review reaches further."""
    draw, (m1, m2), (mb1, mb2) = _rates((3, 3), lambda rng, p: 1 + rng.poisson(scale * p))
    return draw, (m1 + scale * m2) / (1 + scale * m1) - (mb1 + scale * mb2) / (1 + scale * mb1)


def _small_totals():
    draw, (m1, _), (mb1, _) = _rates((17, 3), lambda rng, p: rng.integers(2, 11, p.size))
    return draw, m1 - mb1


def _carried(share, n_lo=10, n_hi=30):
    """Per prompt, over its starts (n_lo to n_hi, as at the position 01 judges): the first token accepted
    with p1 ~ Beta(17, 3), and the whole run given that with c ~ Beta(9, 1) on a ``share`` of the prompts,
    never on the rest (zero-inflated, bimodal per prompt). The claim: mean of u_h - u_1 / 2, in [-1/2, 1/2]."""
    def counts(rng, n):
        starts = rng.integers(n_lo, n_hi + 1, n)
        first = rng.binomial(starts, rng.beta(17, 3, n))
        c = np.where(rng.random(n) < share, rng.beta(9, 1, n), 0.0)
        return rng.binomial(first, c), first, starts
    return counts, share * 0.9 * 0.85 - 0.85 / 2


def _half_rate(share):
    counts, truth = _carried(share)

    def draw(rng, n):
        h, first, starts = counts(rng, n)
        return paired_difference(h / starts, first / starts / 2, bounds=(-0.5, 0.5))
    return draw, truth


def _half_rate_pooled(share):
    counts, truth = _carried(share)

    def draw(rng, n):
        h, first, starts = counts(rng, n)
        return rate_difference(h, starts, first / 2, starts)
    return draw, truth        # the starts do not depend on the prompt's kind: the pooled truth is the same


CLAIMED = {
    "normal differences": _paired(lambda rng, n: rng.normal(0.3, 1.0, n), 0.3),
    "heavy-tailed differences (t, 3 df)": _paired(lambda rng, n: 0.1 + rng.standard_t(3, n), 0.1),
    "skewed differences (skewness 0.5)": _paired(lambda rng, n: (rng.gamma(16, 1, n) - 16) / 4, 0.0),
    "median of lognormal differences": _paired(lambda rng, n: rng.lognormal(0, 1, n) - 1, 0.0, stat="median"),
    "binomial rates, totals 5-80": _uniform_totals(5, 80),
    "binomial rates, totals grow with the rate": _growing_totals(),
    "binomial rates, totals 2-10, rates near 0.85": _small_totals(),
    "bounded mean: 15% of prompts carry every hit (zero-inflated)": _half_rate(0.15),
    "bounded mean: 15% of prompts never hit (bimodal)": _half_rate(0.85),
}


def _lognormal_totals():
    draw, (m1, _), (mb1, _) = _rates((2, 5), lambda rng, p: 1 + rng.lognormal(3, 1, p.size).astype(int))
    return draw, m1 - mb1


LIMITS = {  # reported by the table, not claimed
    "skewed differences (skewness 1)": _paired(lambda rng, n: (rng.gamma(4, 1, n) - 4) / 2, 0.0),
    "skewed differences (skewness 2)": _paired(lambda rng, n: rng.exponential(1, n) - 1, 0.0),
    "binomial rates, lognormal totals (a few prompts carry most)": _lognormal_totals(),
    "pooled rates: 15% of prompts carry every hit (zero-inflated)": _half_rate_pooled(0.15),
    "pooled rates: 15% of prompts never hit (bimodal)": _half_rate_pooled(0.85),
}


def coverage(process, n: int, trials: int, seed: int) -> tuple[float, int]:
    """(share of the stated intervals that hold the truth, NaN when none; trials that were too few to decide)."""
    draw, truth = process
    rng = np.random.default_rng(seed)
    held = few = 0
    for _ in range(trials):
        d = draw(rng, n)
        few += d.too_few
        held += d.defined and d.lo <= truth <= d.hi
    return (held / (trials - few) if few < trials else math.nan), few


def table(processes, ns, trials: int, spot_trials: int) -> dict:
    return {name: {n: coverage(p, n, spot_trials if n in SPOT_N else trials, 1000 * i + n) for n in ns}
            for i, (name, p) in enumerate(processes.items())}


def _needs(name: str) -> int:
    return min_prompts(LEVEL) if name.startswith("median") else MIN_PROMPTS


def test_every_claimed_process_keeps_93_percent_at_every_small_n():
    assert (MIN_PROMPTS, min_prompts(LEVEL)) == (3, 6)
    cov = table(CLAIMED, list(SMALL_N) + list(SPOT_N), TRIALS, SPOT_TRIALS)
    low = {(name, n): (c, few) for name, row in cov.items() for n, (c, few) in row.items()
           if n >= _needs(name) and not (c >= FLOOR and few <= (SPOT_TRIALS if n in SPOT_N else TRIALS) / 2)}
    assert not low, f"coverage below {FLOOR:.0%} (or too few to decide in more than half the trials) at {low}"
    for name, row in cov.items():   # below what its method needs, a process gets no interval at all
        assert all(few == TRIALS for n, (_, few) in row.items() if n < _needs(name)), (name, row)


@pytest.mark.parametrize("n", [1, 2])
def test_below_three_prompts_every_result_says_too_few(n):
    for name, (draw, _) in CLAIMED.items():
        rng = np.random.default_rng(n)
        for _ in range(20):
            d = draw(rng, n)
            assert d.too_few and d.sign == 0 and d.verdict == "too few", (name, n, d)
            assert d.says().startswith(f"too few prompts to decide (n = {n} prompts")


def test_count_interval_covers_every_rate():
    """Clopper-Pearson: exact coverage (summed over the binomial) at least the level, at every rate of a grid."""
    for total in (1, 5, 12, 40):
        bounds = [_count_interval(h, total, LEVEL) for h in range(total + 1)]
        h = np.arange(total + 1)
        logc = np.array([math.lgamma(total + 1) - math.lgamma(i + 1) - math.lgamma(total - i + 1) for i in h])
        for p in np.linspace(0.001, 0.999, 300):
            pmf = np.exp(logc + h * math.log(p) + (total - h) * math.log1p(-p))
            cover = sum(pr for pr, (lo, hi) in zip(pmf, bounds) if lo <= p <= hi)
            assert cover >= LEVEL - 1e-9, (total, p, cover)


if __name__ == "__main__":  # the whole table, claimed processes first
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else TRIALS
    ns = list(SMALL_N) + list(SPOT_N)
    print(f"coverage of 95% intervals ({trials} trials per cell, {SPOT_TRIALS} at n = 20, 50; 'few' = too few to decide)")
    print("process".ljust(64) + "".join(f"{n:>7}" for n in ns))
    for procs in (CLAIMED, LIMITS):
        for name, row in table(procs, ns, trials, SPOT_TRIALS).items():
            print(name.ljust(64) + "".join(f"{'few' if few == (SPOT_TRIALS if n in SPOT_N else trials) else f'{c:.3f}':>7}"
                                           for n, (c, few) in row.items()))
        print("-" * (64 + 7 * len(ns)))
