"""Predictions from benchmark records: EWIF with a run's own acceptance, priced by a cost model.

Each method's records carry their :class:`csd_lib.engine.plan.Plan`, which
:func:`csd_lib.price.ewif.predict_speedup` reads as is; the acceptance is the run's own
per-position rates per (reviewer, proposer) (:func:`csd_lib.measure.acceptance.acceptance_table`), and for a
tree method its per-branch rates (:func:`run_rates`), priced by :func:`csd_lib.price.pricing.price_tree_plan`;
:func:`rank_run_budgets` ranks other tree budgets on them.
:func:`csd_lib.price.pricing.price_plan` is the one price: the bench's predicted speedup, ``python -m
csd_lib predict`` (:mod:`csd_lib.price.forecast`) and the tuner's ranking all call it.
"""
from __future__ import annotations

import json

import numpy as np

from ..engine.plan import TREE_METHODS, Plan, check_tree, vertical_k
from ..engine.stats import branch_rates, model_size_costs
from ..measure.acceptance import acceptance_table, complete_table, latency_costs
from ..measure.records import BenchRecord, as_records, fastest
from .costmodel import CostModel
from .ewif import predict_speedup
from .pricing import price_plan, price_tree_plan, rank_plan_budgets
from .tune import candidate_grid


def run_table(recs: list[BenchRecord], plan: Plan) -> dict:
    """The run's acceptance, every (reviewer, lower level) pair of the plan filled."""
    return complete_table(acceptance_table([r.stats for r in recs], min_reached=1), ["target", *plan.drafters])


def run_model_size_costs(recs: list[BenchRecord]) -> dict:
    """A run's model-size costs (:func:`csd_lib.engine.stats.model_size_costs` of its parameter counts; MaG 0)."""
    costs = model_size_costs(recs[0].stats["params"])
    costs.setdefault("mag", 0.0)
    return costs


def run_shape(recs, cost_model) -> tuple[float, float]:
    """(mean output tokens, mean cache length at the first call) of a run's records; a record
    without a start takes the cost model's ``cache_length``."""
    recs = as_records(recs)
    toks = float(np.mean([r.n_tokens for r in recs]))
    start = float(np.mean([cost_model.cache_length if r.cache_start is None else r.cache_start for r in recs]))
    return toks, start


def run_rates(recs) -> list[list[float]]:
    """A tree run's per-branch rates per depth and rank (:func:`csd_lib.engine.stats.branch_rates`, pooled over
    sibling counts: a budget's tree has nodes where the run's drafter had none, so rates conditioned on the run's
    own shapes would price it with their selection); a ValueError when its records counted none (a chain method,
    or lines written before the meters)."""
    rates = branch_rates([r.stats for r in as_records(recs)])
    if not rates:
        raise ValueError("these records hold no per-branch acceptance (stats 'branches'): run a tree method "
                         "(tree-sd, csd-tree, medusa) with this version of bench to price trees")
    return rates


def predict_walltime(recs, cost_model, n_sim: int = 4000, seed: int = 0, plan: Plan | None = None) -> dict:
    """EWIF walltime speedup of one method from its own records, priced by a cost model
    (:func:`price_plan`; a tree method: :func:`csd_lib.price.pricing.price_tree_plan` on :func:`run_rates`).

    Acceptance: this run's per-position rates per (reviewer, proposer); ``plan`` (default:
    the records' own) prices another K (or tree budget) on the same acceptance; output length and start cache
    length: the run's means.
    """
    recs = as_records(recs)
    plan = plan or recs[0].plan
    toks, start = run_shape(recs, cost_model)
    table = run_table(recs, plan) if plan.method != "ar" else {}
    if plan.method in TREE_METHODS:
        return price_tree_plan(plan, table, run_rates(recs), cost_model, toks, start, n_sim=n_sim, seed=seed)
    return price_plan(plan, table, cost_model, toks, start, n_sim=n_sim, seed=seed)


