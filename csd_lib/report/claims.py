"""Words for claims computed from results, so that notebook prose follows its own output.

A notebook states a measured direction ("CSD needs fewer target calls than SD") through these
helpers instead of writing it once by hand: rerun on another family or prompt set, the
sentence changes with the numbers. A direction is said only beyond the noise over prompts
(:func:`paired_difference`, :func:`rate_difference`); an undefined rate stays NaN. Pure
functions of numbers; no model, no I/O.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def compare(a: float, b: float, tol: float = 0.0, more: str = "higher", less: str = "lower",
            same: str = "about the same") -> str:
    """``more`` if a > b + tol, ``less`` if a < b - tol, else ``same`` (nan compares as ``same``)."""
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}; pass the size of a difference to ignore")
    if math.isnan(a) or math.isnan(b):
        return same
    if a > b + tol:
        return more
    if a < b - tol:
        return less
    return same


def trend(values, tol: float = 0.0, up: str = "rises", down: str = "falls", flat: str = "stays flat") -> str:
    """Direction of a sequence from its first value to the mean of the rest (nan entries skipped).

    ``tol`` is the change to ignore, so a curve that wobbles by less than ``tol`` "stays flat".
    """
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if len(vals) < 2:
        raise ValueError(f"trend needs at least two finite values, got {list(values)}; measure more positions")
    rest = sum(vals[1:]) / (len(vals) - 1)
    return compare(rest, vals[0], tol, more=up, less=down, same=flat)


def pct(x: float, digits: int = 0) -> str:
    """0.125 -> '12.5%' with ``digits`` decimals."""
    return f"{100 * x:.{digits}f}%"


def paper_k_entries(k, drafters: list[str]) -> list[dict]:
    """The entries of a K matrix in the paper's notation (Table 5: k11, k12, k22, ...).

    Args:
        k: the square K matrix of increments (row 0 = the target's review).
        drafters: the neural drafters' names, largest first; MaG is the last column.

    Returns one dict per entry on or above the diagonal: ``name`` (``k{row}{col}``, 1-based as
    in the paper), ``value``, ``reviewer`` (who reviews the block that row fills) and
    ``drafter`` (who drafts that segment, helped by the levels below it).
    """
    levels = list(drafters) + ["mag"]
    n = len(levels)
    if len(k) != n or any(len(row) != n for row in k):
        raise ValueError(f"K must be {n}x{n} for drafters {levels}, got {k}; one row and column per level")
    reviewers = ["target"] + list(drafters)
    return [dict(name=f"k{i + 1}{j + 1}", value=k[i][j], reviewer=reviewers[i], drafter=levels[j])
            for i in range(n) for j in range(i, n)]


# -- claims as statistics: a direction only beyond the noise over prompts ----------------------

@dataclass(frozen=True)
class Difference:
    """``a - b`` over the same prompts, with a paired bootstrap interval (NaN when undefined)."""
    estimate: float
    lo: float
    hi: float
    n: int              # prompts that carried the comparison
    level: float = 0.95

    @property
    def defined(self) -> bool:
        return not (math.isnan(self.estimate) or math.isnan(self.lo) or math.isnan(self.hi))

    @property
    def sign(self) -> int:
        """+1 (a higher beyond the noise), -1 (lower), 0 (no difference beyond the noise or undefined)."""
        if not self.defined:
            return 0
        return 1 if self.lo > 0 else -1 if self.hi < 0 else 0

    def interval(self, digits: int = 3) -> str:
        """'+0.012 [+0.004, +0.020], n = 12 prompts' (or 'undefined' with the reason NaN)."""
        if not self.defined:
            return f"undefined (n = {self.n} prompts)"
        f = lambda v: f"{v:+.{digits}f}"  # noqa: E731
        return f"{f(self.estimate)} [{f(self.lo)}, {f(self.hi)}], {int(100 * self.level)}% interval over n = {self.n} prompts"

    def word(self, more: str = "higher", less: str = "lower",
             same: str = "no different beyond the noise", undefined: str = "undefined") -> str:
        """The direction in words: ``more``/``less`` only when the interval excludes 0."""
        if not self.defined:
            return undefined
        return more if self.sign > 0 else less if self.sign < 0 else same

    def says(self, more: str = "higher", less: str = "lower", same: str = "no different beyond the noise",
             digits: int = 3) -> str:
        """``word`` followed by the interval in brackets, for a notebook sentence."""
        return f"{self.word(more, less, same)} ({self.interval(digits)})"


def _paired_arrays(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(list(a), dtype=float), np.asarray(list(b), dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired values need two 1-D sequences of the same length (one value per prompt), "
                         f"got shapes {a.shape} and {b.shape}")
    return a, b


def paired_difference(a, b, n_boot: int = 2000, seed: int = 0, level: float = 0.95,
                      stat: str = "mean") -> Difference:
    """``stat(a) - stat(b)`` over prompts, where ``a[i]`` and ``b[i]`` were measured on prompt ``i``.

    The interval is a percentile bootstrap that resamples prompts (the pairs stay together).
    Prompts where either value is NaN are left out; with fewer than two left the result is NaN.
    """
    if stat not in ("mean", "median"):
        raise ValueError(f"stat must be 'mean' or 'median', got {stat!r}")
    a, b = _paired_arrays(a, b)
    keep = ~(np.isnan(a) | np.isnan(b))
    d = a[keep] - b[keep]
    if d.size < 2:
        return Difference(math.nan, math.nan, math.nan, int(d.size), level)
    f = np.mean if stat == "mean" else np.median
    rng = np.random.default_rng(seed)
    boots = f(d[rng.integers(0, d.size, size=(n_boot, d.size))], axis=1)
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return Difference(float(f(d)), float(lo), float(hi), int(d.size), level)


def rate_difference(hits_a, totals_a, hits_b, totals_b, n_boot: int = 2000, seed: int = 0,
                    level: float = 0.95) -> Difference:
    """Pooled rate ``sum(hits_a)/sum(totals_a)`` minus the same for ``b``, prompts resampled in pairs.

    Each argument holds one count per prompt (e.g. accepted and reviewed drafted tokens of a pair
    under two settings). A pooled rate with a zero denominator is NaN, never 0.
    """
    ha, ta = _paired_arrays(hits_a, totals_a)
    hb, tb = _paired_arrays(hits_b, totals_b)
    _paired_arrays(ha, hb)
    n = ha.size

    def pooled(h, t):
        den = t.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, h.sum(axis=-1) / np.where(den > 0, den, 1), np.nan)

    est = float(pooled(ha, ta) - pooled(hb, tb))
    if n < 2 or math.isnan(est):
        return Difference(est, math.nan, math.nan, n, level)  # no interval from one prompt
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    boots = pooled(ha[idx], ta[idx]) - pooled(hb[idx], tb[idx])
    boots = boots[~np.isnan(boots)]
    if boots.size < n_boot // 2:
        return Difference(est, math.nan, math.nan, n, level)
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return Difference(est, float(lo), float(hi), n, level)


def rate(hits: int, total: int) -> float:
    """``hits / total``, NaN (never 0) when nothing was counted."""
    return hits / total if total else math.nan


def count_interval(hits: int, total: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a count out of ``total`` (NaN, NaN when ``total`` is 0)."""
    if total < 0 or hits < 0 or hits > total:
        raise ValueError(f"need 0 <= hits <= total, got {hits} of {total}")
    if total == 0:
        return math.nan, math.nan
    z = {0.9: 1.6448536, 0.95: 1.9599640, 0.99: 2.5758293}.get(level)
    if z is None:
        raise ValueError(f"level must be 0.9, 0.95 or 0.99, got {level}")
    p = hits / total
    den = 1 + z * z / total
    mid = (p + z * z / (2 * total)) / den
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / den
    return max(0.0, mid - half), min(1.0, mid + half)
