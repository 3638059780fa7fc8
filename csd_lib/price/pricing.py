"""The one price of a plan, and of a method's generation.

:func:`price_plan`: EWIF's simulated cost per token (:func:`csd_lib.price.ewif.predict_speedup`) plus each
model's start, against AR; :func:`price_tree`, :func:`price_tree_plan`: a token tree's review step, each model
fed what the engine feeds it, to choose a tree budget (:func:`rank_plan_budgets`; :func:`rank_tree_budgets` for
the greedy trees of rates). Every prediction calls these: the bench's ``speedup_walltime_predicted`` and
``python -m csd_lib predict`` (:mod:`csd_lib.price.predict`) and the tuner's ranking (:mod:`csd_lib.price.tune`),
with a :class:`csd_lib.price.costmodel.CostModel`.

A method's whole generation is priced before it runs by :func:`method_seconds` with a bench's settings, on an
acceptance that says where it comes from (:func:`run_acceptance`: earlier runs of the family on the task, none
for random weights, else an assumption: :func:`paper_row`); the HF baselines are priced as their twins
(``hf-assisted`` as ``sd``, ``hf-pld`` as ``mag``); the engine's own time between calls is left out: it matters
for the tiny families only. :func:`csd_lib.price.predict.bench_prices` and
:func:`csd_lib.price.predict.generation_seconds` use it for a bench or a ``generate`` call.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import config
from ..engine.methods import CASCADE, DRAFTER, get
from ..engine.plan import MAG, Plan
from ..measure.acceptance import acceptance_table, complete_table
from ..measure.bench import method_plan
from ..measure.records import read_records, stored
from .costmodel import CostModel
from .ewif import (accepted_distribution, best_tree, check_parents, expected_tokens_tree, predict_speedup,
                   simulate_drafts, tree_depths, tree_for_widths, tree_widths)

PAPER_AT_30 = 0.1       # docs/REFERENCE.md, "Acceptance profile for predict": the share accepted by position 30
ASSUMED_MAG = 0.3       # not published: MaG's rate for every reviewer (the tuner's fill for unmeasured pairs)
ASSUMED_FIRST = 0.7     # a trained drafter's first position when no run says otherwise (the paper's small, Fig. 2)
TWINS = {"hf-assisted": "sd", "hf-pld": "mag"}  # an HF baseline is priced as the method it mirrors
N_SIM = 500  # Monte Carlo generations per price of a run before it runs: an estimate, not a forecast


def _start_and_ar(cost_model, models, tokens: float, start: float) -> tuple[float, float, float]:
    """(the models' start per generation, AR's seconds for ``tokens`` tokens, the mean cache length L)."""
    L = start + tokens / 2

    def setup(name):
        s = cost_model.start.get(name, 0.0)
        return s + (float(cost_model.forward[name](start, 0)) if start > 1 else 0.0)
    return sum(setup(n) for n in models), setup("target") + tokens * cost_model.ar_step("target", L), L


def price_plan(plan: Plan, table: dict, cost_model, tokens: float, start: float, n_sim: int = 4000,
               seed: int = 0, max_steps: int | None = None) -> dict:
    """Seconds per generation of ``tokens`` tokens by ``plan``, against AR.

    ``table``: {(reviewer, proposer): per-position conditional acceptance}, or {lenience: such a
    table}; ``start``: the cache length at the first call (T5: 1, Llama: the prompt). A call
    scoring ``n`` tokens costs ``t(n, L)`` at the mean cache length ``L = start + tokens / 2``;
    each model's start per generation (T5: the encoder pass; Llama: the prompt prefill,
    t(start, 0)) is spread over the output. Returns speedup, tokens_per_s, ar_tokens_per_s,
    cache_length, cost_share and (not for AR) tokens_per_target_call and ``capped`` (``max_steps``:
    :func:`csd_lib.price.ewif.predict_speedup`'s cap on simulated steps, None: none). A tree method's
    plan: :func:`price_tree_plan`.
    """
    models = ["target", *plan.neural]
    starts, ar_time, L = _start_and_ar(cost_model, models, tokens, start)
    out = {"cache_length": L, "ar_tokens_per_s": tokens / ar_time}
    if get(plan.method).ar_like:
        return {**out, "speedup": 1.0, "tokens_per_s": tokens / ar_time, "cost_share": {"target": 1.0}}
    p = predict_speedup(plan, table, cost_model, n_sim=n_sim, seed=seed, cache_length=L, horizon=round(tokens),
                        max_steps=max_steps)
    time = starts + tokens * p["cost_per_token"]
    return {**out, "speedup": ar_time / time, "tokens_per_s": tokens / time, "cost_share": p["cost_share"],
            "tokens_per_target_call": p["tokens_per_target_call"], "capped": p["capped"]}


def tree_sd_parents(budget) -> list[int]:
    """The tree ``tree-sd`` grows under ``budget`` (most nodes per depth) when its drafter offers two choices under
    every node: per depth the first ``budget[d]`` candidates by (choice rank, parent order), as ``TreeSD.grow``
    keeps them (a drafter sure of a node offers one choice there, so the engine's trees are at most this)."""
    parents, frontier = [], [-1]
    for width in budget:
        kept = sorted((rank, order, u) for order, u in enumerate(frontier) for rank in range(2))[:width]
        frontier = []
        for _, _, u in kept:
            frontier.append(len(parents))
            parents.append(u)
    return parents


def csd_tree_parents(chain: int, budget) -> list[int]:
    """The tree ``csd-tree`` reviews over a main chain of ``chain`` drafted tokens when every depth of ``budget`` is
    filled: at depth ``d + 1`` the chain token first, then ``budget[d] - 1`` leaves beside it (second choices, MaG's
    other matches); depths past the budget keep the chain only."""
    parents, above = [], -1
    for d in range(chain):
        node = len(parents)
        parents += [above] * (budget[d] if d < len(budget) else 1)
        above = node
    return parents


def tree_sd_fed(widths, catch_up: float) -> list[float]:
    """Tokens each of ``tree-sd``'s drafter calls feeds to grow a tree of ``widths`` (nodes per depth), as
    ``TreeSD.grow`` feeds them: the first call the tokens its cache lacks (``catch_up``: the last step's accepted
    tokens and the target's), each later depth the last committed token and every node so far (the cache keeps
    no tree node); the last depth's nodes are never fed. No call for an empty tree."""
    return [catch_up] + [1 + sum(widths[:d]) for d in range(1, len(widths))] if len(widths) else []


def _tree_sd_draft(widths: list[int], cost_model, drafter: str, catch_up: float, L: float) -> float:
    """Seconds of ``tree-sd``'s drafting per step (:func:`tree_sd_fed`); each call reads the rows of the depth above."""
    rows = [1] + widths[:-1]
    return float(sum(cost_model.call(drafter, n, L, reviews=False) + cost_model.review(r)
                     for n, r in zip(tree_sd_fed(widths, catch_up), rows)))


def price_tree(parents, rates, cost_model, drafter: str | None, cache_length: float | None = None,
               target: str = "target") -> dict:
    """Seconds per token of speculative decoding with one token tree per target call, against AR.

    Each step ``drafter`` drafts the tree, one call per depth as ``tree-sd`` feeds them (:func:`tree_sd_fed`:
    e.g. 1 + 2 and 1 + 4 tokens on the second and third depth of a [2, 2, 2] tree; ``"mag"``: one proposal for the
    whole tree; None: no drafting call, as Medusa's heads, whose time the cost model does not hold), and ``target``
    reviews every node in one call (:meth:`csd_lib.price.costmodel.CostModel.verify`: ``t(nodes + 1, L)``). Tokens per
    step: :func:`csd_lib.price.ewif.expected_tokens_tree` of ``rates`` (rows per depth, or by sibling count). The
    models' starts are left out: they do not depend on the tree. Returns tokens_per_step, draft_s, verify_s,
    step_s, cost_per_token, speedup and tokens_per_s.
    """
    par = check_parents(parents)
    L = cost_model.cache_length if cache_length is None else cache_length
    tokens = expected_tokens_tree(par, rates)
    if drafter is None:
        draft = 0.0
    elif drafter == MAG:
        draft = float(cost_model.call(MAG, 1))
    else:
        draft = _tree_sd_draft(tree_widths(par), cost_model, drafter, tokens, L)
    return _step(tokens, draft, float(cost_model.verify(target, par.size, L)), cost_model.ar_step(target, L))


def _step(tokens: float, draft: float, verify: float, ar_step: float) -> dict:
    step = draft + verify
    return {"tokens_per_step": tokens, "draft_s": draft, "verify_s": verify, "step_s": step,
            "cost_per_token": step / tokens, "speedup": ar_step * tokens / step, "tokens_per_s": tokens / step}


def price_csd_tree(plan: Plan, table: dict, rates, cost_model, cache_length: float | None = None,
                   n_sim: int = 4000, seed: int = 0, target: str = "target", room: int | None = None) -> dict:
    """:func:`price_tree` for ``csd-tree``: the cascade drafts the main chain as ``csd`` does (its calls and chain
    lengths simulated under ``table``, :func:`csd_lib.price.ewif.simulate_drafts`; ``room``: the engine's cap, at
    most ``room - 1`` drafted), one MaG proposal per depth of the budget that has room for a leaf (at most), and the
    target reviews the chain with its leaves (:func:`csd_tree_parents`), whose acceptance ``rates`` give. Returns
    :func:`price_tree`'s keys, ``chain`` (the mean chain length), ``depth`` (the longest), ``nodes`` (the mean nodes
    reviewed) and ``dist`` (P(a drafted tokens accepted), :func:`csd_lib.price.ewif.accepted_distribution`)."""
    L = cost_model.cache_length if cache_length is None else cache_length
    sim = simulate_drafts(plan, table, cost_model, n_sim=n_sim, seed=seed, cache_length=L, target=target, room=room)
    chains, counts = np.unique(sim["drafted"], return_counts=True)
    w = counts / counts.sum()
    trees = [csd_tree_parents(int(n), plan.tree) for n in chains]
    dist = np.zeros(int(chains.max()) + 1)
    for wi, t in zip(w, trees):
        d = accepted_distribution(t, rates)
        dist[:d.size] += wi * d
    leaves = [sum(b > 1 for b in plan.tree[:int(n)]) for n in chains]  # a MaG proposal where a depth has room
    draft = float(sim["cost"].mean()) + float(np.dot(w, leaves)) * float(cost_model.call("mag", 1))
    verify = float(sum(wi * cost_model.verify(target, len(t), L) for wi, t in zip(w, trees)))
    return {**_step(1.0 + float(dist @ np.arange(dist.size)), draft, verify, cost_model.ar_step(target, L)),
            "chain": float(np.dot(w, chains)), "depth": int(chains.max()),
            "nodes": float(sum(wi * len(t) for wi, t in zip(w, trees))), "dist": dist}


def _cut(parents, depth: int) -> list[int]:
    """The nodes of a tree at depth ``depth`` or less, in order (their parents are kept before them)."""
    d = tree_depths(parents)
    keep = [i for i in range(len(d)) if d[i] <= depth]
    new = {old: i for i, old in enumerate(keep)}
    return [-1 if parents[i] < 0 else new[parents[i]] for i in keep]


def _tree_step_at(plan: Plan, table: dict, rates, cost_model, L: float, n_sim: int, seed: int):
    """``at(cap)``: the price of one step of ``plan``'s tree drafted at most ``cap`` deep (None: as deep as the
    budget lets it), with ``nodes`` and ``dist`` (P(a drafted tokens accepted)); each cap priced once."""
    done: dict = {}
    tree = get(plan.method).tree
    if tree is None:
        raise ValueError(f"price_tree_plan prices the tree methods (tree-sd, csd-tree, medusa), not {plan.method!r}; "
                         f"use price_plan")
    full = tree_sd_parents(plan.tree) if tree == DRAFTER else \
        tree_for_widths(rates[max(rates)] if isinstance(rates, dict) else rates, plan.tree)

    def at(cap):
        if cap not in done and tree == CASCADE:
            done[cap] = price_csd_tree(plan, table, rates, cost_model, L, n_sim=n_sim, seed=seed,
                                       room=None if cap is None else cap + 1)
        elif cap not in done:
            par = full if cap is None else _cut(full, cap)
            drafter = plan.drafters[0] if tree == DRAFTER else None
            done[cap] = {**price_tree(par, rates, cost_model, drafter, L), "nodes": float(len(par)),
                         "depth": len(plan.tree), "dist": accepted_distribution(par, rates)}
        return done[cap]
    return at


def _generation(at, horizon: int, depth: int) -> tuple[float, float]:
    """(expected target calls, expected seconds) of a generation of ``horizon`` tokens by steps ``at(cap)``: with
    ``room`` tokens left a step drafts at most ``room - 1`` deep (the engine's cap), so the last steps are shallower."""
    calls, secs = np.zeros(horizon + 1), np.zeros(horizon + 1)
    for done in range(horizon - 1, -1, -1):
        cap = horizon - done - 1
        st = at(cap if cap < depth else None)
        nxt = np.minimum(done + 1 + np.arange(st["dist"].size), horizon)
        calls[done] = 1.0 + st["dist"] @ calls[nxt]
        secs[done] = st["step_s"] + st["dist"] @ secs[nxt]
    return float(calls[0]), float(secs[0])


def price_tree_plan(plan: Plan, table: dict, rates, cost_model, tokens: float, start: float, n_sim: int = 4000,
                    seed: int = 0) -> dict:
    """:func:`price_plan` for a tree method's plan: whole generations of ``tokens`` tokens (the last steps drafted as
    shallow as the engine's cap makes them) of its tree budget (``plan.tree``) at the mean cache length, plus each
    model's start, against AR. A step: ``tree-sd`` :func:`tree_sd_parents` and :func:`price_tree`; ``csd-tree``
    :func:`price_csd_tree`; ``medusa`` the greedy tree of the budget (:func:`csd_lib.price.ewif.tree_for_widths`,
    rows by sibling count read as the widest count's) with no drafting call. ``rates``: the tree's
    (:func:`csd_lib.engine.stats.branch_rates`). Returns speedup, tokens_per_s, ar_tokens_per_s, cache_length,
    tokens_per_target_call, nodes_per_target_call (the budget's step), ``step`` (the price of one step drafted
    as deep as the budget lets it) and cost_share (of that step: the target's review and the drafting)."""
    horizon = max(1, round(tokens))
    starts, ar_time, L = _start_and_ar(cost_model, ["target", *plan.neural], horizon, start)
    at = _tree_step_at(plan, table, rates, cost_model, L, n_sim, seed)
    step = {k: v for k, v in at(None).items() if k != "dist"}
    calls, secs = _generation(at, horizon, step["depth"])
    time = starts + secs
    return {"cache_length": L, "ar_tokens_per_s": horizon / ar_time, "speedup": ar_time / time,
            "tokens_per_s": horizon / time, "tokens_per_target_call": horizon / calls,
            "nodes_per_target_call": step["nodes"], "step": step,
            "cost_share": {"target": step["verify_s"] / step["step_s"], "drafting": step["draft_s"] / step["step_s"]}}


def rank_tree_budgets(rates, cost_model, budgets, drafter: str | None, cache_length: float | None = None,
                      target: str = "target") -> list[dict]:
    """Tree budgets ranked by :func:`price_tree`'s speedup, best first.

    ``budgets``: each a number of nodes (the greedy tree of :func:`csd_lib.price.ewif.best_tree`) or a
    list of nodes per depth (:func:`csd_lib.price.ewif.tree_for_widths`); a chain of ``k`` is SD's draft
    of ``k``. Each row: ``budget``, ``parents``, ``widths`` and the price. A method's own trees:
    :func:`rank_plan_budgets`.
    """
    rows = []
    for b in budgets:
        parents = best_tree(rates, b) if np.ndim(b) == 0 else tree_for_widths(rates, b)
        rows.append({"budget": b, "parents": parents, "widths": tree_widths(parents),
                     **price_tree(parents, rates, cost_model, drafter, cache_length, target)})
    return sorted(rows, key=lambda r: -r["speedup"])


def rank_plan_budgets(plan: Plan, budgets, table: dict, rates, cost_model, tokens: float, start: float,
                      n_sim: int = 4000, seed: int = 0) -> list[dict]:
    """A tree method's plan with each budget (nodes per depth) in ``budgets``, ranked by
    :func:`price_tree_plan`'s speedup, best first; each row ``{"budget": [...], **price}``."""
    rows = [{"budget": list(b), **price_tree_plan(replace(plan, tree=tuple(b)), table, rates, cost_model, tokens,
                                                  start, n_sim=n_sim, seed=seed)} for b in budgets]
    return sorted(rows, key=lambda r: -r["speedup"])


def paper_row(first: float, at30: float = PAPER_AT_30, positions: int = 30) -> list[float]:
    """Conditional per-position rates from the paper's own numbers (docs/REFERENCE.md, "Acceptance profile for
    predict"): Fig. 2's share accepted at position 1 (``first``) held at every later position, the paper's
    i.i.d. model (Section 4), so that the cumulative share ``first ** i`` falls geometrically; lowered only where
    it would still exceed the published ceiling at position 30 (``at30``, "0.1 or below")."""
    r = min(first, (at30 / first) ** (1.0 / (positions - 1)))
    return [first] + [r] * (positions - 1)


def run_acceptance(fam, task: str | None = None, records: list[dict] | None = None) -> tuple[dict, str]:
    """({(reviewer, proposer): rates}, where it comes from) for pricing ``fam``'s runs: ``records`` (earlier
    runs) or the committed results of ``fam`` on ``task``, else none accepted for random weights, else assumed."""
    levels = ["target", *[d.name for d in fam.drafters], "mag"]
    pairs = [(r, p) for i, r in enumerate(levels) for p in levels[i + 1:]]
    path = config.RESULTS_DIR / f"{fam.name}-{task}.jsonl"
    if not records and task and stored(path) is not None and not fam.random_weights:
        records = read_records(path)
    stats = [r["stats"] for r in records or [] if "error" not in r and r["stats"].get("acceptance")]
    if stats:
        return complete_table(acceptance_table(stats, min_reached=1), levels), f"the acceptance of {len(stats)} earlier runs"
    if fam.random_weights:
        return {pair: [0.0] for pair in pairs}, "no draft accepted (random weights)"
    table = {(r, p): [ASSUMED_MAG] if p == MAG else paper_row(ASSUMED_FIRST) for r, p in pairs}
    return table, (f"an assumed acceptance ({ASSUMED_FIRST} at each position of a draft given the earlier ones, the "
                   f"paper's profile; MaG {ASSUMED_MAG})")


def _tree_seconds(plan, table: dict, cm: CostModel, tokens: int, cache_start: float) -> float:
    """A tree method's generation: the starts, then one tree a step (:func:`csd_lib.price.pricing.price_tree`)."""
    drafter = plan.drafters[0] if plan.drafters else "mag"  # medusa's heads cost next to nothing, as MaG
    row = table.get(("target", drafter), [0.0])
    rates = [[row[min(d, len(row) - 1)]] for d in range(len(plan.tree))]
    L = cache_start + tokens / 2
    step = price_tree(tree_for_widths(rates, plan.tree), rates, cm, drafter, L)["cost_per_token"]
    starts = sum(cm.start.get(n, 0.0) + (float(cm.forward[n](cache_start, 0)) if cache_start > 1 else 0.0)
                 for n in ["target", *([drafter] if drafter in cm.forward else [])])
    return starts + tokens * step


def method_seconds(fam, methods, max_new_tokens: int, cost_model: CostModel, table: dict, cache_start: float,
                   k=None, lenience=None, sd_k=None, mag_lenience=None) -> dict[str, float]:
    """{method: seconds of one generation of ``max_new_tokens`` tokens} with a bench's settings (its plans:
    :func:`csd_lib.measure.bench.method_plan`), priced on ``cost_model`` and ``table``; a method the family
    cannot run (e.g. a tree method on a T5 target) costs 0: the bench writes its error line at once."""
    out = {}
    for m in dict.fromkeys(methods):
        try:
            plan = method_plan(fam, TWINS.get(m, m), k, lenience, sd_k, mag_lenience)
        except ValueError:
            out[m] = 0.0
            continue
        if plan.tree and get(plan.method).tree != CASCADE:
            out[m] = _tree_seconds(plan, table, cost_model, max_new_tokens, cache_start)
        else:
            p = price_plan(plan, table, cost_model, max_new_tokens, cache_start, n_sim=N_SIM)
            out[m] = max_new_tokens / p["tokens_per_s"]
    return out
