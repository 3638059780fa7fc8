"""Intervals over prompts: a direction only beyond the noise, never from too few prompts to tell.

A :class:`Difference` is ``a - b`` over the same prompts with its interval: of a mean or a median of
paired per-prompt values (:func:`paired_difference`), of two pooled rates with the prompts as clusters
(:func:`rate_difference`), and a count's own interval (``_count_interval``, held to its coverage by the
tests). An undefined rate stays NaN. The appendix notebook (notebooks/99_appendix_how_the_numbers_are_computed.ipynb) shows each method.
No model, no I/O.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np


# # Prompts are the unit of noise. From ``min_prompts(level)`` prompts on (6 at 95%) an interval of a
# mean is a sign-flip (randomization) interval: exact, whatever the tails, when each prompt's
# difference is symmetric about the true one. Below that no sign-flip test can reach the level (its
# smallest two-sided p-value is 2 ** (1 - n)), and from MIN_PROMPTS (3) prompts the interval is
# Student's t with n - 1 degrees of freedom (exact for normal differences, wide: t = 4.30 at n = 3).
# A median needs the sign test, hence ``min_prompts(level)`` prompts. A mean of values known to lie in
# [lo, hi] (per-prompt rates and their differences) can instead take Gaffke's interval, from MIN_PROMPTS
# prompts: no symmetry assumed, so it holds where a few prompts carry every hit (zero-inflated, bimodal
# per-prompt values), at the price of width. With fewer prompts the result says so
# (``Difference.too_few``) and never gives a direction. tests/report/test_claims_coverage.py measures the
# coverage of all of them on constructed data.

MIN_PROMPTS = 3           # fewest prompts for any interval (Student's t with 2 degrees of freedom)
EXACT_FLIPS = 16          # up to this many prompts every sign flip is enumerated; above, ``n_flips`` random ones
N_FLIPS = 9999            # random sign flips above EXACT_FLIPS prompts (a Monte Carlo test stays exact)
N_DRAWS = 4000            # uniform-spacing draws of Gaffke's interval (values with known bounds)
TOO_FEW = "too few prompts to decide"
# Directions of a Difference (``Difference.verdict``) and verdicts of a claim with an expected direction.
HIGHER, LOWER, SAME, FEW, UNDEFINED = "higher", "lower", "no difference", "too few", "undefined"
HOLDS, BROKEN, UNSETTLED = "holds", "broken", "not settled"


def min_prompts(level: float = 0.95) -> int:
    """Fewest prompts at which a two-sided sign-flip or sign test can reach ``level``: ``2 ** (1 - n) <= 1 - level``
    (6 at 95%); below it a mean gets the t interval (from MIN_PROMPTS prompts) and a median none."""
    alpha = 1 - _check_level(level)
    return 1 + math.ceil(math.log2(1 / alpha) - 1e-9)


def _check_level(level) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0 < level < 1:
        raise ValueError(f"level must be a number strictly between 0 and 1 (e.g. 0.95), got {level!r}")
    return float(level)


@dataclass(frozen=True)
class Difference:
    """``a - b`` over the same prompts with its interval (NaN when undefined; see ``too_few``)."""
    estimate: float
    lo: float
    hi: float
    n: int              # prompts that carried the comparison
    level: float = 0.95
    too_few: bool = False   # too few prompts for any interval at ``level``: no direction, lo = hi = NaN
    note: str = ""          # why, when the reason is not the count alone
    method: str = ""        # the interval's: "sign-flip", "t", "sign test"; "" when there is none

    @property
    def defined(self) -> bool:
        """An estimate and an interval exist (False when undefined or too few)."""
        return not (math.isnan(self.estimate) or math.isnan(self.lo) or math.isnan(self.hi))

    @property
    def sign(self) -> int:
        """+1 (a higher beyond the noise), -1 (lower), 0 (no difference beyond the noise, too few or undefined)."""
        if not self.defined:
            return 0
        return 1 if self.lo > 0 else -1 if self.hi < 0 else 0

    @property
    def verdict(self) -> str:
        """``higher``, ``lower``, ``no difference`` (beyond the noise), ``too few`` or ``undefined``."""
        if math.isnan(self.estimate):
            return UNDEFINED
        if self.too_few:
            return FEW
        if not self.defined:
            return UNDEFINED
        return HIGHER if self.sign > 0 else LOWER if self.sign < 0 else SAME

    def claim(self, expected: int) -> str:
        """Verdict of the claim "a is ``expected`` (+1 higher, -1 lower) than b": ``holds`` or ``broken``
        (beyond the noise either way), ``not settled``, ``too few`` or ``undefined``."""
        if expected not in (1, -1):
            raise ValueError(f"expected must be +1 (a higher than b) or -1 (a lower), got {expected!r}")
        v = self.verdict
        if v in (FEW, UNDEFINED):
            return v
        return UNSETTLED if self.sign == 0 else HOLDS if self.sign == expected else BROKEN

    def interval(self, digits: int = 3) -> str:
        """'+0.012 [+0.004, +0.020], 95% interval over n = 12 prompts', or why there is none; more digits
        where a bound that is not 0 would round to it."""
        if math.isnan(self.estimate) or (not self.defined and not self.too_few):
            return f"undefined (n = {self.n} prompts)"
        if self.too_few:
            why = self.note or f"a {100 * self.level:g}% interval needs at least {MIN_PROMPTS}"
            return f"n = {self.n} prompts; {why}"
        while digits < 6 and any(v != 0 and abs(v) < 0.5 * 10 ** -digits for v in (self.lo, self.hi)):
            digits += 1  # a bound that is not 0 never prints as +-0.00 (it would read as touching 0)
        f = lambda v: f"{v:+.{digits}f}"  # noqa: E731
        return (f"{f(self.estimate)} [{f(self.lo)}, {f(self.hi)}], {100 * self.level:g}% interval over "
                f"n = {self.n} prompts")

    def word(self, more: str = "higher", less: str = "lower", same: str = "no different beyond the noise",
             undefined: str = "undefined", few: str = TOO_FEW) -> str:
        """The direction in words: ``more``/``less`` only when the interval excludes 0; ``few`` when too few."""
        v = self.verdict
        return {HIGHER: more, LOWER: less, SAME: same, FEW: few, UNDEFINED: undefined}[v]

    def says(self, more: str = "higher", less: str = "lower", same: str = "no different beyond the noise",
             digits: int = 3, few: str = TOO_FEW) -> str:
        """``word`` followed by the interval in brackets, for a notebook sentence."""
        return f"{self.word(more, less, same, few=few)} ({self.interval(digits)})"


def _paired_arrays(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(list(a), dtype=float), np.asarray(list(b), dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired values need two 1-D sequences of the same length (one value per prompt), "
                         f"got shapes {a.shape} and {b.shape}")
    return a, b


def _check_flips(n_flips) -> int:
    if isinstance(n_flips, bool) or not isinstance(n_flips, (int, np.integer)) or n_flips < 99:
        raise ValueError(f"n_flips must be an integer >= 99 (random sign flips above {EXACT_FLIPS} prompts), "
                         f"got {n_flips!r}")
    return int(n_flips)


@functools.lru_cache(maxsize=4)
def _subsets(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every non-empty subset of n prompts as rows of 0/1 (2**n - 1, n), and each subset's size."""
    rows = ((np.arange(1, 2 ** n)[:, None] >> np.arange(n)) & 1).astype(np.float64)  # (2**n - 1, n)
    return rows, rows.sum(axis=1)


