"""Tune K and lenience: measure acceptance and latency once, predict with EWIF, measure the best few.

The paper tunes K and lenience by hand. Here ``tune`` (1) runs a probe configuration
per lenience on a calibration slice and records per-(reviewer, proposer), per-position
acceptance; (2) prices a candidate grid with :func:`csd_lib.price.pricing.price_plan` (the
bench's and ``python -m csd_lib predict``'s price) and the family's per-call cost model;
(3) measures the top ``budget`` candidates for real and keeps the fastest. ``grid_search``
measures every candidate of a grid, for comparison. :func:`tune_tree` does the same for a tree method's tree
budget: one probe at its default budget gives the per-branch rates, every budget of a grid is priced
(:func:`csd_lib.price.pricing.rank_plan_budgets`) and the best few are measured against AR.
Timings use :func:`csd_lib.price.costs.cost_clock`
(the process's CPU time with one torch thread on a CPU), as the cost model's do.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from ..engine.cascade import encode_prompt, generate
from ..engine.methods import CASCADE, DRAFTER, find
from ..engine.plan import TREE_METHODS, Plan, check_lenience, check_max_new_tokens, check_tree_budget
from ..engine.stats import branch_rates
from ..measure.acceptance import acceptance_table, complete_table, latency_costs
from .costs import cost_clock
from .predict import calibration_prompts, candidate_grid, family_costs, generation_shape, predict_for_tuner
from .pricing import price_plan, rank_plan_budgets


@dataclass
class Measured:
    """Time of one configuration on the calibration slice (seconds, summed over the prompts), against
    AR on the same prompts.

    ``predicted``: the ranking's price (the probes' acceptance); ``predicted_own``: the same price
    on this configuration's own measured acceptance, and ``predicted_wall`` / ``predicted_ar_wall``
    its seconds for the slice: where ``predicted`` and ``predicted_own`` differ the probes'
    acceptance is off, where ``predicted_wall`` and ``wall`` (or the AR pair) differ the cost model is.
    """
    k: list[list[int]]
    lenience: float
    wall: float
    speedup: float
    predicted: float | None = None
    ar_wall: float = float("nan")
    predicted_own: float | None = None
    predicted_wall: float | None = None
    predicted_ar_wall: float | None = None


@dataclass
class TuneResult:
    best: Measured
    measured: list[Measured]
    acceptance: dict = field(default_factory=dict)
    costs: dict = field(default_factory=dict)
    ar_wall: float = 0.0  # median AR wall over the calibration slice (AR runs next to every config)

    @property
    def n_measured(self) -> int:
        return len(self.measured)


def _interleaved(fam, prompts: list[str], variants: list[dict], max_new_tokens: int, reps: int = 1,
                 warmup: bool = True) -> tuple[float, list[float], list[list]]:
    """(AR time, each variant's time, each variant's generations): on every prompt AR runs first,
    then every :func:`generate` variant (keyword arguments), ``reps`` times over.

    A speedup against an AR measured once at the start drifts with the machine (a
    configuration measured in a slow spell looks worse than one measured early); against
    AR on the same prompts at the same moment it does not. Each generation is timed with the
    cost model's clock (:func:`csd_lib.price.costs.cost_clock`) on prompts tokenized beforehand.
    """
    ids = [encode_prompt(fam, p) for p in prompts]
    if warmup:
        generate(fam, ids[0], **{**variants[0], "max_new_tokens": max_new_tokens})
    clock = cost_clock()

    def timed(*args, **kw):
        t0 = clock()
        g = generate(fam, *args, max_new_tokens=max_new_tokens, **kw)
        return clock() - t0, g
    ar, walls, gens = 0.0, [0.0] * len(variants), [[] for _ in variants]
    for _ in range(reps):
        for p in ids:
            ar += timed(p, "ar")[0]
            for i, kw in enumerate(variants):
                t, g = timed(p, **kw)
                gens[i].append(g)
                walls[i] += t
    return ar, walls, gens


def _run(fam, prompts, k, lenience, max_new_tokens) -> tuple[float, float, list]:
    """(CSD wall, AR wall, CSD generations) of one (K, lenience), AR right before CSD on each prompt."""
    ar, (wall,), (gens,) = _interleaved(fam, prompts, [{"method": "csd", "k": k, "lenience": lenience}],
                                         max_new_tokens, warmup=False)
    return wall, ar, gens


def _check_args(max_new_tokens, n, candidates=None, **counts) -> None:
    """Refuse bad tuner arguments before any generation runs."""
    check_max_new_tokens(max_new_tokens)
    for name, v in {"n": n, **counts}.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    for c in candidates or ():
        if not isinstance(c, (list, tuple)) or len(c) != 2:
            raise ValueError(f"each candidate must be a (K, lenience) pair, got {c!r}")
        check_lenience(c[1])


def _with_price(m: Measured, price: dict, toks: float, n: int) -> Measured:
    """``m`` with the price on its own acceptance and the seconds it predicts for ``n`` generations."""
    m.predicted_own = price["speedup"]
    m.predicted_wall = n * toks / price["tokens_per_s"]
    m.predicted_ar_wall = n * toks / price["ar_tokens_per_s"]
    return m


def tune(fam, task_or_prompts, budget: int = 8, candidates=None, max_new_tokens: int = 96,
         n_sim: int = 3000, probe_k=None, n: int = 6, progress: bool = True, cost_model=None) -> TuneResult:
    """Predict-then-measure search for the fastest (K, lenience) on a calibration slice.

    Candidates are priced by :func:`csd_lib.price.pricing.price_plan` (the bench's price) with the
    probes' acceptance, the per-call cost model (:mod:`csd_lib.price.costs`; see :func:`family_costs`)
    and the probes' output length and prompt; every measured configuration is also priced on
    its own acceptance (:class:`Measured`).
    """
    _check_args(max_new_tokens, n, candidates, budget=budget, n_sim=n_sim)
    prompts = calibration_prompts(task_or_prompts, n)
    candidates = candidates or candidate_grid(len(fam.drafters), mag=fam.mag.n)
    leniences = sorted({lam for _, lam in candidates})
    for p in prompts[:1]:  # warm up every model and shape before timing
        generate(fam, p, "csd", max_new_tokens=max_new_tokens)
        generate(fam, p, "ar", max_new_tokens=max_new_tokens)
    tables, measured, probe_gens, ar_walls = {}, [], [], []
    probe_k = probe_k or fam.default_k
    cm = family_costs(fam, cost_model)
    for lam in tqdm(leniences, desc="probe", disable=not progress):
        wall, ar, gens = _run(fam, prompts, probe_k, lam, max_new_tokens)
        tables[lam] = acceptance_table([g.stats.to_dict() for g in gens])
        probe_gens += gens
        ar_walls.append(ar)
        toks = generation_shape(fam, prompts, gens)[0]
        measured.append(_with_price(Measured(probe_k, lam, wall, ar / wall, ar_wall=ar),
                                    predict_for_tuner(fam, prompts, gens, cm, n_sim), toks, len(prompts)))
    costs = latency_costs([g.stats.to_dict() for g in probe_gens])
    toks, start = generation_shape(fam, prompts, probe_gens)
    drafters = [d.name for d in fam.drafters] + ["mag"]
    probe = probe_gens[0].plan
    for lam in tables:
        tables[lam] = complete_table(tables[lam], ["target"] + drafters)
    scored = []
    for k, lam in candidates:
        pred = price_plan(Plan.csd(probe.drafters, k, lam, probe.mag_block), tables, cm, toks, start,
                          n_sim=n_sim)["speedup"]
        scored.append((pred, k, lam))
    scored.sort(key=lambda t: -t[0])
    for pred, k, lam in tqdm(scored[:budget], desc="measure top", disable=not progress):
        wall, ar, gens = _run(fam, prompts, k, lam, max_new_tokens)
        ar_walls.append(ar)
        measured.append(_with_price(Measured(k, lam, wall, ar / wall, pred, ar_wall=ar),
                                    predict_for_tuner(fam, prompts, gens, cm, n_sim), toks, len(prompts)))
    best = max(measured, key=lambda m: m.speedup)
    return TuneResult(best, measured, tables, costs, float(np.median(ar_walls)))


def grid_search(fam, task_or_prompts, candidates, max_new_tokens: int = 96, n: int = 6,
                progress: bool = True) -> TuneResult:
    """Measure every candidate (the brute-force reference for :func:`tune`)."""
    _check_args(max_new_tokens, n, candidates)
    prompts = calibration_prompts(task_or_prompts, n)
    for p in prompts[:1]:
        generate(fam, p, "csd", max_new_tokens=max_new_tokens)
        generate(fam, p, "ar", max_new_tokens=max_new_tokens)
    measured, ar_walls = [], []
    for k, lam in tqdm(candidates, desc="grid", disable=not progress):
        wall, ar, _ = _run(fam, prompts, k, lam, max_new_tokens)
        ar_walls.append(ar)
        measured.append(Measured(k, lam, wall, ar / wall, ar_wall=ar))
    best = max(measured, key=lambda m: m.speedup if not math.isnan(m.speedup) else -1)
    return TuneResult(best, measured, ar_wall=float(np.median(ar_walls)))


def _speedups(fam, prompts: list[str], variants: list[dict], max_new_tokens: int, reps: int) -> list[float]:
    """Walltime speedup over AR of several generate() variants, interleaved with AR per prompt."""
    ar, walls, _ = _interleaved(fam, prompts, variants, max_new_tokens, reps)
    return [ar / w for w in walls]


def speedups(fam, task_or_prompts, variants: list[dict], max_new_tokens: int = 96, n: int = 6,
             reps: int = 1) -> list[float]:
    """Walltime speedups over AR of several :func:`generate` variants (keyword arguments: method, k, draft_policy,
    ...) in one run, interleaved with AR per prompt on the calibration slice."""
    _check_args(max_new_tokens, n, reps=reps)
    return _speedups(fam, calibration_prompts(task_or_prompts, n), variants, max_new_tokens, reps)


def remeasure(fam, task_or_prompts, configs, max_new_tokens: int = 96, n: int = 6, reps: int = 2) -> list[float]:
    """Walltime speedups of several (K, lenience) configs in one run, interleaved with AR per prompt."""
    _check_args(max_new_tokens, n, configs, reps=reps)
    variants = [{"method": "csd", "k": k, "lenience": lam} for k, lam in configs]
    return _speedups(fam, calibration_prompts(task_or_prompts, n), variants, max_new_tokens, reps)


def sd_sweep(fam, task_or_prompts, ks=(3, 5, 8, 12, 16), max_new_tokens: int = 96, n: int = 6,
             reps: int = 2) -> dict[int, float]:
    """Walltime speedup of plain SD for several draft lengths, interleaved with AR per prompt."""
    _check_args(max_new_tokens, n, reps=reps)
    variants = [{"method": "sd", "k": k} for k in ks]
    return dict(zip(ks, _speedups(fam, calibration_prompts(task_or_prompts, n), variants, max_new_tokens, reps)))


def sd_sweep_predicted(fam, task_or_prompts, ks=tuple(range(2, 25)), max_new_tokens: int = 96, n: int = 6,
                       cost_model=None, n_sim: int = 3000, drafter: str | None = None) -> dict[int, float]:
    """:func:`sd_sweep` predicted: the walltime speedup of plain SD per draft length, from one probe at the longest k.

    The probe gives the target's per-position acceptance of the drafter's tokens; the cost
    model prices each k (longer drafts: more drafter calls and a dearer review) through
    :func:`csd_lib.price.predict.predict_for_tuner`.
    """
    ks = sorted(set(int(k) for k in ks))
    if not ks or ks[0] < 1:
        raise ValueError(f"ks must hold draft lengths >= 1, got {ks!r}")
    prompts = calibration_prompts(task_or_prompts, n)
    gens = [generate(fam, p, "sd", k=ks[-1], max_new_tokens=max_new_tokens, drafter=drafter) for p in prompts]
    cm = family_costs(fam, cost_model)
    return {k: predict_for_tuner(fam, prompts, gens, cm, n_sim, plan=gens[0].plan.with_k(k))["speedup"] for k in ks}


def tree_budget_grid(method: str) -> list[tuple[int, ...]]:
    """Tree budgets (nodes per depth) the tuner prices for ``method``: tree-sd's width 1-4 at depths 2-16 (its
    drafter offers two choices a node), csd-tree's branches of width 1-3 on the first 1-6 depths of its chain."""
    if find(method) is not None and find(method).tree == DRAFTER:
        return [(w,) * d for w in (1, 2, 3, 4) for d in (2, 4, 6, 8, 12, 16)]
    if find(method) is not None and find(method).tree == CASCADE:
        return [(w,) * d for w in (1, 2, 3) for d in (1, 2, 3, 4, 6)]
    raise ValueError(f"the tuner chooses tree-sd's and csd-tree's tree budgets, not {method!r}'s (Medusa's tree is "
                     f"its heads')")


