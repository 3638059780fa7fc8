"""The cost model: what one forward call of each model costs, as a fitted function (:class:`CostModel`).

This is the one cost concept of the workbook: :mod:`csd_lib.price.costs` measures, stores and chooses one;
:mod:`csd_lib.price.ewif`, :mod:`csd_lib.price.pricing` and :mod:`csd_lib.price.predict` price with one.
Pure arithmetic over timings. Per model,

    t(n, L) = a + b n + c L + d n L + e [n = 1]        (seconds, least squares: :func:`fit_call`)

``n`` the tokens a call feeds, ``L`` the cache length, ``[n = 1]`` one for a single-token call
(a decoding step runs matrix-vector kernels: on a CPU it costs well under what a line through
the longer calls says); plus the engine's own overhead per
review (``review(n)``) and per MaG proposal (``mag``). A fit that explains less than
:data:`MIN_R2` of its timings' variance, or that has too few timings for its terms, is replaced by fewer
terms or by their median (:func:`constant_fit`, :func:`overhead_fit`), and the cost model's ``fit_notes``
say which and why. :meth:`CostModel.constant` builds one from per-call constants (the paper's EWIF input),
:func:`csd_lib.price.costs.probe_cost_model` from a family's load probe; :func:`scaled` multiplies a cost
model's calls per model.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

import numpy as np

from ..engine.plan import MAG


log = logging.getLogger(__name__)

FEATURES = ("1", "n", "L", "n*L", "n=1")

# A fit with a lower R² than this is replaced by the median of what it fitted (a measured constant).
MIN_R2 = 0.5


def _design(n, L) -> np.ndarray:
    """Feature matrix (N, 5) of the fit: 1, n, L, n*L, [n = 1]."""
    n = np.asarray(n, dtype=float).ravel()
    L = np.asarray(L, dtype=float).ravel()
    return np.stack([np.ones_like(n), n, L, n * L, (n == 1).astype(float)], axis=1)


@dataclass
class CallFit:
    """t(n, L) = a + b n + c L + d n L + e [n = 1] seconds, with its quality on the measured grid."""
    coef: list[float]              # [a, b, c, d, e]; a stored 4-list (measured before e) has e = 0
    r2: float = float("nan")
    max_rel_err: float = float("nan")
    note: str | None = None        # why a least-squares fit was replaced by this one (see MIN_R2)

    def __call__(self, n, L=0):
        a, b, c, d, e = (list(self.coef) + [0.0])[:5]
        n = np.asarray(n, dtype=float)
        return a + b * n + (c + d * n) * np.asarray(L, dtype=float) + e * (n == 1)

    @classmethod
    def constant(cls, seconds: float) -> "CallFit":
        return cls([float(seconds), 0.0, 0.0, 0.0, 0.0], 1.0, 0.0)


def least_squares(X, y, nonneg: bool = False) -> tuple[np.ndarray, float, float]:
    """``y ~ X @ coef`` by least squares (``coef`` clipped at 0 when ``nonneg``): coef, R² and the
    largest relative error of the fit."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    if nonneg and (coef < 0).any():
        coef = _nnls(X, y)
    return (coef, *_quality(y, X @ coef))


