"""The per-call cost model: fitting, storage, measuring (on an idle and on a busy machine), and its use in EWIF."""
import os
import subprocess
import sys

import numpy as np
import pytest

from csd_lib.price import ewif as E
from csd_lib.price.costmodel import MIN_R2, CallFit, CostModel, fit_call
from csd_lib.price.costs import load_costs, measure_costs, save_costs
from csd_lib.families.toy import random_family
from csd_lib.engine.plan import Plan

T5_K = [[5, 14, 10], [0, 1, 10], [0, 0, 10]]
DRAFTERS = ["base", "small", "mag"]


def _table(p):
    return {(r, q): p for r in ("target", "base", "small") for q in ("base", "small", "mag")}


def test_fit_recovers_known_coefficients():
    rng = np.random.default_rng(0)
    true = [4e-3, 2e-4, 3e-5, 1e-6, -1.5e-3]   # a single-token call 1.5 ms under the line
    n, L = np.meshgrid([1, 2, 4, 8, 16, 32], [10, 70, 130])
    n, L = n.ravel(), L.ravel()
    t = true[0] + true[1] * n + true[2] * L + true[3] * n * L + true[4] * (n == 1)
    fit = fit_call(n, L, t * (1 + 0.002 * rng.standard_normal(t.size)))
    np.testing.assert_allclose(fit.coef, true, rtol=0.05, atol=2e-6)
    assert fit.r2 > 0.999 and fit.max_rel_err < 0.01
    assert fit(8, 70) == pytest.approx(true[0] + 8 * true[1] + 70 * true[2] + 560 * true[3], rel=0.01)
    assert fit(1, 70) == pytest.approx(true[0] + true[1] + 70 * (true[2] + true[3]) + true[4], rel=0.01)
    assert "their median" in fit_call([1, 2], [0, 0], [1.0, 2.0]).note  # too few timings: no error (see below)


def test_a_stored_four_term_fit_still_prices():
    """Cost files measured before the single-token term hold 4 coefficients: e = 0."""
    old = CallFit([4e-3, 2e-4, 3e-5, 1e-6])
    assert old(1, 10) == pytest.approx(4e-3 + 2e-4 + 10 * (3e-5 + 1e-6))
    assert CallFit(old.coef + [-1e-3])(1, 10) == pytest.approx(old(1, 10) - 1e-3)
    assert CallFit(old.coef + [-1e-3])(2, 10) == pytest.approx(old(2, 10))


CONFIGS = [
    Plan.csd(DRAFTERS, T5_K, 2, mag_block=10),
    Plan.sd(6, "base"),
    Plan.staged(["base", "small"], [3, 4]),
    Plan.mag(),
]


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("horizon", [None, 40])
def test_constant_cost_model_equals_per_call_constants(cfg, horizon):
    costs = {"target": 1.0, "base": 0.2, "small": 0.1, "mag": 0.01}
    table = _table([0.9, 0.7, 0.6])
    old = E.predict_speedup(cfg, table, costs, n_sim=3000, seed=5, horizon=horizon)
    new = E.predict_speedup(cfg, table, CostModel.constant(costs), n_sim=3000, seed=5, horizon=horizon)
    for key in ("speedup", "speedup_se", "tokens_per_target_call", "cost_per_token"):
        assert new[key] == old[key]
    assert new["calls_per_token"] == old["calls_per_token"]


def test_cost_model_prices_longer_reviews_higher():
    table = {("target", "base"): [1.0]}
    cfg = Plan.sd(8, "base")
    flat = CostModel.constant({"target": 1.0, "base": 0.1})
    steep = CostModel("x", "cpu", {"target": CallFit([1.0, 0.1, 0.0, 0.0]), "base": CallFit.constant(0.1)})
    # all accepted: one target call scores 9 tokens and emits 9; AR pays t(1) = 1.1 per token
    out = E.predict_speedup(cfg, table, steep, n_sim=10)
    assert out["cost_per_token"] == pytest.approx((1.0 + 0.1 * 9 + 8 * 0.1) / 9)
    assert out["speedup"] == pytest.approx(1.1 * 9 / (1.0 + 0.9 + 0.8))
    assert out["speedup"] < E.predict_speedup(cfg, table, flat, n_sim=10)["speedup"]
    assert out["cost_share"]["target"] == pytest.approx(1.9 / 2.7)


def test_horizon_caps_the_last_step_like_the_engine():
    # SD k=4, everything accepted, 12 tokens: steps emit 5, 5, then the cap leaves 2 (1 draft + 1)
    out = E.predict_speedup(Plan.sd(4), {("target", "small"): [1.0]},
                            {"target": 1.0, "small": 0.0}, n_sim=1000, horizon=12)
    assert out["tokens_per_target_call"] == pytest.approx(4.0)
    assert out["calls_per_token"]["small"] * 12 == pytest.approx(4 + 4 + 1)
    with pytest.raises(ValueError, match="horizon"):
        E.predict_speedup(Plan.sd(4), {("target", "small"): [1.0]},
                          {"target": 1.0, "small": 0.0}, horizon=0)


