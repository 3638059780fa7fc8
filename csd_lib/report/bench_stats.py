"""The statistics BENCHMARKS.md and the notebooks report for benchmark runs: per-example ratios, medians
with bootstrap intervals, and the goals they are held to.
"""
from __future__ import annotations

import numpy as np


def bootstrap_median_ci(values, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> list[float]:
    """Percentile bootstrap interval of the median over examples (fixed seed: reproducible)."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        return [float("nan"), float("nan")]
    rng = np.random.default_rng(seed)
    meds = np.median(v[rng.integers(0, v.size, size=(n_boot, v.size))], axis=1)
    lo, hi = np.quantile(meds, [(1 - level) / 2, (1 + level) / 2])
    return [float(lo), float(hi)]
