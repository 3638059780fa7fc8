"""The tuner's choice of a tree budget (csd_lib.price.tune.tune_tree): a probe's per-branch rates price every
budget, the best priced are measured against AR, the fastest measured is the pick."""
import pytest

from csd_lib import random_family
from csd_lib.price.costmodel import CostModel
from csd_lib.price.tune import tree_budget_grid, tune_tree

PROMPTS = ["w3 w4 w5 w3 w4", "w4 w5 w3 w4 w5"]
COSTS = CostModel.constant({"target": 1.0, "small": 0.1, "mag": 0.0})


@pytest.fixture(scope="module")
def fam():
    return random_family("llama", vocab_size=6, n_drafters=1, seed=1, eos=None)


@pytest.mark.parametrize("method", ["tree-sd", "csd-tree"])
def test_the_tuner_prices_every_budget_and_measures_the_best(fam, method):
    budgets = [[1], [2, 2], [1, 1, 1, 1], [2, 2, 2]]
    res = tune_tree(fam, PROMPTS, method, budgets, measure=2, n=2, max_new_tokens=12, cost_model=COSTS,
                    n_sim=500, progress=False)
    assert sorted(tuple(r["budget"]) for r in res.ranked) == sorted(map(tuple, budgets))
    speed = [r["speedup"] for r in res.ranked]
    assert speed == sorted(speed, reverse=True) and all(s > 0 for s in speed)
    assert list(res.measured) == [tuple(r["budget"]) for r in res.ranked[:2]]
    assert res.best == max(res.measured, key=res.measured.get) and res.probe  # the probe ran at a default budget
    unmeasured = tune_tree(fam, PROMPTS, method, budgets, measure=0, n=2, max_new_tokens=12, cost_model=COSTS,
                           n_sim=500, progress=False)
    assert unmeasured.measured == {} and unmeasured.best == tuple(unmeasured.ranked[0]["budget"])


def test_the_grid_and_bad_input(fam):
    assert (2,) * 16 in tree_budget_grid("tree-sd") and (2, 2, 2) in tree_budget_grid("csd-tree")
    with pytest.raises(ValueError, match="Medusa"):
        tree_budget_grid("medusa")
    with pytest.raises(ValueError, match="not 'csd'"):
        tune_tree(fam, PROMPTS, "csd")
    with pytest.raises(ValueError, match="tree budget"):
        tune_tree(fam, PROMPTS, "csd-tree", [[2, 0]])
