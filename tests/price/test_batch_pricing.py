"""Batches: the batched call's price, the lockstep closed forms against the Monte Carlo of ragged rounds,
B = 1 against the paper's EWIF, and the crossover batch size."""
import json
from pathlib import Path

import numpy as np
import pytest

from csd_lib.cli.main import main
from csd_lib.price.batch import (LINEAR, MAX_BATCH, ar_rate, batch_call, check_batch, crossover, csd_rate,
                                 drafted_distribution, expected_max, format_batches, parse_batch_sizes, predict_batches,
                                 sd_rate, simulate_rounds, speedup)
from csd_lib.price.costmodel import CallFit, CostModel
from csd_lib.price.costs import read_cost_file
from csd_lib.price.ewif import ewif_sd, ewif_vc, simulate_vc
from csd_lib.price.predict import paper_table

CONST = CostModel.constant({"target": 1.0, "base": 0.3, "small": 0.1, "mag": 0.0})
# a fitted-shape cost model: a per-call constant, per-token and per-cached-token terms (seconds)
FITTED = CostModel("test", "cpu", {"target": CallFit([1e-3, 2e-4, 1e-6, 0.0, 0.0]),
                                   "base": CallFit([3e-4, 5e-5, 0.0, 0.0, 0.0]),
                                   "small": CallFit([1e-4, 1e-5, 0.0, 0.0, 0.0])}, mag=1e-5)
SD = dict(drafter="small", alphas=[0.85, 0.8, 0.7], k=4)
CSD = dict(d1="base", d2="small", alpha=0.8, alpha_prime=0.7, k=3, n=2)


def _closed(method, cm, B, saturation=LINEAR):
    if method == "sd":
        return sd_rate(cm, SD["drafter"], SD["alphas"], SD["k"], B, saturation=saturation)
    if method == "csd":
        return csd_rate(cm, CSD["d1"], CSD["d2"], CSD["alpha"], CSD["alpha_prime"], CSD["k"], CSD["n"], B,
                        saturation=saturation)
    return ar_rate(cm, B, saturation=saturation)


def test_batch_one_is_the_papers_ewif_exactly():
    for k, alpha, c in [(1, 0.5, 0.2), (4, 0.8, 0.1), (7, 0.9, 0.05)]:
        cm = CostModel.constant({"target": 1.0, "small": c})
        got = speedup(lambda B: sd_rate(cm, "small", [alpha], k, B), cm, 1)
        assert got == pytest.approx(ewif_sd(alpha, k, c), rel=1e-12)
    got = speedup(lambda B: _closed("csd", CONST, B), CONST, 1)
    assert got == pytest.approx(ewif_vc(0.8, 0.7, 3, 2, 0.3, 0.1), rel=1e-12)


def test_batched_call_scales_per_token_terms_and_pays_the_constant_once():
    fit = CallFit([1e-3, 2e-4, 1e-6, 3e-8, -5e-5])
    assert batch_call(fit, 1, 64, 1) == pytest.approx(float(fit(1, 64)))   # one row: the fit itself, e included
    assert batch_call(fit, 5, 64, 1) == pytest.approx(float(fit(5, 64)))
    per_row = 2e-4 * 5 + 1e-6 * 64 + 3e-8 * 5 * 64
    assert batch_call(fit, 5, 64, 8) == pytest.approx(1e-3 + 8 * per_row)
    # below saturation a batched call costs one row's; past it, it grows with the tokens fed
    assert batch_call(fit, 5, 64, 8, saturation=64) == pytest.approx(float(fit(5, 64)))
    assert batch_call(fit, 5, 64, 32, saturation=64) == pytest.approx(1e-3 + 160 / 64 * per_row)
    with pytest.raises(ValueError, match="saturation"):
        batch_call(fit, 1, 0, 2, saturation=0.5)
    for bad in (0, 0.5, float("nan"), True):
        with pytest.raises(ValueError, match="batch size"):
            check_batch(bad)


def test_expected_max_of_the_padded_draft():
    pmf = drafted_distribution(0.7, 3, 2)
    assert pmf.sum() == pytest.approx(1.0) and pmf[:2].sum() == 0.0     # two rounds draft 2..8 tokens
    assert expected_max(pmf, 1) == pytest.approx(float((np.arange(pmf.size) * pmf).sum()))
    rng = np.random.default_rng(0)
    draws = rng.choice(pmf.size, p=pmf, size=(200_000, 4)).max(axis=1)
    assert expected_max(pmf, 4) == pytest.approx(draws.mean(), abs=0.02)
    assert expected_max(pmf, 4) > expected_max(pmf, 2) > expected_max(pmf, 1)