@functools.lru_cache(maxsize=4)
def _random_subsets(n: int, n_flips: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n_flips`` random sign flips of n prompts as rows of 0/1 (negated or not), the empty ones dropped."""
    bits = np.frombuffer(np.random.default_rng(seed).bytes(n_flips * ((n + 7) // 8)), dtype=np.uint8)
    rows = np.unpackbits(bits.reshape(n_flips, -1), axis=1, count=n).astype(np.float64)  # (n_flips, n)
    size = rows.sum(axis=1)
    return rows[size > 0], size[size > 0]


def _signflip_interval(d: np.ndarray, level: float, n_flips: int, seed: int) -> tuple[float, float]:
    """The values mu that a two-sided sign-flip test of "d is symmetric about mu" (statistic: the sum)
    does not reject at ``1 - level``: between the k-th smallest and k-th largest subset mean.

    Flipping the signs of ``d - mu`` on a subset S moves the sum below the observed one exactly when
    mean(d over S) > mu, so the test's p-value at mu counts subset means on either side of mu
    (Hartigan's typical values). Every non-empty subset up to EXACT_FLIPS prompts, else ``n_flips``
    random ones drawn with ``seed``; needs ``d.size >= min_prompts(level)``.
    """
    rows, size = _subsets(d.size) if d.size <= EXACT_FLIPS else _random_subsets(d.size, n_flips, seed)
    m = rows @ d / size                                                 # (subsets,) subset means
    k = int(math.floor((1 - level) / 2 * (m.size + 1) + 1e-9))          # the identity flip counts too
    m = np.partition(m, [k - 1, m.size - k])
    return float(m[k - 1]), float(m[m.size - k])


def _sign_test_interval(d: np.ndarray, level: float) -> tuple[float, float]:
    """Distribution-free interval of the median: order statistics ``d_(j), d_(n+1-j)`` of the sign test."""
    n, alpha = d.size, 1 - level
    cdf = np.cumsum([math.comb(n, i) for i in range(n + 1)]) / 2 ** n  # P(Bin(n, 1/2) <= i)
    j = int(np.sum(2 * cdf[: n // 2 + 1] <= alpha + 1e-12))
    s = np.sort(d)
    return float(s[j - 1]), float(s[n - j])


def _t_central(t: float, df: int) -> float:
    """P(|T| < t) for Student's T with integer ``df`` (closed form, Abramowitz & Stegun 26.7.3-4)."""
    th = math.atan(t / math.sqrt(df))
    c2, term, total = math.cos(th) ** 2, 1.0, 0.0
    if df % 2:                               # odd: (2/pi) (theta + sin cos (1 + 2/3 cos^2 + 2.4/3.5 cos^4 ...))
        for j in range(1, (df - 1) // 2):
            term *= 2 * j / (2 * j + 1) * c2
            total += term
        series = math.sin(th) * math.cos(th) * (1 + total) if df > 1 else 0.0
        return 2 / math.pi * (th + series)
    for j in range(1, df // 2):              # even: sin (1 + 1/2 cos^2 + 1.3/2.4 cos^4 ...)
        term *= (2 * j - 1) / (2 * j) * c2
        total += term
    return math.sin(th) * (1 + total)


def t_quantile(level: float, df: int) -> float:
    """The t with ``P(|T| < t) = level`` for Student's T with ``df`` (integer >= 1) degrees of freedom."""
    level = _check_level(level)
    if isinstance(df, bool) or int(df) != df or df < 1:
        raise ValueError(f"df must be an integer >= 1, got {df!r}")
    lo, hi = 0.0, 1.0
    while _t_central(hi, int(df)) < level:
        hi *= 2
    for _ in range(200):                     # bisection to float precision
        mid = (lo + hi) / 2
        if not lo < mid < hi:
            break
        lo, hi = (mid, hi) if _t_central(mid, int(df)) < level else (lo, mid)
    return hi


@functools.lru_cache(maxsize=8)
def _spacings(m: int, seed: int) -> np.ndarray:
    """N_DRAWS uniform spacings of [0, 1] into m parts (Dirichlet(1, ..., 1)), drawn with ``seed``."""
    w = np.random.default_rng(seed).exponential(size=(N_DRAWS, m))
    w /= w.sum(axis=1, keepdims=True)                                     # (N_DRAWS, m)
    w.flags.writeable = False
    return w


def _bounded_interval(d: np.ndarray, bounds: tuple[float, float], level: float, seed: int) -> tuple[float, float]:
    """Gaffke's interval of the mean of values in ``bounds`` (Learned-Miller and Thomas 2019's bound).

    The upper end is the ``(1 + level) / 2`` quantile over uniform spacings ``w`` (Dirichlet(1, ..., 1),
    N_DRAWS draws with ``seed``) of ``sum(w * [sorted d, hi])``: the largest mean the sample allows when
    a share ``w_last`` of the prompts, unseen, sits at the upper bound; the lower end mirrors it. It is
    at least as tight as Anderson's distribution-free bound; that it keeps its level for every bounded
    law is conjectured, not proved, and tests/report/test_claims_coverage.py measures it.
    """
    lo, hi = bounds
    z = np.sort(np.clip((d - lo) / (hi - lo), 0.0, 1.0))                  # (n,) in [0, 1]
    w = _spacings(z.size + 1, seed)                                       # (N_DRAWS, n + 1)
    tail = (1 - level) / 2
    up = float(np.quantile(w @ np.append(z, 1.0), 1 - tail))
    down = float(np.quantile(w @ np.insert(z, 0, 0.0), tail))
    return lo + down * (hi - lo), lo + up * (hi - lo)


def _check_bounds(bounds) -> tuple[float, float]:
    ok = isinstance(bounds, (tuple, list)) and len(bounds) == 2 and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v) for v in bounds)
    if not ok or not bounds[0] < bounds[1]:
        raise ValueError(f"bounds must be (lo, hi) with lo < hi, the range every per-prompt difference lies in, "
                         f"got {bounds!r}")
    return float(bounds[0]), float(bounds[1])


def _mean_interval(d: np.ndarray, level: float, n_flips: int, seed: int) -> tuple[float, float, str]:
    """Interval of the mean of ``d`` (n >= MIN_PROMPTS): sign-flip from ``min_prompts(level)`` on, else t."""
    if d.size >= min_prompts(level):
        return (*_signflip_interval(d, level, n_flips, seed), "sign-flip")
    half = t_quantile(level, d.size - 1) * float(np.std(d, ddof=1)) / math.sqrt(d.size)
    return float(np.mean(d)) - half, float(np.mean(d)) + half, "t"


def paired_difference(a, b, n_flips: int = N_FLIPS, seed: int = 0, level: float = 0.95,
                      stat: str = "mean", bounds=None) -> Difference:
    """``stat(a) - stat(b)`` over prompts, where ``a[i]`` and ``b[i]`` were measured on prompt ``i``.

    ``stat="mean"``: the mean of the per-prompt differences ``d = a - b``; from ``min_prompts(level)``
    prompts (6 at 95%) with the sign-flip interval (exact when each ``d[i]`` is symmetric about the
    mean, heavy tails included; every flip enumerated up to EXACT_FLIPS prompts, ``n_flips`` random
    ones drawn with ``seed`` above), from MIN_PROMPTS (3) to 5 prompts with Student's t interval
    (n - 1 degrees of freedom). ``stat="median"``: the median of ``d`` with the sign test's
    order-statistic interval (exact for any continuous ``d``), from ``min_prompts(level)`` prompts.
    ``bounds=(lo, hi)``, the range every ``d[i]`` lies in (e.g. (-1, 1) for two rates): the mean with
    Gaffke's interval (method ``bounded``, :func:`_bounded_interval`, draws with ``seed``) from
    MIN_PROMPTS prompts, which assumes no symmetry: honest where a few prompts carry every hit.
    Prompts where either value is NaN are left out; none left: undefined (NaN); fewer prompts than
    the method needs: ``too_few``, no interval and no direction. ``method`` names the interval.
    """
    if stat not in ("mean", "median") or (bounds is not None and stat != "mean"):
        raise ValueError(f"stat must be 'mean' or 'median' ('mean' with bounds), got {stat!r}")
    level, n_flips = _check_level(level), _check_flips(n_flips)
    bounds = None if bounds is None else _check_bounds(bounds)
    a, b = _paired_arrays(a, b)
    keep = ~(np.isnan(a) | np.isnan(b))
    d = a[keep] - b[keep]
    n = int(d.size)
    if n == 0:
        return Difference(math.nan, math.nan, math.nan, 0, level)
    est = float(np.mean(d) if stat == "mean" else np.median(d))
    if not np.isfinite(d).all():
        raise ValueError(f"paired values must be finite or NaN (NaN leaves the prompt out), got {d.tolist()}")
    if bounds is not None and (d.min() < bounds[0] - 1e-12 or d.max() > bounds[1] + 1e-12):
        raise ValueError(f"a per-prompt difference lies outside bounds {bounds}: {d.tolist()}")
    if stat == "median":
        if n < min_prompts(level):
            return Difference(est, math.nan, math.nan, n, level, too_few=True,
                              note=f"a {100 * level:g}% interval of the median needs at least {min_prompts(level)}")
        return Difference(est, *_sign_test_interval(d, level), n, level, method="sign test")
    if n < MIN_PROMPTS:
        return Difference(est, math.nan, math.nan, n, level, too_few=True)
    if bounds is not None:
        return Difference(est, *_bounded_interval(d, bounds, level, seed), n, level, method="bounded")
    lo, hi, method = _mean_interval(d, level, n_flips, seed)
    return Difference(est, lo, hi, n, level, method=method)


def rate_difference(hits_a, totals_a, hits_b, totals_b, n_flips: int = N_FLIPS, seed: int = 0,
                    level: float = 0.95) -> Difference:
    """Pooled rate ``sum(hits_a)/sum(totals_a)`` minus the same for ``b``, prompts as clusters, in pairs.

    Each argument holds one count per prompt (e.g. accepted and reviewed drafted tokens of a pair
    under two settings; totals >= 0, floats allowed, e.g. tokens over cost for SWI). The estimate is
    the difference of the pooled rates, NaN (never 0) when a side has a zero denominator. The
    interval is the interval of a mean (:func:`paired_difference`: sign-flip from ``min_prompts(level)``
    prompts, t from MIN_PROMPTS) of the prompts' jackknife pseudo-values ``n est - (n - 1) est_without_i``
    (each prompt dropped from both sides at once), widened if needed to contain the estimate. Only
    prompts with a count on either side carry the comparison (``n``); fewer than MIN_PROMPTS, a side
    whose rate rests on one prompt, or a side whose hits come from fewer than MIN_PROMPTS prompts (its
    spread over prompts would be a few prompts' say, or none: every prompt at 0): ``too_few``.
    """
    level, n_flips = _check_level(level), _check_flips(n_flips)
    ha, ta = _paired_arrays(hits_a, totals_a)
    hb, tb = _paired_arrays(hits_b, totals_b)
    _paired_arrays(ha, hb)
    for name, x in (("hits_a", ha), ("totals_a", ta), ("hits_b", hb), ("totals_b", tb)):
        if not np.isfinite(x).all() or (name.startswith("totals") and (x < 0).any()):
            raise ValueError(f"{name} must hold one finite count per prompt{' (>= 0)' if 'totals' in name else ''}, "
                             f"got {x.tolist()}")
    carry = (ta > 0) | (tb > 0) | (ha != 0) | (hb != 0)
    ha, ta, hb, tb = ha[carry], ta[carry], hb[carry], tb[carry]
    n = int(carry.sum())
    sa, sb = ta.sum(), tb.sum()
    if sa <= 0 or sb <= 0:
        return Difference(math.nan, math.nan, math.nan, n, level)
    est = float(ha.sum() / sa - hb.sum() / sb)
    if n < MIN_PROMPTS:
        return Difference(est, math.nan, math.nan, n, level, too_few=True)
    ra, rb = sa - ta, sb - tb                                          # (n,) totals without prompt i
    if (ra <= 0).any() or (rb <= 0).any():
        return Difference(est, math.nan, math.nan, n, level, too_few=True,
                          note="one side's rate rests on a single prompt")
    with_hits = min(int((ha != 0).sum()), int((hb != 0).sum()))
    if with_hits < MIN_PROMPTS:
        return Difference(est, math.nan, math.nan, n, level, too_few=True,
                          note=f"one side's hits come from {with_hits} prompts, an interval needs {MIN_PROMPTS}")
    without = (ha.sum() - ha) / ra - (hb.sum() - hb) / rb              # (n,) leave-one-prompt-out estimates
    lo, hi, method = _mean_interval(n * est - (n - 1) * without, level, n_flips, seed)
    return Difference(est, min(lo, est), max(hi, est), n, level, method=method)


def rate(hits: int, total: int) -> float:
    """``hits / total``, NaN (never 0) when nothing was counted."""
    return hits / total if total else math.nan


def _count_interval(hits: int, total: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval of a count out of ``total``: coverage at least ``level`` for every rate
    (NaN, NaN when ``total`` is 0)."""
    if isinstance(hits, bool) or isinstance(total, bool) or int(hits) != hits or int(total) != total:
        raise ValueError(f"hits and total must be integers, got {hits!r} of {total!r}")
    if total < 0 or hits < 0 or hits > total:
        raise ValueError(f"need 0 <= hits <= total, got {hits} of {total}")
    alpha = 1 - _check_level(level)
    if total == 0:
        return math.nan, math.nan
    hits, total = int(hits), int(total)
    i = np.arange(total + 1)
    lg = np.array([math.lgamma(v + 1) for v in range(total + 1)])
    logc = lg[-1] - lg - lg[::-1]                                      # (total + 1,) log C(total, i)

    def tail(k: int, p: float) -> float:  # P(X >= k), X ~ Bin(total, p): increasing in p
        lp = logc[k:] + i[k:] * math.log(p) + (total - i[k:]) * math.log1p(-p)  # (total + 1 - k,)
        mx = lp.max()
        return float(math.exp(mx) * np.exp(lp - mx).sum())

    def solve(k: int, target: float) -> float:  # the p in (0, 1) with tail(k, p) = target, by bisection
        lo, hi = 0.0, 1.0
        while True:
            mid = (lo + hi) / 2
            if not lo < mid < hi:
                return mid
            lo, hi = (mid, hi) if tail(k, mid) < target else (lo, mid)

    # lower: P(X >= hits) = alpha / 2; upper: P(X <= hits) = alpha / 2, i.e. P(X >= hits + 1) = 1 - alpha / 2
    return (0.0 if hits == 0 else solve(hits, alpha / 2)), (1.0 if hits == total else solve(hits + 1, 1 - alpha / 2))
