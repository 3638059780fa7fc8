"""The tuner: acceptance tables from runs, latency costs, predict-then-measure search."""
import math

import pytest

from csd_lib import generate, random_family
from csd_lib.price.costmodel import CallFit, CostModel
from csd_lib.measure.acceptance import acceptance_table, complete_table
from csd_lib.measure.acceptance import latency_costs
from csd_lib.price.predict import candidate_grid
from csd_lib.price.tune import remeasure, sd_sweep_predicted, tune

PROMPTS = ["w5 w6 w7 w8 w5 w6", "w9 w10 w11 w9 w10 w11"]


def fam():
    return random_family("llama", vocab_size=40, n_drafters=2, seed=2, drafter_is_target=True)


def test_acceptance_table_pools_counts_and_fills_gaps():
    f = fam()
    gens = [generate(f, p, "csd", max_new_tokens=20) for p in PROMPTS]
    table = acceptance_table([g.stats.to_dict() for g in gens], min_reached=1)
    assert ("target", "base") in table
    # drafters share the target's weights: the strict top review accepts everything
    assert all(v == 1.0 for v in table[("target", "base")])
    assert all(0.0 <= v <= 1.0 and not math.isnan(v) for row in table.values() for v in row)


def test_acceptance_table_extrapolates_with_the_pooled_rate():
    # 10 reviews reach position 0, few reach the later ones; the last, thinly observed position
    # accepted all: beyond the row, the pooled rate is repeated, not that 1.0
    run = {"acceptance": {"target<-base": {"reached": [10, 10, 4, 3], "accepted": [9, 6, 3, 3]}}}
    row = acceptance_table([run], min_reached=3)[("target", "base")]
    assert row[:4] == [0.9, 0.6, 0.75, 1.0]
    assert row[-1] == pytest.approx(21 / 27)


def test_complete_table_fills_an_unseen_pair_from_the_same_proposer():
    table = {("target", "small"): [0.9], ("small", "mag"): [0.4, 0.3], ("base", "mag"): [0.5]}
    out = complete_table(table, ["target", "base", "small", "mag"])
    assert out[("target", "mag")] == [0.4, 0.3]       # MaG's own (lowest) row, not the small drafter's 0.9
    assert out[("target", "base")] == [0.9]           # no other reviewer saw base: the reviewer's worst row
    assert out[("base", "small")] == [0.9]            # small's row under the target
    assert complete_table({}, ["target", "base"])[("target", "base")] == [0.3]  # nothing at all: the default


def test_latency_costs_relative_to_target():
    f = fam()
    costs = latency_costs([generate(f, p, "csd", max_new_tokens=20).stats.to_dict() for p in PROMPTS])
    assert costs["target"] == 1.0 and costs["mag"] == 0.0 and costs["base"] > 0


def test_tune_measures_probes_plus_budget_and_keeps_the_fastest():
    f = fam()
    cands = candidate_grid(2, k1=(1, 3), k2=(0, 5), k_inner=(1,), mag=f.mag.n, leniences=(1.0, 2.0))
    cm = CostModel.constant({"target": 1.0, "base": 0.3, "small": 0.1, "mag": 0.01})
    res = tune(f, PROMPTS, budget=3, candidates=cands, max_new_tokens=16, n_sim=500, progress=False, cost_model=cm)
    assert res.n_measured == 2 + 3                # one probe per lenience, then the top 3 predicted
    assert res.best.speedup == max(m.speedup for m in res.measured)
    assert all(m.predicted is not None for m in res.measured[2:])
    assert len(remeasure(f, PROMPTS, [(res.best.k, res.best.lenience)], max_new_tokens=16, reps=1)) == 1


def test_candidate_grid_shapes():
    assert all(len(k) == 3 and k[2][2] == 10 for k, _ in candidate_grid(2, mag=10))
    assert all(len(k) == 2 and k[1][1] == 4 for k, _ in candidate_grid(1, mag=4))
    with pytest.raises(ValueError):
        candidate_grid(0, mag=10)


def test_sd_sweep_reports_every_draft_length():
    from csd_lib.price.tune import sd_sweep
    out = sd_sweep(fam(), PROMPTS, ks=(2, 4), max_new_tokens=12, reps=1)
    assert list(out) == [2, 4] and all(v > 0 for v in out.values())


def test_sd_sweep_predicted_prices_draft_length_with_the_cost_model():
    f = fam()  # the drafters share the target's weights: every draft is accepted
    cheap = CostModel.constant({"target": 1.0, "base": 0.01, "small": 0.01})
    dear = CostModel("x", "cpu", {"target": CallFit([1.0, 0.2, 0.0, 0.0]), "base": CallFit.constant(0.5),
                                  "small": CallFit.constant(0.5)})
    lo = sd_sweep_predicted(f, PROMPTS, ks=(1, 4, 8), max_new_tokens=16, cost_model=cheap, n_sim=200)
    hi = sd_sweep_predicted(f, PROMPTS, ks=(1, 4, 8), max_new_tokens=16, cost_model=dear, n_sim=200)
    assert list(lo) == [1, 4, 8]
    assert lo[8] > lo[4] > lo[1] > 1.0            # free drafts: longer is better
    assert all(hi[k] < lo[k] for k in lo)         # a dear drafter and review cost speed
    with pytest.raises(ValueError, match="draft lengths"):
        sd_sweep_predicted(f, PROMPTS, ks=(0,), cost_model=cheap)
