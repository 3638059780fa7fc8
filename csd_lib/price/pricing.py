"""The one price of a plan: EWIF's simulated cost per token plus each model's start, against AR.

:func:`price_plan` is what the bench's ``speedup_walltime_predicted`` (:mod:`csd_lib.price.predict`),
``python -m csd_lib predict`` (:mod:`csd_lib.price.forecast`) and the tuner's ranking
(:mod:`csd_lib.price.tune`) all call, with a :class:`csd_lib.price.costmodel.CostModel` from
:func:`csd_lib.price.costfile.load_costs` or :func:`csd_lib.price.timing.measure_costs`.
"""
from __future__ import annotations

from ..engine.plan import Plan
from .ewif import predict_speedup


def price_plan(plan: Plan, table: dict, cost_model, tokens: float, start: float, n_sim: int = 4000,
               seed: int = 0, max_steps: int | None = None) -> dict:
    """Seconds per generation of ``tokens`` tokens by ``plan``, against AR.

    ``table``: {(reviewer, proposer): per-position conditional acceptance}, or {lenience: such a
    table}; ``start``: the cache length at the first call (T5: 1, Llama: the prompt). A call
    scoring ``n`` tokens costs ``t(n, L)`` at the mean cache length ``L = start + tokens / 2``;
    each model's start per generation (T5: the encoder pass; Llama: the prompt prefill,
    t(start, 0)) is spread over the output. Returns speedup, tokens_per_s, ar_tokens_per_s,
    cache_length, cost_share and (not for AR) tokens_per_target_call and ``capped`` (``max_steps``:
    :func:`csd_lib.price.ewif.predict_speedup`'s cap on simulated steps, None: none).
    """
    L = start + tokens / 2
    models = ["target", *plan.neural]

    def setup(name):
        s = cost_model.start.get(name, 0.0)
        return s + (float(cost_model.forward[name](start, 0)) if start > 1 else 0.0)
    ar_time = setup("target") + tokens * cost_model.ar_step("target", L)
    out = {"cache_length": L, "ar_tokens_per_s": tokens / ar_time}
    if plan.method == "ar":
        return {**out, "speedup": 1.0, "tokens_per_s": tokens / ar_time, "cost_share": {"target": 1.0}}
    p = predict_speedup(plan, table, cost_model, n_sim=n_sim, seed=seed, cache_length=L, horizon=round(tokens),
                        max_steps=max_steps)
    time = sum(setup(n) for n in models) + tokens * p["cost_per_token"]
    return {**out, "speedup": ar_time / time, "tokens_per_s": tokens / time, "cost_share": p["cost_share"],
            "tokens_per_target_call": p["tokens_per_target_call"], "capped": p["capped"]}
