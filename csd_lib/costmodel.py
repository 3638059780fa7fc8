"""The per-call cost model: what one forward call of each model costs, as a fitted function.

Pure arithmetic (numpy only): :mod:`csd_lib.costs` measures a :class:`CostModel` on a
machine and stores it; :func:`csd_lib.ewif.predict_speedup` prices a step with one. Per model,

    t(n, L) = a + b n + c L + d n L        (seconds, least squares)

``n`` the tokens a call scores, ``L`` the cache length; plus the engine's own overhead per
review (``review(n)``) and per MaG proposal (``mag``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

FEATURES = ("1", "n", "L", "n*L")


def _design(n, L) -> np.ndarray:
    """Feature matrix (N, 4) of the fit: 1, n, L, n*L."""
    n = np.asarray(n, dtype=float).ravel()
    L = np.asarray(L, dtype=float).ravel()
    return np.stack([np.ones_like(n), n, L, n * L], axis=1)


@dataclass
class CallFit:
    """t(n, L) = a + b n + c L + d n L seconds, with its quality on the measured grid."""
    coef: list[float]              # [a, b, c, d]
    r2: float = float("nan")
    max_rel_err: float = float("nan")

    def __call__(self, n, L=0):
        a, b, c, d = self.coef
        return a + b * np.asarray(n, dtype=float) + (c + d * np.asarray(n, dtype=float)) * np.asarray(L, dtype=float)

    @classmethod
    def constant(cls, seconds: float) -> "CallFit":
        return cls([float(seconds), 0.0, 0.0, 0.0], 1.0, 0.0)


def least_squares(X, y, nonneg: bool = False) -> tuple[np.ndarray, float, float]:
    """``y ~ X @ coef`` by least squares (``coef`` clipped at 0 when ``nonneg``): coef, R² and the
    largest relative error of the fit."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    if nonneg:
        coef = np.clip(coef, 0.0, None)
    pred = X @ coef
    ss_res = float(((y - pred) ** 2).sum())
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)
    rel = float(np.max(np.abs(pred - y) / np.maximum(np.abs(y), 1e-12)))
    return coef, r2, rel


def fit_call(n, L, seconds) -> CallFit:
    """Least-squares fit of t(n, L) = a + b n + c L + d n L; R² and max relative error."""
    y = np.asarray(seconds, dtype=float).ravel()
    X = _design(n, L)
    if len(y) != len(X) or len(y) < 4:
        raise ValueError(f"fit_call needs at least 4 timings with one (n, L) each; got {len(y)} timings "
                         f"for {len(X)} points")
    coef, r2, rel = least_squares(X, y)
    return CallFit([float(v) for v in coef], r2, rel)


@dataclass
class CostModel:
    """Seconds per call for every model of a family, plus the engine's own per-call overhead.

    ``forward[name](n, L)``: one ``LM.logits`` call scoring ``n`` tokens over a cache of ``L``.
    ``review(n)``: softmax + review of ``n`` rows (charged to every call of a reviewer).
    ``mag``: one MaG proposal. ``start[name]``: per-generation start (T5: the encoder pass).
    ``cache_length``: the L used when a prediction does not give one.
    """
    family: str
    device: str
    forward: dict[str, CallFit]
    review: CallFit = field(default_factory=lambda: CallFit.constant(0.0))
    mag: float = 0.0
    start: dict[str, float] = field(default_factory=dict)
    cache_length: float = 64.0
    env: dict = field(default_factory=dict)
    samples: list = field(default_factory=list)   # [name, n, L, seconds] as measured

    @classmethod
    def constant(cls, costs: dict[str, float]) -> "CostModel":
        """Per-call constants (the old EWIF input) as a cost model: no review, MaG at its given cost."""
        fwd = {k: CallFit.constant(v) for k, v in costs.items() if k != "mag"}
        return cls("constant", "none", fwd, mag=float(costs.get("mag", 0.0)))

    def call(self, name: str, n, L=None, reviews: bool = True):
        """Seconds of one call of ``name`` scoring ``n`` tokens at cache length ``L``."""
        if name == "mag":
            return self.mag + 0.0 * np.asarray(n, dtype=float)
        if name not in self.forward:
            raise ValueError(f"the cost model of '{self.family}' has no model {name!r}; it has "
                             f"{sorted(self.forward)}; measure it with csd_lib.costs.measure_costs")
        L = self.cache_length if L is None else L
        t = self.forward[name](n, L)
        return t + self.review(n) if reviews else t

    def ar_step(self, target: str = "target", L=None) -> float:
        """Seconds per token of autoregressive decoding with the target."""
        return float(self.call(target, 1, L))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["features"] = list(FEATURES)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "CostModel":
        return cls(d["family"], d["device"], {k: CallFit(**v) for k, v in d["forward"].items()},
                   CallFit(**d["review"]), float(d["mag"]), dict(d.get("start", {})),
                   float(d.get("cache_length", 64.0)), d.get("env", {}), d.get("samples", []))

    def summary_rows(self) -> list[dict]:
        """One row per model: coefficients in ms and fit quality."""
        rows = []
        for name, fit in self.forward.items():
            a, b, c, d = fit.coef
            rows.append(dict(model=name, a_ms=1e3 * a, b_ms_per_token=1e3 * b, c_ms_per_cached=1e3 * c,
                             d_ms_per_token_cached=1e3 * d, r2=fit.r2, max_rel_err=fit.max_rel_err,
                             ms_1=1e3 * float(fit(1, self.cache_length)),
                             ms_17=1e3 * float(fit(17, self.cache_length))))
        return rows
