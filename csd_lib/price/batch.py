"""Batches: the paper's EWIF and the cost model at batch size B (a prediction; nothing here times anything).

A batched call feeds B rows of n tokens each. :func:`batch_call` prices it from a batch-1
:class:`~csd_lib.price.costmodel.CallFit` ``t(n, L) = a + b n + c L + d n L + e [n = 1]`` on one assumption:
the per-token terms scale with the tokens the call feeds across rows, ``N = B n`` (each row attends to its own
cache, so ``c L`` is paid per row), and the constant ``a`` is paid once per call:

    t_B(n, L) = a + B (b n + c L + d n L)                   (the single-token term e only while N = 1)

That is right where one call is compute-bound already at one row (a CPU, where the cost model is measured). It
is wrong on a GPU below saturation, where a call costs about the same whether it feeds one row or many until
the matrix units are busy: ``saturation`` (tokens a call feeds at one row's price, :data:`LINEAR` = 1: none)
says so, and a call feeding ``N <= saturation`` tokens costs ``t(n, L)``, beyond it ``a + (N / max(n,
saturation)) (b n + c L + d n L)``.

Lockstep rounds (:func:`sd_rate`, :func:`csd_rate`): every row does one round per target call; a row's
expected tokens per round are the batch-1 EWIF's (rows' acceptance independent), but the round costs the
batched calls, and the target's review is padded to the longest draft of the B rows. So at B = 1 with per-call
constants :func:`speedup` is Cor 4.2 (:func:`csd_lib.price.ewif.ewif_sd`) and Thm 4.3
(:func:`csd_lib.price.ewif.ewif_vc`) exactly; as B grows the review's B (k + 1) tokens stop being nearly free
and rejected drafts cost compute. :func:`simulate_rounds` is the Monte Carlo of ragged rounds (rows that finish
leave the batch) the closed forms are checked against; :func:`crossover` finds the B where a method's speedup
over AR at the same B falls to 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.methods import AR, CSD, SD
from ..engine.plan import MAG
from .costmodel import CallFit, CostModel
from .ewif import expected_tokens_horizontal, phi, phi_coeffs

LINEAR = 1.0        # saturation of the linear model: every token fed costs its share (a CPU)
MAX_BATCH = 4096    # the largest batch size the CLI prices
METHODS = (AR.name, SD.name, CSD.name)


def check_batch(batch) -> float:
    """``batch`` as a number of rows >= 1 (a real number: bisection prices between whole batches)."""
    if isinstance(batch, bool) or not np.isfinite(batch) or batch < 1:
        raise ValueError(f"a batch size is a number of rows >= 1, got {batch!r}")
    return float(batch)


def batch_call(fit: CallFit, n, L, batch, saturation: float = LINEAR) -> float:
    """Seconds of one call feeding ``batch`` rows of ``n`` tokens each over a cache of ``L`` per row (the
    module docstring's rule: per-token terms scale with ``batch * n`` past ``saturation`` tokens; ``a`` once)."""
    B = check_batch(batch)
    if not saturation >= 1:
        raise ValueError(f"saturation is the tokens a call feeds at one row's price, >= 1; got {saturation!r}")
    a, b, c, d, _ = (list(fit.coef) + [0.0])[:5]
    if B * n <= saturation:
        return float(fit(n, L))
    per_row = b * n + c * L + d * n * L
    return float(a + B * n / max(n, saturation) * per_row)


def model_call(cm: CostModel, name: str, n, batch, L=None, saturation: float = LINEAR, reviews: bool = False) -> float:
    """Seconds of ``name``'s call at ``batch`` rows of ``n`` tokens; MaG proposes per row on the host (B times its
    cost); ``reviews``: add the engine's review of the B n rows scored, priced by the same rule."""
    if name == MAG:
        return float(check_batch(batch) * cm.mag)
    if name not in cm.forward:
        raise ValueError(f"the cost model of '{cm.family}' has no model {name!r}; it has {sorted(cm.forward)}")
    L = cm.cache_length if L is None else L
    t = batch_call(cm.forward[name], n, L, batch, saturation)
    return t + (batch_call(cm.review, n, 0.0, batch, saturation) if reviews else 0.0)


@dataclass
class Rate:
    """One method at one batch size: expected tokens per row per round, seconds per round, tokens/s over the
    batch (``tokens_per_round * batch / round_seconds``)."""
    method: str
    batch: float
    tokens_per_round: float
    round_seconds: float

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_round * self.batch / self.round_seconds


def ar_rate(cm: CostModel, batch, L=None, saturation: float = LINEAR, target: str = "target") -> Rate:
    """AR at ``batch``: one target call of B x 1 tokens per token of each row."""
    return Rate(AR.name, check_batch(batch), 1.0, model_call(cm, target, 1, batch, L, saturation, reviews=True))


def sd_rate(cm: CostModel, drafter: str, alphas, k: int, batch, L=None, saturation: float = LINEAR,
            target: str = "target") -> Rate:
    """SD with ``k`` drafts at ``batch``: k drafter calls of B x 1 tokens, one target review of B x (k + 1);
    a row's tokens per round are Thm 4.5's ``sum_i prod_{j<=i} alpha_j`` over ``alphas`` (the last repeats)."""
    a = _positions(alphas, k)
    cost = k * model_call(cm, drafter, 1, batch, L, saturation) + \
        model_call(cm, target, k + 1, batch, L, saturation, reviews=True)
    return Rate(SD.name, check_batch(batch), expected_tokens_horizontal(a), cost)


def drafted_distribution(alpha_prime: float, k: int, n: int) -> np.ndarray:
    """``P(D = j)``, j = 0.., of the tokens the middle model drafts in ``n`` rounds of Thm 4.3 (each round emits
    J ~ phi_{alpha', k}): the coefficients of ``phi(x) ** n`` (the module docstring of ewif: a power)."""
    return np.polynomial.polynomial.polypow(phi_coeffs(alpha_prime, k), n)


def expected_max(pmf: np.ndarray, batch) -> float:
    """E[max of ``batch`` independent draws of ``pmf`` over 0, 1, ...]: ``sum_j 1 - F(j - 1) ** B``."""
    cdf = np.clip(np.cumsum(pmf), 0.0, 1.0)
    return float((1.0 - cdf[:-1] ** check_batch(batch)).sum())


def csd_rate(cm: CostModel, d1: str, d2: str, alpha: float, alpha_prime: float, k: int, n: int, batch, L=None,
             saturation: float = LINEAR, target: str = "target") -> Rate:
    """The two-drafter cascade of Thm 4.3 at ``batch``: n rounds of k ``d2`` calls (B x 1) and one ``d1``
    review (B x (k + 1)), then one target review padded to the longest draft: B x (E[max_B D] + 1) tokens.
    A row's tokens per round: ``(1 - alpha phi_{alpha', k}(alpha) ** n) / (1 - alpha)``."""
    if np.isclose(alpha, 1.0):
        tokens = n * expected_tokens_horizontal([alpha_prime] * k) + 1.0
    else:
        tokens = float((1.0 - alpha * phi(alpha_prime, k, alpha) ** n) / (1.0 - alpha))
    fed = expected_max(drafted_distribution(alpha_prime, k, n), batch) + 1.0
    cost = n * (k * model_call(cm, d2, 1, batch, L, saturation) +
                model_call(cm, d1, k + 1, batch, L, saturation, reviews=True))
    cost += model_call(cm, target, fed, batch, L, saturation, reviews=True)
    return Rate(CSD.name, check_batch(batch), tokens, cost)


def _positions(alphas, k: int) -> np.ndarray:
    """The first ``k`` per-position rates of ``alphas``, the last repeating."""
    a = np.atleast_1d(np.asarray(alphas, dtype=float))
    if a.size == 0 or k < 1:
        raise ValueError(f"need k >= 1 and at least one acceptance rate; got k={k!r}, rates {list(a)}")
    return np.concatenate([a, np.full(max(0, k - a.size), a[-1])])[:k]


def speedup(rate_fn, cm: CostModel, batch, L=None, saturation: float = LINEAR) -> float:
    """``rate_fn(batch)``'s tokens/s over AR's at the same batch size (``rate_fn`` takes the batch only)."""
    return rate_fn(batch).tokens_per_s / ar_rate(cm, batch, L, saturation).tokens_per_s


def crossover(speedup_at, bound: int = MAX_BATCH, tol: float = 1e-3) -> dict:
    """Where ``speedup_at(B)`` first falls to 1 or below, B in 1..``bound``: ``grid`` the smallest whole B
    (doubling, then bisection on whole numbers), ``bisect`` the real B by bisection to ``tol``; both None when it
    stays above 1 up to ``bound`` (``speedup_at(1) <= 1``: 1.0). Assumes the speedup, once at or below 1, stays
    there as B grows (true of the linear model: :func:`speedup` falls with B)."""
    if speedup_at(1) <= 1.0:
        return {"grid": 1, "bisect": 1.0}
    lo = 1
    while lo < bound and speedup_at(min(2 * lo, bound)) > 1.0:
        lo = min(2 * lo, bound)
    if lo >= bound:
        return {"grid": None, "bisect": None}
    hi = min(2 * lo, bound)                    # speedup(lo) > 1 >= speedup(hi)
    glo, ghi = lo, hi
    while ghi - glo > 1:
        mid = (glo + ghi) // 2
        glo, ghi = (mid, ghi) if speedup_at(mid) > 1.0 else (glo, mid)
    flo, fhi = float(lo), float(hi)
    while fhi - flo > tol:
        mid = 0.5 * (flo + fhi)
        flo, fhi = (mid, fhi) if speedup_at(mid) > 1.0 else (flo, mid)
    return {"grid": ghi, "bisect": fhi}


def _round_draws(rng: np.random.Generator, method: str, rows: int, params: dict) -> tuple[np.ndarray, np.ndarray]:
    """One round of ``rows`` rows: (tokens each row emits (rows,), tokens each drafted for the target (rows,))."""
    if method == AR.name:
        return np.ones(rows, dtype=np.int64), np.zeros(rows, dtype=np.int64)
    if method == SD.name:
        a = _positions(params["alphas"], params["k"])
        rej = rng.random((rows, a.size)) >= a                                  # (rows, k)
        acc = np.where(rej.any(axis=1), rej.argmax(axis=1), a.size)
        return acc + 1, np.full(rows, a.size)
    k, n, ap = params["k"], params["n"], params["alpha_prime"]
    rej = rng.random((rows, n, k)) >= ap                                       # (rows, n, k)
    drafted = (np.where(rej.any(axis=2), rej.argmax(axis=2), k) + 1).sum(axis=1)  # (rows,) n rounds of J'
    top = rng.geometric(1.0 - params["alpha"], size=rows) - 1 if params["alpha"] < 1 else drafted
    return np.minimum(top, drafted) + 1, drafted


def _round_seconds(cm: CostModel, method: str, rows: int, drafted: np.ndarray, params: dict, L,
                   saturation: float) -> float:
    """Seconds of one lockstep round of ``rows`` active rows; the target's review is padded to the longest draft."""
    target = model_call(cm, "target", float(drafted.max()) + 1.0, rows, L, saturation, reviews=True)
    if method == AR.name:
        return target
    if method == SD.name:
        return params["k"] * model_call(cm, params["drafter"], 1, rows, L, saturation) + target
    k, n = params["k"], params["n"]
    return target + n * (k * model_call(cm, params["d2"], 1, rows, L, saturation) +
                         model_call(cm, params["d1"], k + 1, rows, L, saturation, reviews=True))


def simulate_rounds(cm: CostModel, method: str, params: dict, batch: int, length: int | None = None,
                    rounds: int = 200, L=None, saturation: float = LINEAR, seed: int = 0) -> dict:
    """Monte Carlo of lockstep rounds of ``batch`` rows, each position accepted by a fresh Bernoulli draw each round.

    ``method``: 'ar', 'sd' (``params``: drafter, alphas, k) or 'csd' (d1, d2, alpha, alpha_prime, k, n). With
    ``length``, each row stops at ``length`` tokens (its last round's surplus dropped) and leaves the batch: the
    rounds after it run at the smaller batch; else ``rounds`` rounds of the full batch. Returns tokens_per_s over
    the batch, tokens_per_round (per row per round) and rounds."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(batch, bool) or int(batch) != batch or batch < 1:
        raise ValueError(f"the Monte Carlo's batch is a whole number of rows >= 1, got {batch!r}")
    rng = np.random.default_rng(seed)
    left = np.full(int(batch), length if length is not None else np.iinfo(np.int64).max, dtype=np.int64)
    tokens = seconds = 0.0
    row_rounds = done = 0
    while (left > 0).any() and (length is not None or done < rounds):
        active = left > 0
        emit, drafted = _round_draws(rng, method, int(active.sum()), params)
        emit = np.minimum(emit, left[active])
        left[active] -= emit
        tokens += float(emit.sum())
        row_rounds += int(active.sum())
        seconds += _round_seconds(cm, method, int(active.sum()), drafted, params, L, saturation)
        done += 1
    return {"tokens_per_s": tokens / seconds, "tokens_per_round": tokens / row_rounds, "rounds": done}


SD_KS = range(1, 17)       # SD's draft lengths searched at B = 1
CSD_KS = range(1, 9)       # the bottom drafter's tokens per middle review
CSD_NS = range(1, 7)       # middle reviews per target review


def parse_batch_sizes(text: str) -> list[int]:
    """``--batch-size``: comma-separated whole numbers of rows, 1..:data:`MAX_BATCH`, e.g. ``1,2,4,8``."""
    items = [t.strip() for t in str(text).split(",")]
    if not all(t.isdigit() and 1 <= int(t) <= MAX_BATCH for t in items):
        raise ValueError(f"{text!r}: give batch sizes as whole numbers from 1 to {MAX_BATCH} joined by commas, "
                         f"e.g. 1,2,4,8,16,32")
    return sorted(set(int(t) for t in items))


def _first(table: dict, key: tuple) -> float:
    if key not in table:
        raise ValueError(f"the acceptance table has no rates for {key[0]!r} reviewing {key[1]!r}")
    return float(np.atleast_1d(table[key])[0])


def batch_plans(cm: CostModel, table: dict, neural: list[str], L=None) -> dict:
    """The plans priced at every batch size, each the best at B = 1 under the same closed forms: SD (each drafter,
    k in :data:`SD_KS`) and the two-drafter cascade of Thm 4.3 (the largest drafter reviews the next one, MaG where
    there is one neural drafter; k in :data:`CSD_KS`, n in :data:`CSD_NS`; its rates: each pair's first position)."""
    if not neural:
        raise ValueError("batch predictions need at least one neural drafter")
    sd = max(({"drafter": d, "alphas": list(np.atleast_1d(table[("target", d)])), "k": k}
              for d in neural for k in SD_KS if ("target", d) in table),
             key=lambda p: sd_rate(cm, p["drafter"], p["alphas"], p["k"], 1, L).tokens_per_s, default=None)
    if sd is None:
        raise ValueError(f"the acceptance table has no rates for the target reviewing any of {neural}")
    d1, d2 = neural[0], (neural[1] if len(neural) > 1 else MAG)
    alpha, alpha_prime = _first(table, ("target", d1)), _first(table, (d1, d2))
    csd = max(({"d1": d1, "d2": d2, "alpha": alpha, "alpha_prime": alpha_prime, "k": k, "n": n}
               for k in CSD_KS for n in CSD_NS), key=lambda p: method_rate(CSD.name, cm, p, 1, L).tokens_per_s)
    return {AR.name: {}, SD.name: sd, CSD.name: csd}


def method_rate(method: str, cm: CostModel, p: dict, batch, L=None, saturation: float = LINEAR) -> Rate:
    """``method``'s :class:`Rate` at ``batch`` on the plan ``p`` (:func:`batch_plans`' for that method)."""
    if method == SD.name:
        return sd_rate(cm, p["drafter"], p["alphas"], p["k"], batch, L, saturation)
    if method == CSD.name:
        return csd_rate(cm, p["d1"], p["d2"], p["alpha"], p["alpha_prime"], p["k"], p["n"], batch, L, saturation)
    return ar_rate(cm, batch, L, saturation)


def predict_batches(cm: CostModel, table: dict, neural: list[str], batches, L=None, saturation: float = LINEAR,
                    bound: int = MAX_BATCH, plans: dict | None = None) -> dict:
    """Predicted tokens/s over the batch and speedup over AR at the same B for AR, SD and the cascade at each of
    ``batches`` (``plans``, as :func:`batch_plans` gives them; None: :func:`batch_plans`' own), and each method's
    :func:`crossover` up to ``bound``."""
    plans = batch_plans(cm, table, neural, L) if plans is None else plans
    rows = []
    for B in batches:
        ar = ar_rate(cm, B, L, saturation).tokens_per_s
        for method, p in plans.items():
            tps = method_rate(method, cm, p, B, L, saturation).tokens_per_s
            rows.append({"method": method, "batch": int(B), "tokens_per_s": tps, "speedup": tps / ar})
    cross = {m: crossover(lambda B, m=m: speedup(lambda b: method_rate(m, cm, plans[m], b, L, saturation), cm, B, L,
                                                 saturation), bound) for m in (SD.name, CSD.name)}
    return {"prediction": True, "saturation": float(saturation), "bound": bound, "plans": plans, "rows": rows,
            "crossover": cross}


def format_batches(res: dict) -> str:
    """:func:`predict_batches`' result as a few lines of text."""
    sd, csd = res["plans"][SD.name], res["plans"][CSD.name]
    sat = "linear: every token fed costs its share" if res["saturation"] == LINEAR else \
        f"a call feeding up to {res['saturation']:g} tokens costs one row's"
    lines = [f"predicted at batch size B (lockstep rows; a call costs the tokens it feeds across rows; {sat}):",
             f"  plans, best at B = 1: SD k = {sd['k']} ({sd['drafter']}); CSD: {csd['d1']} reviews {csd['n']} "
             f"round(s) of {csd['k']} from {csd['d2']}",
             f"  {'B':>5} {'AR tokens/s':>12} {'SD tokens/s':>12} {'x':>6} {'CSD tokens/s':>13} {'x':>6}"]
    by = {(r["method"], r["batch"]): r for r in res["rows"]}
    for B in sorted({r["batch"] for r in res["rows"]}):
        s, c = by[SD.name, B], by[CSD.name, B]
        lines.append(f"  {B:>5} {by[AR.name, B]['tokens_per_s']:>12.4g} {s['tokens_per_s']:>12.4g} {s['speedup']:>5.2f}x "
                     f"{c['tokens_per_s']:>13.4g} {c['speedup']:>5.2f}x")
    for m, x in res["crossover"].items():
        where = f"B = {x['grid']} (bisection: {x['bisect']:.2f})" if x["grid"] else f"not below B = {res['bound']}"
        lines.append(f"  crossover, {m.upper()}'s speedup over AR falls to 1: {where}")
    return "\n".join(lines)


# -- a batch bench's rounds priced from its batch-1 rows ------------------------------------------------

def _stat(rec: dict, key: str, name: str) -> float:
    return float(rec["stats"].get(key, {}).get(name, 0))


def _fed_per_call(rows: list[dict], name: str, target: str) -> float:
    """Tokens one batched call of ``name`` feeds per row: the target's review padded to the rows' longest draft
    round by round (lockstep: the j-th review of every row in one call); another model its rows' mean per call."""
    if name == target and any(r.get("draft_lengths") for r in rows):
        lengths = [r.get("draft_lengths") or [0] for r in rows]
        rounds = max(len(dl) for dl in lengths)
        return float(np.mean([max(dl[j] for dl in lengths if j < len(dl)) for j in range(rounds)])) + 1.0
    per = [_stat(r, "nodes", name) / _stat(r, "calls", name) for r in rows if _stat(r, "calls", name)]
    return (float(np.mean(per)) if per else 0.0) + 1.0


def round_seconds(cm: CostModel, rows: list[dict], saturation: float = LINEAR) -> float:
    """Predicted seconds of one batch bench round whose rows generate as ``rows`` did at batch size 1 (their bench
    lines: stats, draft lengths, prompt and cache lengths): each model's calls merge across rows in lockstep (as many
    batched calls as the row with the most), each priced by :func:`batch_call` at the rows it holds on average, the
    tokens it feeds per row (:func:`_fed_per_call`) and the rows' mean cache length; the reviews alike; MaG per row;
    each row's start (T5's encoder) alone. A decoder-only model's first call feeds the prompts (the longest), priced
    in place of one of its calls."""
    target = rows[0]["stats"].get("target", "target")
    names = {n for r in rows for n in r["stats"]["calls"] if n != MAG}
    L = float(np.mean([(r.get("cache_start") or 1) + r["stats"]["n_tokens"] / 2 for r in rows]))
    seconds = sum(_stat(r, "calls", MAG) for r in rows) * cm.mag
    seconds += sum(cm.start.get(n, 0.0) for r in rows for n in names)
    for name in sorted(names):
        calls = [_stat(r, "calls", name) for r in rows]
        if name not in cm.forward or not max(calls):
            continue
        C, held = max(calls), sum(calls) / max(calls)
        n = _fed_per_call(rows, name, target)
        reviews = name == target or any(_stat(r, "nodes", name) for r in rows)
        prefill = (rows[0].get("cache_start") or 1) > 1   # decoder-only: the first call fed the prompts
        seconds += (C - prefill) * model_call(cm, name, n, held, L, saturation, reviews=reviews)
        if prefill:
            seconds += batch_call(cm.forward[name], max(r["cache_start"] for r in rows), 0.0, len(rows), saturation)
    return float(seconds)


def predict_bench_batches(cm: CostModel, records, saturation: float = LINEAR) -> dict:
    """Predicted tokens/s over the batch of every round of a batch bench (its lines, :mod:`csd_lib.measure.batch_bench`)
    from the same examples' batch-1 rows of the same method (:func:`round_seconds`), and the speedup over AR's
    prediction for the same batch: {(method, batch size): {'tokens_per_s': [per batch], 'speedup': [per batch]}}.
    Rounds whose examples lack a batch-1 row are not predicted."""
    one = {(r["method"], r["example"]): r for r in records if r.get("batch_size") == 1 and "error" not in r}
    rounds: dict[tuple, list[int]] = {}
    for r in records:
        if "error" not in r:
            rounds.setdefault((r["method"], r["batch_size"], r["batch"]), []).append(r["example"])
    tps = {}
    for (m, B, b), idx in rounds.items():
        rows = [one.get((m, i)) for i in sorted(idx)]
        if all(rows):
            tps[m, B, b] = sum(r["stats"]["n_tokens"] for r in rows) / round_seconds(cm, rows, saturation)
    out: dict[tuple, dict] = {}
    for (m, B, b), v in sorted(tps.items()):
        cell = out.setdefault((m, B), {"tokens_per_s": [], "speedup": []})
        cell["tokens_per_s"].append(v)
        if (AR.name, B, b) in tps:
            cell["speedup"].append(v / tps[AR.name, B, b])
    return out
