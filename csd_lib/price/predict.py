"""Predictions: what a method will do, priced by a cost model, from one of three sources of acceptance.

Every prediction is :func:`csd_lib.price.pricing.price_plan` (or its tree twin) on an acceptance and a
:class:`csd_lib.price.costmodel.CostModel`; the entry points differ in where the acceptance comes from:

* :func:`predict_from_runs`: a method's own benchmark records (its per-position rates per (reviewer,
  proposer), :func:`csd_lib.measure.acceptance.acceptance_table`; a tree method's per-branch rates,
  :func:`run_rates`), priced on the plan the records carry or another one; :func:`predict_metrics_from_runs` adds
  the parameter-ratio SWI the report prints; :func:`rank_run_budgets` ranks tree budgets on a run;
  :func:`prediction_limits` searches K and k around a run; :func:`round_price` prices one round.
  :func:`ratio_sweep` moves the drafters' cost relative to the target's (the paper's ``c``) on a run's
  acceptance: at factor 1 it is the bench's own prediction.
* :func:`predict_for_device` (``python -m csd_lib predict``): a device before any download. The family's
  models are built from their stored configs with random weights on the device (the shadow builder: real width
  and vocabulary, each model's dtype as a real load gives it; on a CPU, or where memory is short, the depth cut
  to ``max_layers`` and each call's measured cost scaled up to the full depth by the ratio of matrix-multiply
  parameters), each model's call cost t(n, L) is measured (:func:`csd_lib.price.costs.measure_costs`), and AR,
  SD at every k, the vertical cascade (largest drafter + MaG) at every k and CSD over the tuner's K grid are
  priced on an acceptance profile: the paper's (docs/REFERENCE.md "Acceptance profile for predict"), a bench
  results file of your own runs, or explicit rates.
* :func:`bench_prices`, :func:`generation_seconds`: a bench or a ``generate`` call before it runs, from the
  family's probe (:func:`csd_lib.price.costs.probe_cost_model`) and :func:`csd_lib.price.pricing.run_acceptance`.
* :func:`predict_for_tuner`: generations the tuner just ran, priced on their own acceptance and shape
  (:mod:`csd_lib.price.tune`), over the candidates of :func:`candidate_grid`.
"""
from __future__ import annotations

import itertools
import json
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .. import config
from ..engine.cascade import encode_prompt
from ..engine.mag import MaG
from ..engine.models import LM
from ..engine.methods import CSD, REFERENCE, SD, get
from ..engine.plan import MAG, MAG_BLOCK, TREE_METHODS, Plan, check_tree_budget, vertical_k
from ..engine.stats import branch_rates, model_size_costs
from ..families import placement
from ..families.archs import published_config
from ..families.family import Family, custom_name, default_k, load_family, roles
from ..families.hub import checkpoint_config, count_params, model_arch
from ..families.paper_costs import PREVIOUS_WORK
from ..families.presets import DEFAULT_LENIENCE, REAL_PRESETS, TINY_PRESETS
from ..families.shadow import LAYER_KEYS, shadow_model
from ..families.tasks import load_task
from ..measure.acceptance import acceptance_table, complete_table, latency_costs
from ..measure.machine import device_name, environment, fingerprint, match_fingerprints
from ..measure.bench import task_k
from ..measure.records import HF_METHODS, BenchRecord, as_records, fastest, other_run, read_records
from .costmodel import CostModel, scaled
from .costs import (PROBE_START, cost_fingerprint, costs_for, measure_costs, probe_cost_model, read_cost_file,
                    reference_of, step_costs)
from .ewif import COST_MODELS, predict_speedup
from .pricing import (ASSUMED_MAG, PAPER_AT_30, TWINS, method_seconds, paper_row, price_plan, price_tree_plan,
                      rank_plan_budgets, run_acceptance)

# docs/REFERENCE.md, "Acceptance profile for predict": paper Fig. 2 (FLAN-T5 drafters for
# FLAN-T5-XXL), the share of drafts accepted at position 1 (0.7-0.8), held at every later position
# (pricing.paper_row), so that the share accepted falls below 0.1 well before position 30.
PAPER_FIRST = {"base": 0.8, "small": 0.7}
SD_KS = tuple(range(1, 25))
VERTICAL_KS = tuple(range(1, 17))
CPU_MAX_LAYERS = 2       # the depth measured on a CPU unless --max-layers says otherwise
MC_MAX_STEPS = 32        # top-level steps simulated per generation at most (low acceptance: 1 token a step)
PRICED_TOKENS = 128      # a generation's length priced where neither max_new_tokens nor a results file says
RATIO_GRID = tuple(np.geomspace(0.005, 1.0, 12))  # the x axis: largest drafter's step over the target's
TIE = 0.05  # CSD within this share of SD's predicted speedup: a tie


# -- from benchmark runs ------------------------------------------------------------------------

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


def predict_from_runs(recs, cost_model, n_sim: int = 4000, seed: int = 0, plan: Plan | None = None) -> dict:
    """EWIF walltime speedup of one method from its own records, priced by a cost model
    (:func:`price_plan`; a tree method: :func:`csd_lib.price.pricing.price_tree_plan` on :func:`run_rates`).

    Acceptance: this run's per-position rates per (reviewer, proposer); ``plan`` (default:
    the records' own) prices another K (or tree budget) on the same acceptance; output length and start cache
    length: the run's means.
    """
    recs = as_records(recs)
    plan = plan or recs[0].plan
    toks, start = run_shape(recs, cost_model)
    table = run_table(recs, plan) if not get(plan.method).ar_like else {}
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
    return rank_plan_budgets(plan, [check_tree_budget(b, plan.method) for b in budgets], run_table(recs, plan),
                             run_rates(recs), cost_model, toks, start, n_sim=n_sim)


