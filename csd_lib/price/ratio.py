"""The cost ratio as the lever: EWIF's predicted SD, vertical and CSD speedups as the drafters' cost
relative to the target's moves (the paper's coefficient ``c``), priced by this machine's cost model.

:func:`cost_ratios` reads each drafter's cost relative to the target from a few calls
(:func:`csd_lib.price.timing.step_costs`). :func:`ratio_sweep` scales every drafter's calls in the cost
model by one factor and prices each method's own plan on a benchmark run's own acceptance with
:func:`csd_lib.price.predict.predict_walltime` (:func:`csd_lib.price.pricing.price_plan`, the bench's one
price): at factor 1 it is the bench's own prediction. The x axis is the largest drafter's one-token
step over the target's, under the cost model; since one factor scales every drafter, the smallest
drafter's ratio is that times a fixed share (:attr:`RatioSweep.smallest_share`), and the paper's marks for
its smaller drafter (FLAN-T5-small, 77M) sit where this family's smallest drafter would cost as much.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..engine.plan import vertical_k
from ..families.paper_costs import PREVIOUS_WORK
from ..measure.records import as_records, fastest
from .costmodel import CostModel
from .ewif import COST_MODELS
from .forecast import scaled
from .predict import predict_walltime

RATIO_GRID = tuple(np.geomspace(0.005, 1.0, 12))  # the x axis: largest drafter's step over the target's
TIE = 0.05  # CSD within this share of SD's predicted speedup: a tie


def cost_ratios(steps: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
    """{drafter: {n: its n-token call over the target's}} from :func:`csd_lib.price.timing.step_costs`."""
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
    """Predicted speedups against the cost ratio (see the module docstring)."""
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
    return {m: predict_walltime(recs, cm, n_sim, plan=plan)["speedup"] for m, (recs, plan) in plans.items()}


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
