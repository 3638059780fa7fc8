"""csd_lib.price.predict for the tree methods: a tree run priced on its own per-branch rates, and other tree budgets
ranked on them (random llama models with a small vocabulary, so that some drafts pass)."""
import math

import pytest

from csd_lib import random_family
from csd_lib.engine.stats import branch_rates
from csd_lib.families.tasks import Example
from csd_lib.measure.records import as_records
from csd_lib.price.costmodel import CostModel
from csd_lib.price.ewif import expected_tokens_tree
from csd_lib.price.predict import (predict_from_runs, predict_metrics_from_runs, rank_run_budgets,
                                   run_model_size_costs, run_rates)
from csd_lib.price.pricing import tree_sd_parents
from csd_lib.report.trees import live_records

C = 0.1  # the drafter's cost per call, the target's 1
COSTS = CostModel.constant({"target": 1.0, "small": C, "mag": 0.0})


@pytest.fixture(scope="module")
def runs():
    fam = random_family("llama", vocab_size=6, n_drafters=1, seed=1, eos=None)
    examples = [Example(p, "", "", "toy", "") for p in ("w3 w4 w5 w3 w4", "w4 w5 w3 w4 w5", "w5 w3 w5 w4 w3")]
    recs = as_records(live_records(fam, examples, ["tree-sd", "csd-tree", "sd"], 24))
    return {m: [r for r in recs if r.method == m] for m in ("tree-sd", "csd-tree", "sd")}


def test_a_tree_run_is_priced_by_its_budgets_tree_on_its_rates(runs):
    recs = runs["tree-sd"]
    budget = recs[0].plan.tree
    rates = run_rates(recs)
    assert rates == branch_rates([r.stats for r in recs]) and rates and not isinstance(rates, dict)
    tokens = expected_tokens_tree(tree_sd_parents(budget), rates)
    # per-call constants: one drafter call per depth and one target call per step, whatever the widths
    by_hand = tokens / (len(budget) * C + 1)
    c_size = run_model_size_costs(recs)["small"]
    assert predict_metrics_from_runs(recs)["predicted_swi_ms"] == pytest.approx(tokens / (len(budget) * c_size + 1))
    step = predict_from_runs(recs, COSTS)["step"]
    assert step["speedup"] == pytest.approx(by_hand) and step["tokens_per_step"] == pytest.approx(tokens)
    assert step["nodes"] == len(tree_sd_parents(budget))


def test_csd_tree_runs_are_priced_and_old_lines_are_not(runs):
    recs = runs["csd-tree"]
    pw = predict_from_runs(recs, COSTS)
    assert pw["step"]["chain"] >= 1 and pw["speedup"] > 0 and set(pw["cost_share"]) == {"target", "drafting"}
    assert pw["cost_share"]["target"] + pw["cost_share"]["drafting"] == pytest.approx(1.0)
    old = [r.__class__(**{**r.__dict__, "stats": {k: v for k, v in r.stats.items() if k != "branches"}}) for r in recs]
    p = predict_metrics_from_runs(old, COSTS)
    assert math.isnan(p["predicted_walltime"]) and math.isnan(p["predicted_swi_ms"])
    with pytest.raises(ValueError, match="per-branch"):
        run_rates(old)


def test_budgets_are_ranked_on_the_runs_rates(runs):
    recs = runs["tree-sd"]
    rates = run_rates(recs)
    budgets = [[1], [2], [2, 2], [1, 1, 1], [2, 2, 2, 2]]
    ranked = rank_run_budgets(recs, COSTS, budgets)
    assert sorted(map(tuple, (r["budget"] for r in ranked))) == sorted(map(tuple, budgets))
    assert [r["speedup"] for r in ranked] == sorted((r["speedup"] for r in ranked), reverse=True)
    for r in ranked:  # each is the budget's own step on the same rates
        tokens = expected_tokens_tree(tree_sd_parents(r["budget"]), rates)
        assert r["step"]["speedup"] == pytest.approx(tokens / (len(r["budget"]) * C + 1))
    with pytest.raises(ValueError, match="tree method"):
        rank_run_budgets(runs["sd"], COSTS, budgets)
    with pytest.raises(ValueError, match="tree budget"):
        rank_run_budgets(recs, COSTS, [[0, 2]])