def round_price(recs, cost_model, n_sim: int = 2000) -> dict:
    """What one target call's round of a run's method costs by the cost model, on the run's own acceptance and
    shape: ``draft_s`` (every drafting call of the round), ``verify_s`` (the target's review), ``round_s``, the
    ``tokens`` it yields (predicted) and ``per_token_s``. A chain method's round is Algorithm 1's step
    (:func:`csd_lib.price.ewif.predict_speedup` over whole generations), a tree method's its budget's step
    (:func:`csd_lib.price.pricing.price_tree_plan`)."""
    recs = as_records(recs)
    plan = recs[0].plan
    if plan is None or get(plan.method).ar_like:
        raise ValueError("a round of drafting and review needs a speculative method's records, not AR's")
    if plan.method in TREE_METHODS:
        step = predict_from_runs(recs, cost_model, n_sim)["step"]
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


def predict_metrics_from_runs(recs, cost_model=None, n_sim: int = 4000) -> dict:
    """One method's EWIF predictions from its own records (the fastest repeat per example).

    ``predicted_swi_ms`` uses parameter-ratio costs (isolates the i.i.d. acceptance model);
    ``predicted_walltime`` prices calls with the per-call cost model when one is given
    (:func:`predict_from_runs`), else with measured seconds per call, relative to the
    target's (the old, uncalibrated prediction).
    """
    recs = as_records(recs)
    plan = recs[0].plan
    lat = latency_costs([r.stats for r in recs])
    if get(plan.method).ar_like:
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
        pw = predict_from_runs(recs, cost_model, n_sim)
        pred_wall, share = pw["speedup"], pw["cost_share"]
    return {"predicted_swi_ms": pred_ms, "predicted_walltime": pred_wall, "latency_costs": lat, "cost_share": share}


def prediction_limits(records, cost_model, vertical_records=None, n_sim: int = 2000,
                      sd_ks=tuple(range(2, 25)), vertical_ks=tuple(range(1, 17))) -> dict:
    """How far this run's acceptance lets CSD beat SD, by the cost model: the best K and k.

    Each method is searched on its own records' acceptance (a row beyond the measured
    budget repeats its pooled rate): SD every k in ``sd_ks``; CSD every K of
    :func:`candidate_grid` (plus the run's own) at the run's lenience, since
    draft-to-draft rows are measured at that lenience only; the vertical cascade every k in
    ``vertical_ks`` (the ``csd`` lines of ``vertical_records``). Each is priced like :func:`predict_from_runs`
    (walltime) and with parameter-ratio costs (``swi_ms``). Returns, per method, ``{"preset": ..., "best_walltime":
    ..., "best_swi": ...}``, each ``{"k", "walltime", "swi_ms"}``.
    """
    best = fastest(records)
    out = {}

    def price(recs, plan):
        swi = predict_speedup(plan, run_table(recs, plan), run_model_size_costs(recs), n_sim=n_sim)["speedup"]
        wall = predict_from_runs(recs, cost_model, n_sim, plan=plan)["speedup"]
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


# -- before a run ------------------------------------------------------------------------------

def bench_prices(fam, examples, methods, max_new_tokens: int, k=None, lenience=None, sd_k=None, mag_lenience=None,
                 cost_model: CostModel | None = None, records: list[dict] | None = None) -> tuple[dict[str, float], str]:
    """({method: predicted seconds of one bench run at ``max_new_tokens``}, how they were priced) for a bench
    of ``examples`` (their mean prompt length); ``records``: the results file's earlier lines, if any."""
    k, sd_k = task_k(fam, examples, k, sd_k)
    lengths = [len(encode_prompt(fam, ex.prompt)) for ex in examples]
    prompt = float(np.mean(lengths)) if lengths else 100.0
    cm = cost_model or probe_cost_model(fam, prompt_tokens=round(prompt))
    table, accepted = run_acceptance(fam, examples[0].task if len(examples) else None, records)
    start = PROBE_START if cost_model is None or fam.target.is_encoder_decoder else prompt
    prices = method_seconds(fam, methods, max_new_tokens, cm, table, start, k, lenience, sd_k, mag_lenience)
    how = "the cost model given" if cost_model is not None else cm.env["source"]
    twins = [m for m in prices if m in HF_METHODS]
    note = (f"priced from {how} and {accepted}" + (f"; {', '.join(twins)} as {', '.join(TWINS[m] for m in twins)}"
                                                   if twins else "") + ", without the engine's time between calls")
    return prices, note



def generation_seconds(fam, prompts: list[str], method: str, max_new_tokens: int, k=None) -> tuple[float, str]:
    """(seconds of one generation by ``method`` of a prompt of ``prompts``' mean length, how it was priced), as
    ``generate(fam, prompt, method, k=k)`` runs it (the tree budget and lenience at their defaults)."""
    lengths = [len(encode_prompt(fam, p)) for p in prompts]
    prompt = sum(lengths) / len(lengths)
    cm = probe_cost_model(fam, prompt_tokens=round(prompt))
    table, accepted = run_acceptance(fam)
    chain_k = k if get(method).lenient else None        # the cascade's K
    sd_k = k if get(method).takes_drafter else None     # SD's one draft length
    one = method_seconds(fam, [method], max_new_tokens, cm, table, PROBE_START, k=chain_k, sd_k=sd_k)[method]
    return one, f"priced from {cm.env['source']} and {accepted}"