@pytest.mark.parametrize("method", ["ar", "sd", "csd"])
@pytest.mark.parametrize("B", [1, 4, 16])
def test_closed_form_matches_the_monte_carlo_of_full_rounds(method, B):
    """Rows never finish: the closed form's tokens/s within 2% of 4000 seeded rounds (the Monte Carlo's standard
    error is under 0.5% at B = 1, less at larger B)."""
    params = {"sd": SD, "csd": CSD, "ar": {}}[method]
    mc = simulate_rounds(FITTED, method, params, B, rounds=4000, seed=1)
    closed = _closed(method, FITTED, B)
    assert mc["tokens_per_s"] == pytest.approx(closed.tokens_per_s, rel=0.02)
    assert mc["tokens_per_round"] == pytest.approx(closed.tokens_per_round, rel=0.02)


@pytest.mark.parametrize("method", ["sd", "csd"])
def test_ragged_rows_that_finish_lower_throughput_but_stay_within_tolerance(method):
    """Rows stop at 400 tokens and leave: the last rounds run at a smaller batch and drop their surplus, so the
    Monte Carlo's tokens/s is below the closed form's, within 6% (seeded)."""
    params = {"sd": SD, "csd": CSD}[method]
    closed = _closed(method, FITTED, 16).tokens_per_s
    mc = simulate_rounds(FITTED, method, params, 16, length=400, seed=2)["tokens_per_s"]
    assert mc < closed
    assert mc == pytest.approx(closed, rel=0.06)


def test_csd_at_batch_one_matches_the_vertical_cascade_monte_carlo():
    mc = simulate_vc(0.8, 0.7, 3, 2, 0.3, 0.1, n_sim=100_000, seed=0)
    assert _closed("csd", CONST, 1).tokens_per_round == pytest.approx(mc["tokens_per_step"], rel=0.01)


def test_monotonic_properties_of_the_linear_model():
    Bs = [1, 2, 3, 4, 8, 16, 32, 64]
    ar = [ar_rate(FITTED, B).tokens_per_s for B in Bs]
    assert all(x <= y for x, y in zip(ar, ar[1:]))                       # AR never loses throughput to a batch
    for method in ("sd", "csd"):
        sp = [speedup(lambda b: _closed(method, FITTED, b), FITTED, B) for B in Bs]
        assert all(x >= y for x, y in zip(sp, sp[1:])), (method, sp)   # speculation's edge shrinks with B
        assert sp[0] > 1.0 > sp[-1]
    # a GPU below saturation: the whole review rides free, so the speedup holds up to the saturated batch
    sat = [speedup(lambda b: _closed("sd", FITTED, b, saturation=256), FITTED, B, saturation=256) for B in (1, 8, 32)]
    assert sat[0] == pytest.approx(sat[1], rel=0.05) and sat[2] > speedup(lambda b: _closed("sd", FITTED, b), FITTED, 32)


@pytest.mark.parametrize("method", ["sd", "csd"])
def test_crossover_is_where_the_closed_form_falls_to_one(method):
    def at(B):
        return speedup(lambda b: _closed(method, FITTED, b), FITTED, B)
    x = crossover(at)
    assert at(x["grid"]) <= 1.0 < at(x["grid"] - 1)
    assert x["grid"] - 1 < x["bisect"] <= x["grid"]
    assert at(x["bisect"]) <= 1.0 < at(x["bisect"] - 2e-3)


def test_crossover_none_within_the_bound_and_one_when_never_faster():
    assert crossover(lambda B: 2.0, bound=64) == {"grid": None, "bisect": None}
    assert crossover(lambda B: 0.9) == {"grid": 1, "bisect": 1.0}
    assert crossover(lambda B: 1.5 - B / 100, bound=64) == {"grid": 50, "bisect": pytest.approx(50.0, abs=1e-3)}


def test_simulate_rounds_checks_its_input():
    with pytest.raises(ValueError, match="method"):
        simulate_rounds(FITTED, "tree", {}, 2)
    with pytest.raises(ValueError, match="whole number"):
        simulate_rounds(FITTED, "ar", {}, 2.5)


COSTS = Path(__file__).resolve().parents[2] / "results" / "costs-tiny-t5-cpu.json"
LEVELS = ["target", "base", "small", "mag"]


