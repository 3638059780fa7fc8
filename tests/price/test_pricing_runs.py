"""A run priced before it runs: the probe's cost model, the acceptance it assumes, each method's price, the
cost-model measurement's size, and the pricing bar's weights."""
import numpy as np
import pytest

from csd_lib import random_family
from csd_lib.engine.plan import Plan
from csd_lib.families.family import PROBE_BLOCK, CpuProbe
from csd_lib.families.tasks import load_task
from csd_lib.price import costs, pricing
from csd_lib.price.costmodel import CallFit, CostModel
from csd_lib.price.costs import probe_cost_model
from csd_lib.price.predict import bench_prices, generation_seconds, mc_work
from csd_lib.price.pricing import TWINS, method_seconds, paper_row, run_acceptance

PROBE = CpuProbe(start={"target": 0.5, "base": 0.06, "small": 0.02}, step={"target": 0.1, "base": 0.01, "small": 0.002},
                 block={"target": 0.3, "base": 0.02, "small": 0.004}, prompt_tokens=20, clock="wall")
COSTS = CostModel("x", "cpu", {"target": CallFit.constant(0.1), "base": CallFit.constant(0.01),
                               "small": CallFit.constant(0.001)}, start={"target": 0.5, "base": 0.05, "small": 0.0})


@pytest.fixture
def fam():
    f = random_family("llama", vocab_size=32, n_drafters=2, seed=0)
    f.cpu_probe = PROBE
    return f


def test_the_probe_cost_model_runs_through_the_probes_calls(fam):
    cm = probe_cost_model(fam, prompt_tokens=40)
    for name in ("target", "base", "small"):
        assert cm.forward[name](1) == pytest.approx(PROBE.step[name])
        assert cm.forward[name](PROBE_BLOCK) == pytest.approx(PROBE.block[name])
        # the start holds the prefill beyond its first call, scaled to a prompt twice the probe's
        assert cm.start[name] == pytest.approx(2 * (PROBE.start[name] - PROBE.step[name]))
    assert "a probe of 3 model(s)" in cm.env["source"]


def test_the_acceptance_says_where_it_comes_from(fam):
    table, how = run_acceptance(fam)
    assert "random weights" in how and all(v == [0.0] for v in table.values())
    assert set(table) == {("target", "base"), ("target", "small"), ("target", "mag"), ("base", "small"),
                          ("base", "mag"), ("small", "mag")}
    for lm in fam.models:
        lm.random_weights = False
    table, how = run_acceptance(fam)
    assert how.startswith("an assumed acceptance") and table["target", "base"] == paper_row(pricing.ASSUMED_FIRST)
    assert table["base", "mag"] == [pricing.ASSUMED_MAG]
    runs = [{"stats": {"acceptance": {"target<-base": {"accepted": [3, 1], "reached": [4, 2]}}}}]
    table, how = run_acceptance(fam, records=runs)
    assert how == "the acceptance of 1 earlier runs" and table["target", "base"][0] == pytest.approx(0.75)


def test_without_acceptance_every_draft_is_paid_for(fam):
    """No draft accepted: a token a step, so SD pays k drafter calls and one target call per token (fewer
    drafts at the end, where no more than the tokens left are drafted); AR pays one target call per token."""
    table, _ = run_acceptance(fam)
    n, k = 10, fam.sd_k
    got = method_seconds(fam, ["ar", "sd", "mag", "csd", "tree-sd", "csd-tree", *TWINS], n, COSTS, table, 1.0)
    assert got["ar"] == pytest.approx(0.5 + n * 0.1)
    assert fam.drafters[0].name == "base"  # SD's drafter: starts 0.5 + 0.05, a call 0.01
    assert got["sd"] == pytest.approx(0.55 + n * 0.1 + (n * k - k * (k + 1) / 2) * 0.01)
    assert got["csd"] > got["ar"] and got["tree-sd"] > got["ar"]
    assert got["csd-tree"] == got["csd"] and all(got[m] == got[t] for m, t in TWINS.items())


def test_bench_prices_every_method_and_says_how(fam):
    examples = load_task("synth-gsm8k", "test", 2)
    prices, how = bench_prices(fam, examples, ["ar", "sd", "csd", "hf-pld"], 8)
    assert set(prices) == {"ar", "sd", "csd", "hf-pld"} and all(p > 0 for p in prices.values())
    assert "a probe of 3 model(s)" in how and "random weights" in how and "hf-pld as mag" in how
    given, how = bench_prices(fam, examples, ["ar"], 8, cost_model=COSTS)
    assert "the cost model given" in how and given["ar"] > 8 * 0.1
    one, how = generation_seconds(fam, [examples[0].prompt], "sd", 8)
    assert one > 0 and "probe" in how
    t5 = random_family("t5", vocab_size=32, n_drafters=1, seed=0)
    t5.cpu_probe = CpuProbe({n: 0.1 for n in ("target", "small")}, {n: 0.01 for n in ("target", "small")},
                            {n: 0.02 for n in ("target", "small")}, 20)
    prices, _ = bench_prices(t5, examples, ["ar", "tree-sd", "staged"], 8)
    assert prices["tree-sd"] == prices["staged"] == 0 < prices["ar"]  # runs that fail at once (error lines)


def test_the_cost_models_measurement_is_sized_from_its_points(fam, monkeypatch):
    """Each (n, L) point is priced by the probe's cost model, the overhead runs by every method's price: the
    estimate is their sum over the rounds that will run."""
    monkeypatch.setattr(costs, "probe_cost_model", lambda f, ids: COSTS)
    grids = {lm.name: [4, 8] for lm in fam.models}
    size = costs._size_run(fam, [3, 4, 5, 6], 2, grids, (1, 2, 4, 8), 2.0, 1, 2)
    assert size["cost"]["target"] == {n: pytest.approx(0.1) for n in size["n_grid"]}
    per_round = sum(c * 2 for costs in size["cost"].values() for c in costs.values())
    table, _ = run_acceptance(fam, fam.task)
    gen = sum(method_seconds(fam, costs.overhead_methods(fam), size["ov_tokens"], COSTS, table, 1.0).values())
    want = per_round * (1 + size["reps"]) + gen * (size["ov_rounds"] + 1) * 2
    assert size["eta"] == pytest.approx(want)
    assert size["n_grid"] == (1, 4) and size["reps"] == 2  # slow calls: every other n, the fewest rounds


def test_the_pricing_bar_weighs_plans_by_their_monte_carlo_work():
    assert mc_work(Plan.ar()) < mc_work(Plan.sd(1, "small")) < mc_work(Plan.sd(8, "small"))
    small = Plan.csd(["base", "small", "mag"], [[1, 0, 10], [0, 1, 10], [0, 0, 10]], 2.0, 10)
    big = Plan.csd(["base", "small", "mag"], [[8, 2, 10], [0, 2, 10], [0, 0, 10]], 2.0, 10)
    assert mc_work(big) == 3 * (1 + 12) and mc_work(small) < mc_work(big)
    assert np.isclose(mc_work(Plan.mag(10)), 3.0)