@dataclass
class TreeTuneResult:
    """The tuner's choice of a tree budget: every budget's price on the probe's rates (``ranked``, best first),
    the measured speedup over AR of the best few (``measured``, budget -> speedup) and the pick (``best``: the
    fastest measured, else the best priced)."""
    method: str
    probe: tuple[int, ...]
    ranked: list[dict]
    measured: dict[tuple[int, ...], float]
    best: tuple[int, ...]


def tune_tree(fam, task_or_prompts, method: str = "csd-tree", budgets=None, measure: int = 2, n: int = 6,
              max_new_tokens: int = 96, cost_model=None, n_sim: int = 2000, reps: int = 1,
              progress: bool = True) -> TreeTuneResult:
    """Choose ``method``'s tree budget on a calibration slice: a probe at the family's default budget gives the
    per-branch rates (:func:`csd_lib.engine.stats.branch_rates`) and acceptance, every budget of ``budgets``
    (default :func:`tree_budget_grid`) is priced with the cost model (:func:`family_costs`), and the best
    ``measure`` are measured against AR on the same prompts (``reps`` times)."""
    if method not in TREE_METHODS:
        raise ValueError(f"tune_tree chooses a tree method's budget ({', '.join(TREE_METHODS)}), not {method!r}'s")
    budgets = [check_tree_budget(b, method) for b in (budgets or tree_budget_grid(method))]
    _check_args(max_new_tokens, n, n_sim=n_sim, reps=reps, **({"measure": measure} if measure else {}))
    prompts = calibration_prompts(task_or_prompts, n)
    cm = family_costs(fam, cost_model)
    generate(fam, prompts[0], method, max_new_tokens=max_new_tokens)  # warm up before the probe
    gens = [generate(fam, p, method, max_new_tokens=max_new_tokens) for p in tqdm(prompts, desc="probe",
                                                                                     disable=not progress)]
    plan = gens[0].plan
    stats = [g.stats.to_dict() for g in gens]
    table = complete_table(acceptance_table(stats, min_reached=1), ["target", *plan.drafters])
    ranked = rank_plan_budgets(plan, budgets, table, branch_rates(stats), cm,
                               *generation_shape(fam, prompts, gens), n_sim=n_sim)
    top = [tuple(r["budget"]) for r in ranked[:measure]]
    measured = dict(zip(top, _speedups(fam, prompts, [{"method": method, "tree": list(b)} for b in top],
                                       max_new_tokens, reps))) if top else {}
    best = max(measured, key=measured.get) if measured else tuple(ranked[0]["budget"])
    return TreeTuneResult(method, plan.tree, ranked, measured, best)
