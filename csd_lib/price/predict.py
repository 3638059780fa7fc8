"""Predictions from benchmark records: EWIF with a run's own acceptance, priced by a cost model.

Each method's records carry their :class:`csd_lib.engine.plan.Plan`, which
:func:`csd_lib.price.ewif.predict_speedup` reads as is; the acceptance is the run's own
per-position rates per (reviewer, proposer) (:func:`csd_lib.measure.acceptance.acceptance_table`).
:func:`csd_lib.price.pricing.price_plan` is the one price: the bench's predicted speedup, ``python -m
csd_lib predict`` (:mod:`csd_lib.price.forecast`) and the tuner's ranking all call it.
"""
from __future__ import annotations

import numpy as np

from ..engine.plan import Plan, vertical_k
from ..engine.stats import model_size_costs
from ..measure.acceptance import acceptance_table, complete_table, latency_costs
from ..measure.records import BenchRecord, as_records, fastest
from .ewif import predict_speedup
from .pricing import price_plan
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


def predict_walltime(recs, cost_model, n_sim: int = 4000, seed: int = 0, plan: Plan | None = None) -> dict:
    """EWIF walltime speedup of one method from its own records, priced by a cost model
    (:func:`price_plan`).

    Acceptance: this run's per-position rates per (reviewer, proposer); ``plan`` (default:
    the records' own) prices another K on the same acceptance; output length and start cache
    length: the run's means.
    """
    recs = as_records(recs)
    plan = plan or recs[0].plan
    toks, start = run_shape(recs, cost_model)
    table = run_table(recs, plan) if plan.method != "ar" else {}
    return price_plan(plan, table, cost_model, toks, start, n_sim=n_sim, seed=seed)


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