def _nnls(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares for a few columns: the best least-squares fit over every subset
    of columns whose coefficients all come out non-negative (the others at 0)."""
    best, best_res = np.zeros(X.shape[1]), float((y ** 2).sum())
    for mask in range(1, 2 ** X.shape[1]):
        cols = [j for j in range(X.shape[1]) if mask >> j & 1]
        c, *_ = np.linalg.lstsq(X[:, cols], y, rcond=None)
        if (c < 0).any():
            continue
        res = float(((y - X[:, cols] @ c) ** 2).sum())
        if res < best_res:
            best, best_res = np.zeros(X.shape[1]), res
            best[cols] = c
    return best


def _quality(y: np.ndarray, pred: np.ndarray) -> tuple[float, float]:
    """R² and the largest relative error of ``pred`` against ``y``."""
    ss_res = float(((y - pred) ** 2).sum())
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)
    return r2, float(np.max(np.abs(pred - y) / np.maximum(np.abs(y), 1e-12)))


def constant_fit(seconds) -> CallFit:
    """The median of ``seconds`` as a constant fit, with its own R² and max relative error."""
    y = np.asarray(seconds, dtype=float).ravel()
    med = float(np.median(y))
    return CallFit([med, 0.0, 0.0, 0.0, 0.0], *_quality(y, np.full_like(y, med)))


def _corners(n, L) -> tuple[np.ndarray, np.ndarray]:
    """The (n, L) points where a fitted t(n, L) is lowest over the rectangle of ``n`` and ``L`` (it is bilinear
    for n >= 2, plus a single-token term): n at 1, 2 and the largest (or the two ends), L at both ends."""
    n, L = np.asarray(n, dtype=float).ravel(), np.asarray(L, dtype=float).ravel()
    lo, hi = n.min(), n.max()
    ns = sorted({lo, hi} | ({2.0} if lo == 1 and hi >= 2 else set()))
    return [a.ravel() for a in np.meshgrid(ns, [L.min(), L.max()])]


def fit_call(n, L, seconds) -> CallFit:
    """Least-squares fit of t(n, L) = a + b n + c L + d n L + e [n = 1], with R² and max relative error.

    Fewer timings than terms (a time budget that ran out, e.g. on a busy machine) fit the leading terms only,
    one timing to spare (one timing or two: their median, :func:`constant_fit`); a fit with R² below
    :data:`MIN_R2` is replaced by the median timing. The ``note`` says which and why.
    """
    y = np.asarray(seconds, dtype=float).ravel()
    X = _design(n, L)
    if len(y) != len(X) or not len(y):
        raise ValueError(f"fit_call needs one (n, L) for each timing and at least one timing; got {len(y)} timings "
                         f"for {len(X)} points")
    if not ((X[:, 4] == 1).any() and (X[:, 4] == 0).any()):
        X = X[:, :4]                   # all calls one token, or none: no single-token term to fit
    short = len(y) < X.shape[1]
    if short:                          # the leading terms only, one timing to spare
        X = X[:, :max(1, len(y) - 1)]
    few = f"only {len(y)} timing(s) for the terms of t(n, L) (the time budget ran out)" if short else ""
    if X.shape[1] == 1:
        const = constant_fit(y)
        const.note = f"{few}: their median, {1e3 * const.coef[0]:.3f} ms per call"
        return const
    coef, r2, rel = least_squares(X, y)
    fit = CallFit([float(v) for v in list(coef) + [0.0] * (5 - len(coef))], r2, rel)
    low = float(np.min(fit(*_corners(n, L))))
    if r2 >= MIN_R2 and low >= 0:
        kept = " + ".join(("a", "b n", "c L", "d n L")[:X.shape[1]])
        fit.note = f"{few}: fitted {kept} only" if short else None
        return fit
    const = constant_fit(y)
    why = (f"the t(n, L) fit explains R² = {r2:.2f} < {MIN_R2} of {len(y)} timings" if r2 < MIN_R2 else
           f"the t(n, L) fit gives {1e3 * low:.3f} ms, below 0, inside the grid it was measured on")
    const.note = (f"{few + '; ' if short else ''}{why}: replaced by their median, {1e3 * const.coef[0]:.3f} ms "
                  f"per call")
    return const


def overhead_fit(counts, seconds) -> tuple[list[float], float, float, str | None]:
    """The engine's time outside forwards as ``per_call * calls + per_row * rows + per_mag * mag_calls``.

    ``counts``: one ``[model calls, rows reviewed, MaG calls]`` per generation; ``seconds``: its
    time outside forwards. Least squares clipped at 0; where that explains less than
    :data:`MIN_R2` of the variance, one measured constant instead: the median over generations of
    seconds per engine call (a model call or a MaG proposal), for both kinds of call, nothing per
    row. Returns ([per_call, per_row, per_mag], R², max relative error, note or None).
    """
    X, y = np.asarray(counts, dtype=float), np.asarray(seconds, dtype=float)
    coef, r2, rel = least_squares(X, y, nonneg=True)
    if r2 >= MIN_R2:
        return [float(v) for v in coef], r2, rel, None
    per = float(np.median(y / np.maximum(X[:, 0] + X[:, 2], 1.0)))
    const = [per, 0.0, per]
    r2c, relc = _quality(y, X @ np.asarray(const))
    return const, r2c, relc, (f"the overhead fit (per call, per row, per MaG proposal) explains R² = {r2:.2f} < "
                              f"{MIN_R2} over {len(y)} generations: replaced by the median time per engine call, "
                              f"{1e3 * per:.3f} ms per model call or MaG proposal (R² {r2c:.2f})")


@dataclass
class CostModel:
    """Seconds per call for every model of a family, plus the engine's own per-call overhead.

    ``forward[name](n, L)``: one ``LM.logits`` call scoring ``n`` tokens over a cache of ``L``.
    ``review(n)``: softmax + review of ``n`` rows (charged to every call of a reviewer).
    ``mag``: one MaG proposal. ``start[name]``: per-generation start (T5: the encoder pass).
    ``cache_length``: the L used when a prediction does not give one. ``fit_notes``: {fit: why}
    for every fit replaced by a measured constant (``forward:<name>``, ``overhead``), or, in a
    file measured before fits were checked, kept with an R² below :data:`MIN_R2`.
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
    fit_notes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def constant(cls, call_costs: dict[str, float]) -> "CostModel":
        """Per-call constants (the old EWIF input) as a cost model: no review, MaG at its given cost."""
        fwd = {k: CallFit.constant(v) for k, v in call_costs.items() if k != MAG}
        return cls("constant", "none", fwd, mag=float(call_costs.get(MAG, 0.0)))

    def call(self, name: str, n, L=None, reviews: bool = True):
        """Seconds of one call of ``name`` scoring ``n`` tokens at cache length ``L``."""
        if name == MAG:
            return self.mag + 0.0 * np.asarray(n, dtype=float)
        if name not in self.forward:
            raise ValueError(f"the cost model of '{self.family}' has no model {name!r}; it has "
                             f"{sorted(self.forward)}; measure it with csd_lib.price.costs.measure_costs")
        L = self.cache_length if L is None else L
        t = self.forward[name](n, L)
        return t + self.review(n) if reviews else t

    def verify(self, name: str, nodes, L=None):
        """Seconds of one review by ``name`` of ``nodes`` drafted tokens, a chain or a tree alike: the call
        feeds the last committed token and every node, ``t(nodes + 1, L)``, and reviews ``nodes + 1`` rows
        (a tree's attention mask changes which cached positions a node sees, not how many tokens are fed)."""
        return self.call(name, np.asarray(nodes, dtype=float) + 1, L)

    def ar_step(self, target: str = "target", L=None) -> float:
        """Seconds per token of autoregressive decoding with the target."""
        return float(self.call(target, 1, L))

    def reference_steps(self) -> dict:
        """The machine's reference: median seconds of the target's one-token call and of the smallest
        drafter's (the last model after the target), over this cost model's own timings at n = 1 (its
        fit at the mean cache length where it holds no timings); {'target', 'drafter', 'drafter_name'}."""
        names = [n for n in self.forward if n != "target"]
        out = {"target": self._one_token("target"), "drafter_name": names[-1] if names else None}
        out["drafter"] = self._one_token(names[-1]) if names else None
        return out

    def _one_token(self, name: str) -> float:
        ts = [s[3] for s in self.samples if s[0] == name and s[1] == 1]
        return float(np.median(ts)) if ts else float(self.forward[name](1, self.cache_length))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["features"] = list(FEATURES)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "CostModel":
        """A stored cost model; a fit below :data:`MIN_R2` that no note explains (a file measured before fits
        were checked) is kept, with a warning and a note to re-measure."""
        forward = {k: CallFit(**v) for k, v in d["forward"].items()}
        review = CallFit(**d["review"])
        notes = dict(d.get("fit_notes", {}))
        for key, fit in [*((f"forward:{k}", f) for k, f in forward.items()), ("overhead", review)]:
            if fit.r2 < MIN_R2 and key not in notes and not fit.note:
                notes[key] = (f"stored fit has R² = {fit.r2:.2f} < {MIN_R2} and the file predates the check; kept: "
                              f"re-measure with `python -m csd_lib costs --family {d['family']}` to replace it")
                log.warning(f"cost model of {d['family']}: {key}: {notes[key]}")
        return cls(d["family"], d["device"], forward, review, float(d["mag"]), dict(d.get("start", {})),
                   float(d.get("cache_length", 64.0)), d.get("env", {}), d.get("samples", []), notes)

    def summary_rows(self) -> list[dict]:
        """One row per model: coefficients in ms and fit quality."""
        rows = []
        for name, fit in self.forward.items():
            a, b, c, d, e = (list(fit.coef) + [0.0])[:5]
            rows.append(dict(model=name, a_ms=1e3 * a, b_ms_per_token=1e3 * b, c_ms_per_cached=1e3 * c,
                             d_ms_per_token_cached=1e3 * d, e_ms_single=1e3 * e, r2=fit.r2, max_rel_err=fit.max_rel_err,
                             ms_1=1e3 * float(fit(1, self.cache_length)),
                             ms_17=1e3 * float(fit(17, self.cache_length))))
        return rows


def scaled(cost_model: CostModel, factors: dict[str, float]) -> CostModel:
    """The cost model with each model's forward and start costs multiplied by its factor."""
    fwd = {n: CallFit([c * factors.get(n, 1.0) for c in f.coef], f.r2, f.max_rel_err) for n, f in cost_model.forward.items()}
    start = {n: s * factors.get(n, 1.0) for n, s in cost_model.start.items()}
    return CostModel(cost_model.family, cost_model.device, fwd, cost_model.review, cost_model.mag, start, cost_model.cache_length,
                     dict(cost_model.env, depth_scale=factors), cost_model.samples)


PRICED_N = (1, 2, 4, 8, 16, 32)  # tokens a call scores where a cost model must give a price (the measured grid)


def _priced_grid(cost_model: CostModel, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The (n, L) points where ``name``'s calls must cost 0 s or more: the corners of the grid it was measured on,
    where the cost model holds its timings, else :data:`PRICED_N` from half to twice its cache length (the
    review: at L = 0)."""
    rows = [s for s in cost_model.samples if s[0] == name and s[1] > 0]
    if rows:
        return _corners([r[1] for r in rows], [r[2] for r in rows])
    cache = [0.0] if name == "review" else [0.5 * cost_model.cache_length, 2.0 * cost_model.cache_length]
    return _corners(PRICED_N, cache)


def cost_problem(cost_model: CostModel, family: str | None = None, models=()) -> str | None:
    """Why ``cost_model`` cannot price ``family``'s ``models``, in words, or None: every number must be finite,
    every call (:func:`_priced_grid`), start, review and MaG cost non-negative; given ``family``, the model must
    be that family's (or per-call constants, family 'constant'); given ``models``, it must price every one."""
    cm = cost_model
    numbers = {"mag": cm.mag, "cache_length": cm.cache_length, **{f"start of {k}": v for k, v in cm.start.items()}}
    numbers |= {f"{k} coefficients": list(f.coef) for k, f in [*cm.forward.items(), ("review", cm.review)]}
    bad = next((k for k, v in numbers.items() if not np.isfinite(np.asarray(v, dtype=float)).all()), None)
    if bad:
        return f"its {bad} are not all finite numbers ({numbers[bad]})" if "coef" in bad else \
            f"its {bad} is not a finite number ({numbers[bad]})"
    if cm.cache_length <= 0 or cm.mag < 0 or any(v < 0 for v in cm.start.values()):
        return f"it holds a negative cost or cache length (mag {cm.mag}, starts {cm.start}, cache {cm.cache_length})"
    for name, fit in [*cm.forward.items(), ("review", cm.review)]:
        low = float(np.min(fit(*_priced_grid(cm, name))))
        if low < 0:
            return f"its {name} call costs {low:.3g} s somewhere on the grid it prices (a cost below 0)"
    if family is not None and cm.family not in (family, "constant"):
        return f"it is the cost model of {cm.family!r}, not of {family!r}"
    missing = [m for m in models if m not in cm.forward]
    if missing:
        return f"it prices {sorted(cm.forward)}, not {', '.join(map(repr, missing))} of {family or 'this family'}"
    return None