def rank_run_budgets(recs, cost_model, budgets, n_sim: int = 4000) -> list[dict]:
    """Tree budgets (nodes per depth) for a tree run's method, ranked on its own per-branch rates, acceptance and
    shape by the cost model (:func:`csd_lib.price.pricing.rank_plan_budgets`), best first."""
    recs = as_records(recs)
    plan = recs[0].plan
    if plan is None or plan.method not in TREE_METHODS:
        raise ValueError(f"ranking tree budgets needs a tree method's records (tree-sd, csd-tree, medusa), got "
                         f"{getattr(plan, 'method', None)!r}")
    toks, start = run_shape(recs, cost_model)
    return rank_plan_budgets(plan, [check_tree(b, plan.method) for b in budgets], run_table(recs, plan),
                             run_rates(recs), cost_model, toks, start, n_sim=n_sim)


def round_price(recs, cost_model, n_sim: int = 2000) -> dict:
    """What one target call's round of a run's method costs by the cost model, on the run's own acceptance and
    shape: ``draft_s`` (every drafting call of the round), ``verify_s`` (the target's review), ``round_s``, the
    ``tokens`` it yields (predicted) and ``per_token_s``. A chain method's round is Algorithm 1's step
    (:func:`csd_lib.price.ewif.predict_speedup` over whole generations), a tree method's its budget's step
    (:func:`csd_lib.price.pricing.price_tree_plan`)."""
    recs = as_records(recs)
    plan = recs[0].plan
    if plan is None or plan.method == "ar":
        raise ValueError("a round of drafting and review needs a speculative method's records, not AR's")
    if plan.method in TREE_METHODS:
        step = predict_walltime(recs, cost_model, n_sim)["step"]
        draft, verify, tokens = step["draft_s"], step["verify_s"], step["tokens_per_step"]
    else:
        toks, start = run_shape(recs, cost_model)
        p = predict_speedup(plan, run_table(recs, plan), cost_model, n_sim=n_sim, cache_length=start + toks / 2,
                            horizon=round(toks))
        tokens = p["tokens_per_target_call"]
        verify = p["cost_per_token"] * tokens * p["cost_share"]["target"]
        draft = p["cost_per_token"] * tokens - verify
    return {"draft_s": draft, "verify_s": verify, "round_s": draft + verify, "tokens": tokens,
            "per_token_s": (draft + verify) / tokens}


def _tree_step_speedup(recs, plan: Plan, costs: dict, n_sim: int) -> float:
    """A tree run's step speedup with per-call constants (model-size or measured seconds): no start, no length."""
    return price_tree_plan(plan, run_table(recs, plan), run_rates(recs), CostModel.constant(costs), 1.0, 1.0,
                           n_sim=n_sim)["step"]["speedup"]


def predict_method(recs, cost_model=None, n_sim: int = 4000) -> dict:
    """One method's EWIF predictions from its own records (the fastest repeat per example).

    ``predicted_swi_ms`` uses parameter-ratio costs (isolates the i.i.d. acceptance model);
    ``predicted_walltime`` prices calls with the per-call cost model when one is given
    (:func:`predict_walltime`), else with measured seconds per call, relative to the
    target's (the old, uncalibrated prediction).
    """
    recs = as_records(recs)
    plan = recs[0].plan
    lat = latency_costs([r.stats for r in recs])
    if plan.method == "ar":
        pred_ms = pred_wall = 1.0
    elif plan.method in TREE_METHODS and not branch_rates([r.stats for r in recs]):
        pred_ms = pred_wall = float("nan")  # lines written before the per-branch meters
        cost_model = None
    elif plan.method in TREE_METHODS:
        pred_ms = _tree_step_speedup(recs, plan, run_model_size_costs(recs), n_sim)
        pred_wall = None if cost_model is not None else _tree_step_speedup(recs, plan, lat, n_sim)
    else:
        table = run_table(recs, plan)
        pred_ms = predict_speedup(plan, table, run_model_size_costs(recs), n_sim=n_sim)["speedup"]
        pred_wall = None if cost_model is not None else predict_speedup(plan, table, lat, n_sim=n_sim)["speedup"]
    share = {}
    if cost_model is not None:
        pw = predict_walltime(recs, cost_model, n_sim)
        pred_wall, share = pw["speedup"], pw["cost_share"]
    return {"predicted_swi_ms": pred_ms, "predicted_walltime": pred_wall, "latency_costs": lat, "cost_share": share}


