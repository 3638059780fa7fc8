"""The one price of a plan: EWIF's simulated cost per token plus each model's start, against AR; and the
price of a token tree's review step, to choose a tree budget (:func:`rank_tree_budgets`).

:func:`price_plan` is what the bench's ``speedup_walltime_predicted`` (:mod:`csd_lib.price.predict`),
``python -m csd_lib predict`` (:mod:`csd_lib.price.forecast`) and the tuner's ranking
(:mod:`csd_lib.price.tune`) all call, with a :class:`csd_lib.price.costmodel.CostModel` from
:func:`csd_lib.price.costfile.load_costs` or :func:`csd_lib.price.timing.measure_costs`.
"""
from __future__ import annotations

import numpy as np

from ..engine.plan import Plan
from .ewif import best_tree, check_tree, expected_tokens_tree, predict_speedup, tree_for_widths, tree_widths


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


def price_tree(parents, rates, cost_model, drafter: str, cache_length: float | None = None,
               target: str = "target") -> dict:
    """Seconds per token of speculative decoding with one token tree per target call, against AR.

    Each step ``drafter`` drafts the tree depth by depth, one call per depth feeding the nodes of the
    depth above (the root's one token first; ``"mag"``: one proposal for the whole tree), and ``target``
    reviews every node in one call (:meth:`csd_lib.price.costmodel.CostModel.verify`: ``t(nodes + 1, L)``).
    Tokens per step: :func:`csd_lib.price.ewif.expected_tokens_tree` of ``rates``. The drafter's catch-up
    on the target's own token and the models' starts are left out: they do not depend on the tree.
    Returns tokens_per_step, draft_s, verify_s, step_s, cost_per_token, speedup and tokens_per_s.
    """
    par = check_tree(parents)
    L = cost_model.cache_length if cache_length is None else cache_length
    widths = tree_widths(par)
    if drafter == "mag":
        draft = float(cost_model.call("mag", 1))
    else:
        draft = float(sum(cost_model.call(drafter, w, L) for w in [1, *widths[:-1]]))  # one call per depth
    verify = float(cost_model.verify(target, par.size, L))
    tokens = expected_tokens_tree(par, rates)
    step = draft + verify
    return {"tokens_per_step": tokens, "draft_s": draft, "verify_s": verify, "step_s": step,
            "cost_per_token": step / tokens, "speedup": cost_model.ar_step(target, L) * tokens / step,
            "tokens_per_s": tokens / step}


def rank_tree_budgets(rates, cost_model, budgets, drafter: str, cache_length: float | None = None,
                      target: str = "target") -> list[dict]:
    """Tree budgets ranked by :func:`price_tree`'s speedup, best first.

    ``budgets``: each a number of nodes (the greedy tree of :func:`csd_lib.price.ewif.best_tree`) or a
    list of nodes per depth (:func:`csd_lib.price.ewif.tree_for_widths`); a chain of ``k`` is SD's draft
    of ``k``. Each row: ``budget``, ``parents``, ``widths`` and the price.
    """
    rows = []
    for b in budgets:
        parents = best_tree(rates, b) if np.ndim(b) == 0 else tree_for_widths(rates, b)
        rows.append({"budget": b, "parents": parents, "widths": tree_widths(parents),
                     **price_tree(parents, rates, cost_model, drafter, cache_length, target)})
    return sorted(rows, key=lambda r: -r["speedup"])