# -- for the tuner -------------------------------------------------------------------------------

def candidate_grid(n_drafters: int, k1=(1, 2, 3, 4, 6, 8), k2=(0, 2, 5, 10, 15, 20), k_inner=(1, 2),
                   *, mag: int, leniences=(1.0, 2.0, 3.0, 5.0)):
    """(K, lenience) candidates: K[0] varies the horizontal split, K[1] the inner budget;
    ``mag``: MaG's block (the family's ``mag.n``), its column everywhere."""
    out = []
    if n_drafters == 2:  # base, small, MaG
        for a, b, c, lam in itertools.product(k1, k2, k_inner, leniences):
            out.append(([[a, b, mag], [0, c, mag], [0, 0, mag]], lam))
    elif n_drafters == 1:  # small, MaG
        for a, b, lam in itertools.product(sorted(set(k1) | {10, 13}), (0, 5, 10), leniences):
            out.append(([[a, b], [0, mag]], lam))
    else:
        raise ValueError(f"tuning needs 1 or 2 neural drafters, the family has {n_drafters}")
    return out


def calibration_prompts(task_or_prompts, n: int = 6) -> list[str]:
    """A calibration slice: the task's validation split (never its test split), or given prompts."""
    if isinstance(task_or_prompts, str):
        return [ex.prompt for ex in load_task(task_or_prompts, "val", n)]
    return list(task_or_prompts)


def family_costs(fam, cost_model=None):
    """The cost model to rank with: the given one, else the stored one that matches this machine, or one
    measured now (about 10 s): :func:`csd_lib.price.costs.costs_for`."""
    if cost_model is not None:
        return cost_model
    return costs_for(fam)[0]


def generation_shape(fam, prompts: list[str], gens: list) -> tuple[float, float]:
    """(mean output tokens of ``gens``, mean cache length at the first call: 1 for T5's decoder, the
    prompt for Llama), as :func:`run_shape` reads them from bench records."""
    toks = float(np.mean([g.stats.n_tokens for g in gens]))
    if fam.target.is_encoder_decoder:
        return toks, 1.0
    return toks, float(np.mean([len(encode_prompt(fam, p)) for p in prompts]))


def predict_for_tuner(fam, prompts: list[str], gens: list, cost_model, n_sim: int, plan: Plan | None = None) -> dict:
    """:func:`csd_lib.price.pricing.price_plan` of ``plan`` (default: the plan of ``gens``) on the acceptance and
    shape of ``gens``, the generations the tuner ran on ``prompts``."""
    own = gens[0].plan
    table = complete_table(acceptance_table([g.stats.to_dict() for g in gens], min_reached=1),
                           ["target", *own.drafters])
    toks, start = generation_shape(fam, prompts, gens)
    return price_plan(plan or own, table, cost_model, toks, start, n_sim=n_sim)


# -- the cost ratio as the lever -----------------------------------------------------------------
# EWIF's predicted SD, vertical and CSD speedups as the drafters' cost relative to the target's moves (the
# paper's coefficient ``c``), priced by this machine's cost model. :func:`cost_ratios` reads each drafter's
# cost relative to the target from a few calls (:func:`csd_lib.price.costs.step_costs`). :func:`ratio_sweep`
# scales every drafter's calls in the cost model by one factor and prices each method's own plan on a
# benchmark run's own acceptance with :func:`predict_from_runs`. The x axis is the largest drafter's one-token
# step over the target's, under the cost model; since one factor scales every drafter, the smallest drafter's
# ratio is that times a fixed share (:attr:`RatioSweep.smallest_share`), and the paper's marks for its smaller
# drafter (FLAN-T5-small, 77M) sit where this family's smallest drafter would cost as much.