def prediction_limits(records, cost_model, vertical_records=None, n_sim: int = 2000,
                      sd_ks=tuple(range(2, 25)), vertical_ks=tuple(range(1, 17))) -> dict:
    """How far this run's acceptance lets CSD beat SD, by the cost model: the best K and k.

    Each method is searched on its own records' acceptance (a row beyond the measured
    budget repeats its pooled rate): SD every k in ``sd_ks``; CSD every K of
    :func:`csd_lib.price.tune.candidate_grid` (plus the run's own) at the run's lenience, since
    draft-to-draft rows are measured at that lenience only; the vertical cascade every k in
    ``vertical_ks`` (the ``csd`` lines of ``vertical_records``). Each is priced like :func:`predict_walltime` (walltime) and with
    parameter-ratio costs (``swi_ms``). Returns, per method, ``{"preset": ..., "best_walltime":
    ..., "best_swi": ...}``, each ``{"k", "walltime", "swi_ms"}``.
    """
    best = fastest(records)
    out = {}

    def price(recs, plan):
        swi = predict_speedup(plan, run_table(recs, plan), run_model_size_costs(recs), n_sim=n_sim)["speedup"]
        wall = predict_walltime(recs, cost_model, n_sim, plan=plan)["speedup"]
        return {"k": [list(r) for r in plan.k], "walltime": wall, "swi_ms": swi}

    def search(recs, ks):
        base = recs[0].plan
        rows = [price(recs, base.with_k(k)) for k in ks]
        return {"preset": price(recs, base), "best_walltime": max(rows, key=lambda r: r["walltime"]),
                "best_swi": max(rows, key=lambda r: r["swi_ms"])}

    sd = list(best.get("sd", {}).values())
    if sd and sd[0].plan:
        out["sd"] = search(sd, [[[k]] for k in sd_ks])
    csd = list(best.get("csd", {}).values())
    if csd and csd[0].plan:
        plan = csd[0].plan
        ks = [k for k, _ in candidate_grid(len(plan.neural), leniences=(plan.lenience,), mag=plan.mag_block)]
        own = [list(r) for r in plan.k]
        out["csd"] = search(csd, ks + ([own] if own not in ks else []))
    vert = list(fastest(vertical_records or []).get("csd", {}).values())
    if vert and vert[0].plan:
        plan = vert[0].plan
        out["vertical"] = search(vert, [vertical_k(k, len(plan.drafters), plan.mag_block) for k in vertical_ks])
    return out


def format_budget_ranking(method: str, rows: list[dict], source: str, measured: dict | None = None,
                          best=None) -> str:
    """A ranking of tree budgets (:func:`rank_run_budgets`, :func:`csd_lib.price.tune.tune_tree`) as lines of text."""
    measured = measured or {}
    lines = [f"{method}: tree budgets priced on {source}, best first (predicted speedup over AR; tokens and nodes the "
             f"target verifies per call):"]
    for r in rows:
        got = measured.get(tuple(r["budget"]))
        lines.append(f"  {str(list(r['budget'])):<28}{r['speedup']:6.2f}x  {r['tokens_per_target_call']:6.2f} tokens  "
                     f"{r['nodes_per_target_call']:5.1f} nodes" + (f"  measured {got:.2f}x" if got is not None else ""))
    pick = list(best) if best is not None else rows[0]["budget"]
    how = "the fastest measured" if best is not None and measured else "the best priced"
    return "\n".join(lines + [f"  choose --tree '{json.dumps(list(pick))}' ({how})"])