def test_parse_batch_sizes():
    assert parse_batch_sizes("8, 1,2,2") == [1, 2, 8]
    for bad in ("", "0", "1,-2", "2.5", "x", f"{MAX_BATCH + 1}"):
        with pytest.raises(ValueError, match="whole numbers from 1 to"):
            parse_batch_sizes(bad)


def test_predict_batches_on_the_committed_tiny_t5_costs():
    cm = read_cost_file(str(COSTS), "tiny-t5", LEVELS[:-1])
    table, _ = paper_table(LEVELS)
    res = predict_batches(cm, table, ["base", "small"], [1, 4, 32])
    assert res["prediction"] and {r["method"] for r in res["rows"]} == {"ar", "sd", "csd"}
    row = {(r["method"], r["batch"]): r for r in res["rows"]}
    assert all(row["ar", B]["speedup"] == 1.0 for B in (1, 4, 32))
    sd = res["plans"]["sd"]
    assert row["sd", 4]["tokens_per_s"] == pytest.approx(sd_rate(cm, sd["drafter"], sd["alphas"], sd["k"], 4).tokens_per_s)
    for m in ("sd", "csd"):                     # the crossover is where this module's speedup falls to 1
        x = res["crossover"][m]
        assert x["grid"] is None or row[m, 1]["speedup"] > 1.0
    text = format_batches(res)
    assert text.startswith("predicted at batch size B") and "crossover, SD's speedup" in text
    assert len(text.splitlines()) == 3 + 3 + 2
    with pytest.raises(ValueError, match="no rates"):
        predict_batches(cm, {}, ["base", "small"], [1])


def test_batch_speedup_figure_reads_without_colour():
    from csd_lib.viz import batch_speedup_figure
    res = predict_batches(FITTED, {("target", "base"): [0.8], ("target", "small"): [0.7], ("base", "small"): [0.7]},
                          ["base", "small"], [1, 2, 4, 8, 16, 32, 64])
    fig = batch_speedup_figure(res)
    lines = [t for t in fig.data if t.name]
    assert [t.name for t in lines] == ["AR", "SD", "CSD"]
    assert len({(t.line.dash, t.marker.symbol) for t in lines}) == 3          # dash and marker, not hue alone
    assert list(lines[1].y) == [r["speedup"] for r in res["rows"] if r["method"] == "sd"]
    crossings = [s.x0 for s in fig.layout.shapes]
    assert crossings == [res["crossover"][m]["bisect"] for m in ("sd", "csd") if res["crossover"][m]["grid"]]
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


@pytest.mark.slow
def test_cli_predict_batch_size_adds_to_the_prediction_unchanged(capsys):
    """``predict --batch-size`` prints today's prediction byte for byte, then the batch table; --json one line."""
    argv = ["predict", "--family", "tiny-t5", "--costs", str(COSTS)]
    assert main(argv) == 0
    plain = capsys.readouterr().out
    assert main([*argv, "--batch-size", "1,2,4"]) == 0
    batched = capsys.readouterr().out
    # the costs note compares this machine's reference steps, timed on each run: every other line is the same
    same = [line for line in plain.splitlines() if not line.startswith("  note: costs:")]
    head = batched.splitlines()[:len(plain.splitlines())]
    assert [line for line in head if not line.startswith("  note: costs:")] == same
    assert batched.splitlines()[len(head)].startswith("predicted at batch size B")
    assert main([*argv, "--batch-size", "1,8", "--saturation", "64", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["batch"]["saturation"] == 64.0


def test_predict_batches_prices_the_plans_it_is_given():
    table = {("target", "base"): [0.8], ("target", "small"): [0.7], ("base", "small"): [0.7]}
    own = predict_batches(FITTED, table, ["base", "small"], [1, 8])
    plans = {**own["plans"], "sd": dict(own["plans"]["sd"], k=1)}
    given = predict_batches(FITTED, table, ["base", "small"], [1, 8], plans=plans)
    assert given["plans"] is plans
    sd = {r["batch"]: r["tokens_per_s"] for r in given["rows"] if r["method"] == "sd"}
    assert sd[8] == pytest.approx(sd_rate(FITTED, plans["sd"]["drafter"], plans["sd"]["alphas"], 1, 8).tokens_per_s)
    assert [r for r in given["rows"] if r["method"] == "csd"] == [r for r in own["rows"] if r["method"] == "csd"]