def cost_ratios(steps: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
    """{drafter: {n: its n-token call over the target's}} from :func:`csd_lib.price.costs.step_costs`."""
    return {name: {n: t / steps["target"][n] for n, t in by_n.items()} for name, by_n in steps.items()
            if name != "target"}


def paper_ratios() -> dict[str, tuple[float, str]]:
    """The paper's FLAN-T5 cost ratios, {label: (ratio, 'largest' or 'smallest': the drafter it prices)}:
    base over XXL by parameters (248M / 11.1B) and as quoted from Leviathan et al. (0.04), and small over
    XXL by parameters (77M / 11.1B)."""
    params = COST_MODELS["flan_t5_params"]
    return {f"FLAN-T5-base / XXL parameters (248M / 11.1B = {params['base']:.3f})": (params["base"], "largest"),
            f"paper's quoted cost of base ({PREVIOUS_WORK['flan-t5'].costs['base']:g})":
                (PREVIOUS_WORK["flan-t5"].costs["base"], "largest"),
            f"FLAN-T5-small / XXL parameters (77M / 11.1B = {params['small']:.4f})": (params["small"], "smallest")}


@dataclass
class RatioSweep:
    """Predicted speedups against the cost ratio (see the comment above :func:`cost_ratios`)."""
    family: str
    drafter: str                       # the largest drafter: its ratio is the x axis
    measured: float                    # its ratio under the cost model (factor 1: this machine)
    ratios: list[float]
    speedups: dict[str, list[float]]   # method ('sd', 'vertical', 'csd') -> predicted speedup per ratio
    smallest: str                      # the smallest drafter (the largest too with one drafter)
    smallest_share: float              # its ratio over the largest drafter's, under the cost model
    plans: dict = field(default_factory=dict)   # method -> (records, plan) priced
    cost_model: CostModel | None = None
    n_sim: int = 1000

    def position(self, ratio: float, role: str) -> float:
        """Where on the x axis a ratio of the 'largest' or the 'smallest' drafter sits."""
        return ratio if role == "largest" else ratio / self.smallest_share

    def at(self, factor: float) -> dict[str, float]:
        """Each method's predicted speedup with every drafter's calls scaled by ``factor``."""
        return ratio_predictions(self.plans, self.cost_model, factor, self.n_sim)

    def sentence(self, factor: float = 1.0) -> str:
        """Whether CSD beats SD at ``factor`` times this machine's drafter cost, as EWIF predicts it."""
        p = self.at(factor)
        gain, r = p["csd"] / p["sd"], factor * self.measured
        where = "on this machine" if factor == 1.0 else f"with the drafters {factor:.2g}x as dear as here"
        step = f"{self.drafter} costs {r:.2f} of a target step"
        if gain > 1 + TIE:
            return (f"EWIF predicts that {where} CSD beats SD by {gain:.2f}x ({p['csd']:.2f}x against "
                    f"{p['sd']:.2f}x): {step}.")
        verb = "ties SD" if gain >= 1 - TIE else "loses to SD"
        return (f"EWIF predicts that {where} CSD {verb} ({p['csd']:.2f}x against {p['sd']:.2f}x, within "
                f"{TIE:.0%} counts as a tie) because {step}: a cheap drafter makes plain SD strong and leaves the "
                f"cascade little to save.")


def _ratio(cm: CostModel, drafter: str) -> float:
    return float(cm.forward[drafter](1, cm.cache_length) / cm.forward["target"](1, cm.cache_length))


def run_plans(records) -> dict:
    """{method: (its fastest records, the plan priced)}: SD and CSD at their own plans, the vertical cascade
    (largest drafter + MaG) on CSD's records at the K of CSD's largest drafter."""
    best = {m: list(v.values()) for m, v in fastest(as_records(records)).items()}
    csd = best["csd"]
    plan = csd[0].plan
    vert = plan.with_k(vertical_k(plan.k[0][0], len(plan.drafters), plan.mag_block))
    return {"sd": (best["sd"], best["sd"][0].plan), "vertical": (csd, vert), "csd": (csd, plan)}


def ratio_predictions(plans: dict, cost_model: CostModel, factor: float, n_sim: int = 1000) -> dict[str, float]:
    """Each method's predicted speedup with every drafter's forward and start costs scaled by ``factor``."""
    cm = cost_model if factor == 1.0 else scaled(cost_model, {n: factor for n in cost_model.forward
                                                               if n != "target"})
    return {m: predict_from_runs(recs, cm, n_sim, plan=plan)["speedup"] for m, (recs, plan) in plans.items()}


def ratio_sweep(records, cost_model: CostModel, ratios=RATIO_GRID, n_sim: int = 1000) -> RatioSweep:
    """EWIF's SD, vertical and CSD speedups at every ratio of ``ratios`` (a run's own acceptance: its
    ``records``, which need sd and csd lines), and at this machine's (factor 1), priced by ``cost_model``."""
    plans = run_plans(records)
    drafter, smallest = plans["csd"][1].neural[0], plans["csd"][1].neural[-1]
    measured = _ratio(cost_model, drafter)
    ratios = sorted({*map(float, ratios), measured})
    rows = [ratio_predictions(plans, cost_model, 1.0 if r == measured else r / measured, n_sim) for r in ratios]
    return RatioSweep(cost_model.family, drafter, measured, ratios, {m: [row[m] for row in rows] for m in plans},
                      smallest, _ratio(cost_model, smallest) / measured, plans, cost_model, n_sim)


# -- for a device (python -m csd_lib predict): acceptance profiles -------------------------------

def paper_table(levels: list[str], t5: bool = True) -> tuple[dict, list[str]]:
    """The paper's profile for a T5 family (``t5``) with drafters ``base``, ``small`` (or one) and MaG."""
    neural = [lv for lv in levels[1:] if lv != MAG]
    if not t5 or not neural or any(d not in PAPER_FIRST for d in neural):
        raise ValueError(f"--acceptance paper: the paper publishes per-position acceptance only for FLAN-T5 "
                         f"base/small drafting for FLAN-T5-XXL (Fig. 2); this family's drafters are {neural}, "
                         f"and no published figure covers them (Vicuna-68m -> Vicuna-7B included); pass "
                         f"your own rates, e.g. --acceptance {','.join(['0.6'] * len(neural) + ['0.3'])} "
                         f"(one rate per drafter, MaG last), or a bench results file")
    table = {}
    for i, reviewer in enumerate(levels):
        for proposer in levels[i + 1:]:
            table[(reviewer, proposer)] = [ASSUMED_MAG] if proposer == MAG else paper_row(PAPER_FIRST[proposer])
    notes = [f"acceptance: paper Fig. 2 (FLAN-T5, GSM8K/MMLU): position 1 at "
             f"{', '.join(f'{d} {PAPER_FIRST[d]}' for d in neural)}, each later position accepted at that rate "
             f"given the earlier ones (the paper's i.i.d. model), so the share accepted falls below {PAPER_AT_30} by "
             f"position 30",
             f"assumed (not published): each drafter keeps that profile under every reviewer (draft-to-draft "
             f"included) and MaG's tokens are accepted at {ASSUMED_MAG} per position"]
    return table, notes


def _rate(text: str, where: str) -> list[float]:
    try:
        vals = [float(v) for v in text.split(":")]
    except ValueError:
        raise ValueError(f"--acceptance: {where} has {text!r}, not a rate (a number in [0, 1], or "
                         f"per-position rates joined by ':', e.g. 0.8:0.7:0.6)") from None
    if not vals or any(not (0.0 <= v <= 1.0) for v in vals):
        raise ValueError(f"--acceptance: {where} has {text!r}; every rate must lie in [0, 1]")
    return vals


def parse_rates(text: str, levels: list[str]) -> dict:
    """``REVIEWER<-PROPOSER=RATE,...`` or one rate per drafter (MaG last), each rate a number or
    per-position rates joined by ':'; pairs not given are filled (:func:`csd_lib.measure.acceptance.complete_table`)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    example = ",".join(f"{levels[0]}<-{d}=0.7" for d in levels[1:])
    if not items:
        raise ValueError(f"--acceptance is empty; give 'paper', a bench results file or rates, e.g. {example}")
    table = {}
    if all("=" not in t for t in items):
        if len(items) != len(levels) - 1:
            raise ValueError(f"--acceptance: {len(items)} rates for {len(levels) - 1} drafters "
                             f"({', '.join(levels[1:])}); give one per drafter, largest first and MaG last, "
                             f"or pairs like {example}")
        for j, (proposer, t) in enumerate(zip(levels[1:], items), 1):
            row = _rate(t, proposer)
            for reviewer in levels[:j]:
                table[(reviewer, proposer)] = row
        return table
    for t in items:
        pair, _, val = t.partition("=")
        reviewer, sep, proposer = (s.strip() for s in pair.partition("<-"))
        if not sep or not val or reviewer not in levels or proposer not in levels \
                or levels.index(reviewer) >= levels.index(proposer):
            raise ValueError(f"--acceptance: {t!r} is not REVIEWER<-PROPOSER=RATE with the reviewer above the "
                             f"proposer among {', '.join(levels)}; e.g. {example}")
        if (reviewer, proposer) in table:
            raise ValueError(f"--acceptance gives {reviewer}<-{proposer} twice; give each pair once")
        table[(reviewer, proposer)] = _rate(val, pair)
    return complete_table(table, levels)


def read_acceptance_file(path: str, family: str) -> list:
    """A bench results file's successful records, all of ``family`` and one task (as bench checks a
    file it resumes: :func:`csd_lib.measure.records.other_run`); missing, a folder, another family's,
    or without acceptance: ValueError."""
    p = Path(path)
    how = "give 'paper', rates (e.g. 0.7,0.6,0.3) or a bench results JSONL (python -m csd_lib bench --out FILE)"
    if p.is_dir():
        raise ValueError(f"--acceptance {path} is a folder, not a results file; {how}")
    if not p.exists():
        raise ValueError(f"--acceptance {path}: no such file; {how}")
    recs = read_records(p, fix="delete that line, or give another --acceptance file")
    problem = other_run(recs, family=family)
    if problem:
        there = next(r.get("family") for r in recs if "error" not in r and r.get("family") != family)
        raise ValueError(f"--acceptance {path} holds another family's runs ({problem}); predict with --family "
                         f"{there}, or bench {family} into a file of its own and pass that")
    recs = [r for r in recs if "error" not in r]
    tasks = sorted({str(r.get("task")) for r in recs})
    if len(tasks) > 1:
        raise ValueError(f"--acceptance {path} holds runs of {len(tasks)} tasks ({', '.join(tasks)}), whose "
                         f"acceptance differs; give a file of one task (bench writes one per --out)")
    if not any(r["stats"].get("acceptance") for r in recs):
        raise ValueError(f"--acceptance {path} holds no speculative run with acceptance counts; run "
                         f"python -m csd_lib bench with sd or csd into it")
    return as_records(recs)


# -- building and measuring ---------------------------------------------------------------------

def family_spec(family_name: str | None = None, target: str | None = None, drafters=None) -> dict:
    """What predict needs of a family, from configs only: {name, ids and cfgs by role, k, lenience,
    real, seq2seq}. A preset by name, or your own ``target`` and ``drafters`` (largest first), whose
    ``config.json`` must be at hand (a local folder, the hub cache, or a stored published one)."""
    if target is not None:
        ids = {"target": target, **dict(zip(roles(len(drafters or [])), drafters or []))}
        cfgs = {}
        for role, rid in ids.items():
            cfgs[role] = checkpoint_config(rid)
            if cfgs[role] is None:
                raise ValueError(f"no config.json at hand for {rid!r}: predict builds the model from its config "
                                 f"without downloading weights; give a local folder, or a hub id in the cache")
        k, lenience, name, real = default_k(len(ids) - 1), DEFAULT_LENIENCE, custom_name(target), True
    elif family_name in REAL_PRESETS:
        spec = REAL_PRESETS[family_name]
        ids = {"target": spec["target"], **dict(zip(roles(len(spec["drafters"])), spec["drafters"]))}
        cfgs = {role: published_config(rid) for role, rid in ids.items()}
        k, lenience, name, real = spec["k"], spec["lenience"], family_name, True
    elif family_name in TINY_PRESETS:
        spec = TINY_PRESETS[family_name]
        ids, cfgs, k, lenience, name, real = {}, {}, spec["k"], spec["lenience"], family_name, False
    else:
        raise ValueError(f"unknown family {family_name!r}; use one of {', '.join([*TINY_PRESETS, *REAL_PRESETS])}, "
                         f"or --target/--drafters")
    seq2seq = model_arch(cfgs["target"]) == "t5" if real else "t5" in family_name
    return dict(name=name, ids=ids, cfgs=cfgs, k=k, lenience=lenience, real=real, seq2seq=seq2seq,
                neural=roles(len(k) - 1))


def _cut(cfg: dict, max_layers: int | None) -> dict:
    """The config with its layer counts cut to ``max_layers`` (as the shadow builder cuts them)."""
    return {key: (min(v, max_layers) if key in LAYER_KEYS and max_layers else v) for key, v in cfg.items()}


def _matmul_params(cfg: dict) -> int:
    """Parameters that a call multiplies by: all but an untied input embedding (a lookup)."""
    n, _ = count_params(cfg)
    tied = cfg.get("tie_word_embeddings", cfg.get("model_type") != "t5")
    return n if tied else n - cfg["vocab_size"] * (cfg.get("d_model") or cfg["hidden_size"])


def depth_scale(cfg: dict, max_layers: int | None) -> tuple[float, int, int]:
    """(cost factor from the cut depth to the full one, full layers, measured layers)."""
    cut = _cut(cfg, max_layers)
    layers = max(cfg.get(k, 0) for k in LAYER_KEYS)
    measured = max(cut.get(k, 0) for k in LAYER_KEYS)
    if measured == layers:
        return 1.0, layers, measured
    return _matmul_params(cfg) / _matmul_params(cut), layers, measured


def _policy(spec: dict, info: config.DeviceInfo, device=None, dtype=None) -> config.Policy:
    """The device and dtype policy of a real load of the family (:func:`csd_lib.config.policy`)."""
    return config.policy("real", model_arch(spec["cfgs"]["target"]), info, dtype, device)


def memory_check(spec: dict, info: config.DeviceInfo) -> tuple[bool, str]:
    """Whether the full family fits the device (from its configs, nothing built) and why not, in the dtypes a
    real load would use (:func:`csd_lib.families.placement.family_memory`)."""
    pol = _policy(spec, info)
    plan = placement.family_memory(spec["cfgs"], pol.dtype, pol.keep_fp32, info)
    return plan.fits, plan.message


def shadow_family(spec: dict, device, max_layers: int | None, seed: int = 0, dtype=None) -> Family:
    """A family's models with random weights at full width (depth cut to ``max_layers``), on ``device``, in the
    dtypes a real load gives them (the device's policy, or ``dtype``: T5's ``wo`` stays fp32 in fp16)."""
    pol = _policy(spec, config.describe_device(device), device, dtype)
    lms = [LM(role, shadow_model(_cut(spec["cfgs"][role], max_layers), seed=seed + i, device=pol.device,
                                 dtype=pol.dtype, keep_fp32=pol.keep_fp32), model_id=rid)
           for i, (role, rid) in enumerate(spec["ids"].items())]
    vocab = lms[0].vocab_size
    bigram = np.random.default_rng(seed).integers(3, vocab, size=vocab).astype(np.int32)
    return Family(spec["name"], None, lms[0], lms[1:], MaG(bigram), spec["k"], spec["lenience"], policy=pol)


# -- pricing ------------------------------------------------------------------------------------

def _row(method: str, plan: Plan, price: dict, **extra) -> dict:
    return {"method": method, **extra, "k": [list(r) for r in plan.k] if plan.k else None,
            "lenience": plan.lenience, "speedup": price["speedup"], "tokens_per_s": price["tokens_per_s"]}


def price_grid(neural: list[str], k, lenience: float, cost_model: CostModel, table_for, shape_for,
               n_sim: int = 4000, sd_ks=SD_KS, vertical_ks=VERTICAL_KS, mag_block: int = MAG_BLOCK,
               max_steps: int | None = None, progress: bool = False) -> list[dict]:
    """Rows {method, k, speedup, tokens_per_s, ...} for AR, SD with each drafter at every k, the
    vertical cascade (largest drafter + MaG) at every k, and CSD over the tuner's K grid plus ``k``.

    ``table_for(method, plan)`` and ``shape_for(method)`` give the acceptance table and the
    (tokens, start) to price a plan on. ``max_steps``: the Monte Carlo's cap on steps per generation
    (a capped row says ``capped``); ``progress``: a bar on stderr, each plan weighed by :func:`mc_work`.
    """
    drafters = [*neural, "mag"]
    grid = [g for g, _ in candidate_grid(len(neural), leniences=(lenience,), mag=mag_block)]
    own = [list(r) for r in k]
    plans = [("ar", Plan.ar(), {})]
    plans += [("sd", Plan.sd(n, d), {"drafter": d}) for d in neural for n in sd_ks]
    plans += [("vertical", Plan.csd(drafters, vertical_k(n, len(drafters), mag_block), lenience, mag_block), {})
              for n in vertical_ks]
    plans += [("csd", Plan.csd(drafters, g, lenience, mag_block), {"preset": g == own})
              for g in grid + ([own] if own not in grid else [])]
    rows = []
    work = [mc_work(plan) for _, plan, _ in plans]
    with tqdm(total=sum(work), desc="predict: pricing plans", disable=not progress, file=sys.stderr,
              bar_format="{l_bar}{bar}| [{elapsed}<{remaining}]") as bar:  # closed before an error is printed
        for (method, plan, extra), w in zip(plans, work):
            tokens, start = shape_for(method)
            price_ = price_plan(plan, table_for(method, plan), cost_model, tokens, start, n_sim=n_sim,
                                max_steps=max_steps)
            rows.append(_row(method, plan, price_, **extra, **({"capped": True} if price_.get("capped") else {})))
            bar.update(w)
    return rows


def mc_work(plan: Plan) -> float:
    """A plan's Monte Carlo work relative to others' (the pricing bar's weight): its neural draft calls a step
    (K's entries outside MaG's column, plus the target's), three times as many with MaG at the bottom."""
    if not plan.drafters:
        return 0.05  # AR is priced in closed form
    neural = [j for j, d in enumerate(plan.drafters) if d != MAG]
    calls = 1 + float(np.asarray(plan.k)[:, neural].sum())
    return calls * (3 if MAG in plan.drafters else 1)


def best_rows(rows: list[dict]) -> dict:
    """The fastest row of each method."""
    out = {}
    for r in rows:
        if r["method"] not in out or r["tokens_per_s"] > out[r["method"]]["tokens_per_s"]:
            out[r["method"]] = r
    return out


def predict_for_device(family_name: str | None, acceptance: str = "paper", device=None, max_layers: int | None = None,
             cost_file: str | None = None, max_new_tokens: int | None = None, prompt_tokens: int = 100,
             seconds: float = 20.0, n_sim: int = 4000, *, target: str | None = None, drafters=None,
             costs: str | None = None, max_steps: int | None = MC_MAX_STEPS, progress: bool = False) -> dict:
    """Predicted tokens/s and speedup of every method on ``device``, the CLI's ``predict`` (see the module docstring).

    ``acceptance``: 'paper', a bench results JSONL, or rates (:func:`parse_rates`). ``cost_file``: a
    cost model JSON to price with instead of measuring (``costs``: its former keyword, which notebook
    05 passes). ``max_new_tokens``, ``prompt_tokens``: the generation priced (``max_new_tokens`` None: a results
    file's own length per method, else :data:`PRICED_TOKENS`; a results file gives its own prompt).
    ``target``, ``drafters``: your own models instead of ``family_name`` (:func:`family_spec`). ``max_steps``: the Monte Carlo's cap on steps per generation
    (:func:`csd_lib.price.ewif.predict_speedup`; a note says how many plans reached it); ``progress``: a bar
    on stderr over the plans priced. Checks every input before anything is built.
    """
    cost_file = costs if cost_file is None else cost_file
    spec = family_spec(family_name, target, drafters)
    family_name, real, neural = spec["name"], spec["real"], spec["neural"]
    levels = ["target", *neural, "mag"]
    table, recs, notes = acceptance_source(acceptance, levels, spec)
    cm = read_cost_file(cost_file, family_name, levels[:-1]) if cost_file else None
    info = config.describe_device(device)
    out = {"family": family_name, "device": device_name(device) if device is not None else device_name(),
           "acceptance": acceptance}
    fits, why = memory_check(spec, info) if real else (True, "")
    out["fits"] = fits
    if not fits:
        warnings.warn(f"{family_name} does not fit this device: {why}", stacklevel=2)
        notes.append(f"memory: {family_name} does not fit this device ({why})")
    if real and max_layers is None and (info.type == "cpu" or not fits):
        max_layers = CPU_MAX_LAYERS
    depth = {}
    if cm is None:
        cm, depth = _measured_costs(spec, device, max_layers, prompt_tokens, seconds, notes)
    else:
        out["device"] = cm.device
        notes.append(f"costs: {cost_file} (measured on {cm.device}): {_costs_machine(spec, device, cm).describe()}")
    own_shape = (float(max_new_tokens or PRICED_TOKENS), 1.0 if spec["seq2seq"] else float(prompt_tokens))
    table_for, shape_for = _pricing_inputs(recs, table, levels, cm, own_shape, max_new_tokens)
    if recs is not None and max_new_tokens is not None:
        notes.append(f"length: each generation priced at {max_new_tokens} tokens (max_new_tokens), not its runs' own")
    rows = price_grid(neural, spec["k"], spec["lenience"], cm, table_for, shape_for, n_sim=n_sim,
                      max_steps=max_steps, progress=progress)
    capped = sum(r.get("capped", False) for r in rows)
    if capped:
        notes.append(f"Monte Carlo: {capped} of {len(rows)} plans emit so few tokens a step that their "
                     f"generations were cut at {max_steps} steps and priced by those steps' cost per token")
    out.update(tokens=shape_for("csd")[0], depth=depth, notes=notes, best=best_rows(rows), rows=rows,
               cost_model=cm.to_dict() | {"samples": []})
    return out


def _costs_machine(spec: dict, device, cm: CostModel):
    """How a given cost model's machine fingerprint compares with this one's: with reference steps
    measured here for an embedded family (a few calls, :func:`csd_lib.price.costs.step_costs`), the static
    fingerprint only for a real one (its models are not built when a cost model is given)."""
    reference = None if spec["real"] else reference_of(step_costs(load_family(spec["name"], device=device)))
    return match_fingerprints(fingerprint(environment(device), reference), cost_fingerprint(cm))


def acceptance_source(acceptance: str, levels: list[str], spec: dict) -> tuple[dict | None, list | None, list[str]]:
    """(table, records, notes) of ``acceptance``: the paper's profile, a results file's records (table
    None) or rates given as text (records None)."""
    table, recs, notes = None, None, []
    if acceptance == "paper":
        table, pnotes = paper_table(levels, spec["seq2seq"])
        notes += pnotes
        if spec["name"] != "flan-t5":
            notes.append(f"the profile was measured against FLAN-T5-XXL; for {spec['name']} it is an assumption")
    elif acceptance.strip() and (Path(acceptance).suffix in (".jsonl", ".json") or Path(acceptance).exists()):
        recs = read_acceptance_file(acceptance, spec["name"])
        notes.append(f"acceptance: each method's own runs in {acceptance} (methods it lacks: all its runs pooled)")
    else:
        table = parse_rates(acceptance, levels)
        notes.append(f"acceptance: the rates given ({acceptance}); pairs not given are filled from the given ones")
    return table, recs, notes


def _measured_costs(spec: dict, device, max_layers: int | None, prompt_tokens: int, seconds: float,
                    notes: list[str]) -> tuple[CostModel, dict]:
    """The cost model measured here: a real family's shadow at ``max_layers``, each call scaled to the full
    depth (with ``depth``: per role, its layers and scale), or the embedded family itself."""
    depth = {}
    if not spec["real"]:
        fam = load_family(spec["name"], device=device)
        return measure_costs(fam, list(range(3, 3 + prompt_tokens)), seconds=seconds, min_reps=1), depth
    fam = shadow_family(spec, device, max_layers)
    factors = {}
    for role, rid in spec["ids"].items():
        factors[role], full, measured = depth_scale(spec["cfgs"][role], max_layers)
        depth[role] = {"id": rid, "layers": full, "measured_layers": measured, "cost_scale": factors[role]}
    if any(f != 1.0 for f in factors.values()):
        notes.append(f"depth: measured at {max_layers} layer(s) per stack, each call's cost scaled to the "
                     f"full depth by the ratio of matmul parameters (x" +
                     ", x".join(f"{v:.1f} {k}" for k, v in factors.items()) + ")")
    cm = scaled(measure_costs(fam, list(range(100, 100 + prompt_tokens)), seconds=seconds, min_reps=1), factors)
    return cm, depth


def _pricing_inputs(recs, table, levels: list[str], cost_model: CostModel, own_shape: tuple[float, float],
                    max_new_tokens: int | None = None):
    """(table_for(method, plan), shape_for(method)) for :func:`price_grid`: from a results file's records
    (each method's own runs, else all pooled; their lengths, or ``max_new_tokens`` where given) or one table and
    ``own_shape``."""
    if recs is None:
        return (lambda method, plan: table), (lambda method: own_shape)
    best = {m: list(v.values()) for m, v in fastest(recs).items()}
    pooled = complete_table(acceptance_table([r.stats for r in recs if r.stats.get("acceptance")], min_reached=1),
                            levels)
    run_of = {"vertical": "csd"}

    def table_for(method, plan):
        """The method's own runs where they used the plan's drafters, else every run pooled."""
        rs = best.get(run_of.get(method, method))
        own = rs and rs[0].plan and set(plan.drafters) <= set(rs[0].plan.drafters)
        return run_table(rs, plan) if own else pooled

    def shape_for(method):
        rs = best.get(run_of.get(method, method)) or best.get("ar") or next(iter(best.values()))
        toks = float(max_new_tokens) if max_new_tokens is not None else float(np.mean([r.n_tokens for r in rs]))
        return toks, float(np.mean([cost_model.cache_length if r.cache_start is None else r.cache_start for r in rs]))
    return table_for, shape_for


def format_device_prediction(res: dict) -> str:
    """A device prediction (:func:`predict_for_device`) as a few lines of text."""
    best = res["best"]
    ar = best["ar"]["tokens_per_s"]
    lines = [f"predicted on {res['device']} for {res['family']} ({res['tokens']:.0f}-token generations):"]
    lines += [f"  note: {n}" for n in res["notes"]]
    names = {REFERENCE: "AR", SD.name: "SD", "vertical": "vertical (largest drafter + MaG)", CSD.name: "CSD"}
    for m in names:
        r = best[m]
        how = "" if m == REFERENCE else (f"  k = {r['k'][0][0]}" + (f" ({r['drafter']})" if "drafter" in r else "")
                                         if m != CSD.name else f"  K = {r['k']}")
        lines.append(f"  {names[m]:<34}{r['tokens_per_s']:9.3g} tokens/s  {r['speedup']:5.2f}x{how}")
    preset = next((r for r in res["rows"] if r.get("preset")), None)
    if preset:
        lines.append(f"  CSD at the preset's K {preset['k']}: {preset['tokens_per_s']:.3g} tokens/s, "
                     f"{preset['speedup']:.2f}x")
    gain = best["csd"]["speedup"] / best["sd"]["speedup"]
    lines.append(f"  (AR {ar:.3g} tokens/s; best CSD over best SD: {gain:.2f}x)")
    return "\n".join(lines)