@pytest.fixture(params=["idle", "busy"])
def machine(request):
    """The machine as the test finds it ('idle'), or with every core kept busy by another process ('busy': one
    spinning subprocess per core, for the test's whole duration), as on a shared machine running other jobs."""
    hogs = [] if request.param == "idle" else [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    yield request.param
    for h in hogs:
        h.kill()
        h.wait()


def test_too_few_timings_fit_fewer_terms_and_say_so():
    n, L = [1, 2, 4, 8], [8, 8, 24, 24]
    t = [1e-3 * (1 + 0.1 * x + 0.01 * y) for x, y in zip(n, L)]
    fit = fit_call(n, L, t)                        # 4 timings for 5 terms: a + b n + c L, one timing to spare
    assert fit.coef[3:] == [0.0, 0.0] and "only 4 timing(s)" in fit.note and "a + b n + c L only" in fit.note
    assert fit.r2 >= MIN_R2 and float(fit(2, 8)) == pytest.approx(t[1], rel=0.05)
    one = fit_call([4], [8], [2e-3])               # one timing: its median, a constant
    assert one.coef == [2e-3, 0.0, 0.0, 0.0, 0.0] and "median" in one.note
    assert fit_call(*np.meshgrid([1, 2, 4, 8, 16], [8, 24]), 1e-3 * np.arange(1, 11)).note is None  # enough: no note
    with pytest.raises(ValueError, match="at least one timing"):
        fit_call([], [], [])


def test_a_tiny_budget_still_gives_a_cost_model_and_says_so():
    fam = random_family("llama", vocab_size=40, n_drafters=1, seed=3)
    prompt = fam.tokenizer("w5 w6 w7 w8 w9 w5 w6")["input_ids"]
    cm = measure_costs(fam, prompt, seconds=1e-4, n_grid=(1, 2, 4, 8), l_grid=(8,), min_reps=1, warmup=1)
    assert cm.env["points"] == 2 * 2                   # every other n, one cache length, two models: too few timings
    for name, fit in cm.forward.items():
        assert all(np.isfinite(fit.coef)) and float(cm.call(name, 4)) > 0
        assert "time budget ran out" in cm.fit_notes[f"forward:{name}"]


def test_measure_save_load_roundtrip(tmp_path, machine):
    fam = random_family("llama", vocab_size=40, n_drafters=2, seed=3)
    prompt = fam.tokenizer("w5 w6 w7 w8 w9 w5 w6")["input_ids"]
    cm = measure_costs(fam, prompt, seconds=1.0, n_grid=(1, 2, 4, 8), l_grid=(8, 24), min_reps=3)
    assert set(cm.forward) == {"target", "base", "small"}
    for fit in cm.forward.values():
        assert all(np.isfinite(fit.coef)) and float(fit(1, 8)) > 0
    # the whole grid, or every other n where the budget is short (a busy machine): 3 models x n x 2 cache lengths
    assert len([s for s in cm.samples if s[1] > 0]) == cm.env["points"] in (3 * 4 * 2, 3 * 2 * 2)
    assert cm.env["threads"] >= 1 and cm.env["torch"]
    path = save_costs(cm, tmp_path / "c.json")
    back = load_costs(cm.family, path=path)
    assert back.forward["target"].coef == cm.forward["target"].coef and back.mag == cm.mag
    assert load_costs("x", path=tmp_path / "missing.json") is None
    with pytest.raises(ValueError, match="no model 'huge'"):
        cm.call("huge", 1)


def test_figures_from_a_run(tmp_path, machine):
    from csd_lib.measure.bench import run_bench
    from csd_lib.viz import cost_figure, prediction_figure, time_share_figure

    class Ex:
        prompt, task, source = "w5 w6 w7 w8 w5 w6", "toy", "test"
    fam = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    recs = run_bench(fam, [Ex()], ["ar", "sd", "csd"], tmp_path / "r.jsonl", 12, warmup=0, progress=False)
    cm = CostModel.constant({"target": 1.0, "base": 0.2, "small": 0.1, "mag": 0.01})
    shares = time_share_figure(recs, cm)
    totals = np.sum([bar.y for bar in shares.data], axis=0)
    np.testing.assert_allclose(totals, 100.0)                      # every method's time is accounted for
    assert [p["label"] for p in [{"label": t} for t in prediction_figure(recs, cm).data[0].text]] == ["ar", "sd", "csd"]
    measured = measure_costs(fam, fam.tokenizer("w5 w6 w7")["input_ids"], seconds=0.5, n_grid=(1, 2, 4, 8),
                             l_grid=(4, 12), min_reps=2)
    assert len(cost_figure(measured).data) == 3 * 2 * 2               # models x cache lengths x (points, fit)
    assert all(np.isfinite(f.coef).all() for f in measured.forward.values())
