"""Bench harness: resume without loss or duplicates, summaries from raw lines, HF baselines."""
import json
import re
from dataclasses import dataclass

import pytest

from csd_lib import random_family
from csd_lib.measure.bench import _key, hf_generate, method_settings, record_settings, run_bench
from csd_lib.measure.records import read_records
from csd_lib.engine.cascade import generate
from csd_lib.engine.plan import Plan
from csd_lib.measure.records import BenchRecord
from csd_lib.report.summary import mag_share, summarize, summary_json


@dataclass
class Ex:
    prompt: str
    task: str = "toy"
    source: str = "test"


def fam(arch="llama"):
    return random_family(arch, vocab_size=40, n_drafters=2, seed=1)


EXAMPLES = [Ex("w5 w6 w7 w8 w5 w6"), Ex("w9 w10 w11 w9 w10"), Ex("w12 w13 w14 w15")]
METHODS = ["ar", "sd", "mag", "staged", "csd"]


def test_resume_after_interruption_loses_nothing(tmp_path):
    f = fam()
    out = tmp_path / "r.jsonl"
    run_bench(f, EXAMPLES, METHODS, out, 12, warmup=0, progress=False, stop_after=7)   # "crash"
    assert len(read_records(out)) == 7
    with open(out, "a") as fh:  # a torn line from a crash mid-write
        fh.write('{"example": 2, "meth')
    recs = run_bench(f, EXAMPLES, METHODS, out, 12, warmup=0, progress=False)
    keys = [(r["example"], r["method"]) for r in read_records(out)]
    assert len(keys) == len(set(keys)) == len(EXAMPLES) * len(METHODS) == len(recs)
    assert all(json.loads(line) for line in out.read_text().splitlines())
    again = run_bench(f, EXAMPLES, METHODS, out, 12, warmup=0, progress=False)  # nothing to do
    assert len(again) == len(recs) and len(read_records(out)) == len(recs)


def test_summary_is_computed_from_raw_lines(tmp_path):
    recs = run_bench(fam(), EXAMPLES, METHODS, tmp_path / "r.jsonl", 12, warmup=0, progress=False)
    s = summarize(recs)
    for m in METHODS:
        mine = [r for r in recs if r["method"] == m]
        ar = {r["example"]: r for r in recs if r["method"] == "ar"}
        toks = sum(r["stats"]["n_tokens"] for r in mine)
        assert s[m]["tokens_per_s"] == pytest.approx(toks / sum(r["stats"]["wall_time"] for r in mine))
        assert s[m]["speedup_walltime"] == pytest.approx(
            sum(ar[r["example"]]["stats"]["wall_time"] for r in mine) / sum(r["stats"]["wall_time"] for r in mine))
        target_calls = sum(r["stats"]["calls"]["target"] for r in mine)
        assert s[m]["mean_tokens_per_target_call"] == pytest.approx(toks / target_calls)
        assert s[m]["mismatches"] == 0
    assert s["ar"]["speedup_walltime"] == pytest.approx(1.0)
    assert s["ar"]["speedup_swi_ms"] == pytest.approx(1.0) and s["ar"]["speedup_swi_pw"] == pytest.approx(1.0)
    js = summary_json(s)
    assert set(js["csd"]) == {"tokens_per_s", "speedup_walltime", "speedup_swi_ms", "speedup_swi_pw",
                              "mean_tokens_per_target_call", "mismatches", "n", "repeats", "errors",
                              "speedup_walltime_median", "speedup_walltime_ci95", "speedup_walltime_predicted",
                              "outside_share", "clock", "load1", "machine", "ttft", "itl"}
    assert js["csd"]["speedup_walltime_predicted"] is None  # no cost model given
    for m in METHODS:  # the engine's own share of the walltime: outside every model forward
        mine = [r["stats"] for r in recs if r["method"] == m]
        wall = sum(x["wall_time"] for x in mine)
        fwd = sum(sum(x["forward_time"].values()) for x in mine)
        assert 0 < js[m]["outside_share"] < 1 and js[m]["outside_share"] == pytest.approx((wall - fwd) / wall)


def test_repeats_resume_without_loss_or_duplicates(tmp_path):
    f = fam()
    out = tmp_path / "r.jsonl"
    run_bench(f, EXAMPLES[:2], ["ar", "csd"], out, 10, warmup=0, progress=False, repeats=1)
    run_bench(f, EXAMPLES[:2], ["ar", "csd"], out, 10, warmup=0, progress=False, repeats=3, stop_after=5)
    with open(out, "a") as fh:
        fh.write('{"example": 1, "method": "csd", "rep"')            # torn by a crash
    recs = run_bench(f, EXAMPLES[:2], ["ar", "csd"], out, 10, warmup=0, progress=False, repeats=3)
    keys = [(r["example"], r["method"], r["rep"]) for r in read_records(out)]
    assert len(keys) == len(set(keys)) == 2 * 2 * 3 == len(recs)
    assert {k[2] for k in keys} == {0, 1, 2}
    s = summarize(recs)
    assert s["csd"]["n"] == 2 and s["csd"]["repeats"] == 3
    fastest_ar = {i: min(r["stats"]["wall_time"] for r in recs if r["method"] == "ar" and r["example"] == i)
                  for i in range(2)}
    assert s["ar"]["tokens_per_s"] == pytest.approx(
        sum(r["stats"]["n_tokens"] for r in recs if r["method"] == "ar" and r["rep"] == 0) / sum(fastest_ar.values()))
    with pytest.raises(ValueError, match="repeats"):
        run_bench(f, EXAMPLES[:2], ["ar"], out, 10, warmup=0, progress=False, repeats=0)


def test_failing_example_is_an_error_line_and_the_run_goes_on(tmp_path):
    out = tmp_path / "r.jsonl"
    recs = run_bench(fam(), [EXAMPLES[0], Ex("   "), EXAMPLES[1]], ["ar", "csd"], out, 10, warmup=0,
                     progress=False)
    errs = [r for r in read_records(out) if "error" in r]
    assert {(r["example"], r["method"]) for r in errs} == {(1, "ar"), (1, "csd")}
    assert all("prompt is empty" in r["error"] for r in errs)
    s = summarize(recs)
    assert s["csd"]["n"] == 2 and s["csd"]["errors"] == 1 and s["csd"]["mismatches"] == 0
    again = run_bench(fam(), [EXAMPLES[0], Ex("   "), EXAMPLES[1]], ["ar", "csd"], out, 10, warmup=0,
                      progress=False)
    assert len(again) == len(recs) == 6  # error lines are run again, and replaced: no duplicate on resume


def _stats_from_raw(recs, method, cost_model):
    """Median, bootstrap CI and prediction recomputed from the raw lines, independently of summarize."""
    import statistics

    import numpy as np

    from csd_lib.price.ewif import predict_speedup
    from csd_lib.measure.acceptance import acceptance_table, complete_table
    best = {}
    for r in recs:
        key = (r["method"], r["example"])
        if "error" not in r and (key not in best or r["stats"]["wall_time"] < best[key]["stats"]["wall_time"]):
            best[key] = r
    ex = sorted(i for (m, i) in best if m == method)
    ratio = [best[("ar", i)]["stats"]["wall_time"] / best[(method, i)]["stats"]["wall_time"] for i in ex]
    rng = np.random.default_rng(0)
    boots = [np.median(np.asarray(ratio)[idx]) for idx in rng.integers(0, len(ratio), size=(2000, len(ratio)))]
    mine = [best[(method, i)] for i in ex]
    toks = sum(r["stats"]["n_tokens"] for r in mine) / len(mine)
    start = sum(r["cache_start"] for r in mine) / len(mine)
    L = start + toks / 2
    cfg = Plan.from_dict(mine[0]["plan"])
    table = complete_table(acceptance_table([r["stats"] for r in mine], min_reached=1), ["target", *cfg.drafters])
    p = predict_speedup(cfg, table, cost_model, n_sim=4000, seed=0,
                        cache_length=L, horizon=round(toks))
    models = ["target"] + [d for d in cfg.drafters if d != "mag"]
    setup = {m: cost_model.start[m] + float(cost_model.forward[m](start, 0)) for m in models}
    pred = (setup["target"] + toks * float(cost_model.call("target", 1, L))) / (
        sum(setup.values()) + toks * p["cost_per_token"])
    return statistics.median(ratio), list(np.quantile(boots, [0.025, 0.975])), pred


def test_median_ci_and_prediction_recomputed_from_raw_lines(tmp_path):
    from csd_lib.price.costmodel import CallFit, CostModel
    f = fam()
    recs = run_bench(f, EXAMPLES, ["ar", "sd", "csd"], tmp_path / "r.jsonl", 12, warmup=0, progress=False,
                     repeats=2)
    cm = CostModel("random-llama", "cpu", {"target": CallFit([1e-3, 1e-4, 1e-6, 0.0]),
                                           "base": CallFit([3e-4, 2e-5, 0.0, 0.0]),
                                           "small": CallFit([2e-4, 1e-5, 0.0, 0.0])},
                   review=CallFit([5e-5, 1e-6, 0.0, 0.0]), mag=4e-5,
                   start={"target": 0.0, "base": 0.0, "small": 0.0})
    s = summarize(recs, cm)
    med, ci, pred = _stats_from_raw(recs, "csd", cm)
    assert s["csd"]["speedup_walltime_median"] == pytest.approx(med)
    assert s["csd"]["speedup_walltime_ci95"] == pytest.approx(ci)
    assert s["csd"]["speedup_walltime_predicted"] == pytest.approx(pred)
    assert ci[0] <= med <= ci[1]
    assert s["ar"]["speedup_walltime_median"] == 1.0 and s["ar"]["speedup_walltime_predicted"] == 1.0


def test_one_slow_example_keeps_the_median(tmp_path):
    import statistics
    recs = run_bench(fam(), EXAMPLES + [Ex("w16 w17 w18 w16 w17"), Ex("w20 w21 w22")], ["ar", "csd"],
                     tmp_path / "r.jsonl", 12, warmup=0, progress=False)
    before = summarize(recs)["csd"]
    slow = [dict(r, stats=dict(r["stats"], wall_time=r["stats"]["wall_time"] * 100))
            if r["method"] == "csd" and r["example"] == 0 else r for r in recs]
    after = summarize(slow)["csd"]
    ar = {r["example"]: r["stats"]["wall_time"] for r in recs if r["method"] == "ar"}
    others = sorted(ar[r["example"]] / r["stats"]["wall_time"] for r in recs
                    if r["method"] == "csd" and r["example"] != 0)
    # the median moves at most to a neighbouring order statistic of the untouched examples
    assert others[1] <= after["speedup_walltime_median"] <= others[-2]
    assert after["speedup_walltime_median"] == pytest.approx(statistics.median(others[:1] + [0.0] + others[1:]))
    assert after["speedup_walltime"] < 0.5 * before["speedup_walltime"]   # the aggregate is dragged down


def test_mag_share_is_the_complement_of_target_tokens(tmp_path):
    recs = run_bench(fam(), EXAMPLES, METHODS, tmp_path / "r.jsonl", 12, warmup=0, progress=False)
    assert mag_share(recs, "ar") == 0.0
    for m in ("mag", "csd"):
        mine = [r for r in recs if r["method"] == m]
        n = sum(r["stats"]["n_tokens"] for r in mine)
        from_target = sum(v for r in mine for k, v in r["provenance"].items() if k.startswith("target"))
        from_drafters = sum(v for r in mine for k, v in r["provenance"].items()
                            if not k.startswith(("target", "mag")))
        assert mag_share(recs, m) == pytest.approx(1 - (from_target + from_drafters) / n)
        assert mag_share(recs, m) == pytest.approx(mag_share(recs, m, ("mag-match",))
                                                   + mag_share(recs, m, ("mag-bigram",)))
    assert mag_share(recs, "mag") > 0  # the repetitive prompts give MaG matches
    assert mag_share([], "csd") != mag_share([], "csd")  # nan: no records


def test_summary_counts_mismatches(tmp_path):
    recs = run_bench(fam(), EXAMPLES[:2], ["ar", "csd"], tmp_path / "r.jsonl", 10, warmup=0, progress=False)
    bad = [dict(r, token_ids=r["token_ids"][:-1] + [3]) if r["method"] == "csd" else r for r in recs]
    assert summarize(bad)["csd"]["mismatches"] == 2


def test_swi_uses_calls_and_costs():
    f = fam()
    g = generate(f, "w5 w6 w7 w8 w5 w6", "csd", max_new_tokens=16)
    s = g.stats
    ms = {n: s.params[n] / s.params["target"] for n in s.params}
    spent = sum(c * ms[n] for n, c in s.calls.items())
    assert s.swi_model_size == pytest.approx(s.n_tokens / spent)
    assert s.calls["mag"] > 0 and s.params["mag"] == 0


@pytest.mark.parametrize("arch", ["t5", "llama"])
@pytest.mark.parametrize("method", ["hf-assisted", "hf-pld"])
def test_hf_baselines_match_ar(arch, method):
    f = fam(arch)
    for ex in EXAMPLES:
        ids = f.tokenizer(ex.prompt)["input_ids"]
        ref = generate(f, ids, "ar", max_new_tokens=14).token_ids
        rec = hf_generate(f, ids, method, 14)
        assert rec["token_ids"] == ref
        t = rec["commit_times"]  # from generate's streamer: one per token, in order, within the call
        assert len(t) == len(ref) and all(0 < a <= b for a, b in zip(t, t[1:])) and t[-1] <= rec["stats"]["wall_time"]


def test_bench_rejects_unknown_method(tmp_path):
    with pytest.raises(ValueError, match="unknown method"):
        run_bench(fam(), EXAMPLES, ["ar", "beam"], tmp_path / "r.jsonl", 8, warmup=0, progress=False)


def test_predicted_vs_measured_uses_the_runs_own_acceptance(tmp_path):
    from csd_lib.report.summary import predicted_vs_measured
    f = random_family("llama", vocab_size=40, n_drafters=2, seed=2, drafter_is_target=True)
    recs = run_bench(f, EXAMPLES, ["ar", "mag", "csd"], tmp_path / "r.jsonl", 24, warmup=0, progress=False)
    pv = predicted_vs_measured(recs)
    assert pv["ar"]["predicted_walltime"] == 1.0
    from csd_lib.price.costmodel import CostModel
    flat = predicted_vs_measured(recs, CostModel.constant({"target": 1.0, "base": 0.0, "small": 0.0}))
    assert flat["mag"]["predicted_walltime"] == pytest.approx(flat["mag"]["predicted_swi_ms"], rel=0.1)
    for m in ("mag", "csd"):
        # the i.i.d. model fed with this run's acceptance reproduces its count-based SWI closely
        assert pv[m]["predicted_swi_ms"] == pytest.approx(pv[m]["speedup_swi_ms"], rel=0.2)
        assert pv[m]["predicted_walltime"] > 0 and pv[m]["latency_costs"]["target"] == 1.0


def test_vertical_k_gives_only_the_largest_drafter_and_mag_a_budget():
    from csd_lib.engine.plan import vertical_k
    assert vertical_k(16, 3, 10) == [[16, 0, 10], [0, 0, 10], [0, 0, 10]]
    assert vertical_k(3, levels=2, mag_block=4) == [[3, 4], [0, 4]]


def test_prediction_limits_price_the_run_and_search_around_it(tmp_path):
    from csd_lib.price.costmodel import CallFit, CostModel
    from csd_lib.price.predict import predict_from_runs, prediction_limits
    from csd_lib.engine.plan import vertical_k
    f = random_family("llama", vocab_size=40, n_drafters=2, seed=2, drafter_is_target=True)
    recs = run_bench(f, EXAMPLES, ["ar", "sd", "csd"], tmp_path / "r.jsonl", 16, warmup=0, progress=False)
    vrecs = run_bench(f, EXAMPLES, ["ar", "csd"], tmp_path / "v.jsonl", 16, k=vertical_k(3, 3, f.mag.n), warmup=0,
                      progress=False)
    alt = run_bench(f, EXAMPLES, ["ar", "sd"], tmp_path / "a.jsonl", 16, sd_k=3, warmup=0, progress=False)
    assert {r["plan"]["k"][0][0] for r in alt if r["method"] == "sd"} == {3}   # --sd-k reaches the run
    cm = CostModel("random-llama", "cpu", {"target": CallFit([1e-3, 1e-4, 1e-6, 0.0]),
                                           "base": CallFit([3e-4, 2e-5, 0.0, 0.0]),
                                           "small": CallFit([2e-4, 1e-5, 0.0, 0.0])},
                   review=CallFit([5e-5, 1e-6, 0.0, 0.0]), mag=4e-5,
                   start={"target": 0.0, "base": 0.0, "small": 0.0})
    lim = prediction_limits(recs, cm, vrecs, n_sim=500, sd_ks=(2, f.sd_k, 8), vertical_ks=(1, 3, 6))
    csd = [r for r in recs if r["method"] == "csd"]
    # the run's own configuration is priced exactly as the bench's prediction prices it ...
    assert lim["csd"]["preset"]["k"] == f.default_k
    assert lim["csd"]["preset"]["walltime"] == pytest.approx(predict_from_runs(csd, cm, 500)["speedup"])
    assert lim["sd"]["preset"]["k"] == [[f.sd_k]]
    # ... and it is among the searched ones, so the best is at least as good
    for key in ("sd", "csd", "vertical"):
        assert lim[key]["best_walltime"]["walltime"] >= lim[key]["preset"]["walltime"]
        assert lim[key]["best_swi"]["swi_ms"] >= lim[key]["preset"]["swi_ms"]
    assert lim["vertical"]["preset"]["k"] == vertical_k(3, 3, f.mag.n)
    assert lim["vertical"]["best_swi"]["k"][0][1:] == [0, 10]   # the middle drafter never gets a budget
    assert "vertical" not in prediction_limits(recs, cm, n_sim=200, sd_ks=(2,))


# -- a results file belongs to one run ---------------------------------------------------------

def test_records_say_what_produced_them(tmp_path):
    recs = run_bench(fam(), EXAMPLES[:1], ["ar", "csd"], tmp_path / "r.jsonl", 6, warmup=0, progress=False,
                     split="val", seed=3)
    for r in recs:
        assert (r["family"], r["task"], r["split"], r["seed"], r["max_new_tokens"]) == ("random-llama", "toy", "val",
                                                                                       3, 6)
    csd = next(r for r in recs if r["method"] == "csd")
    assert record_settings(csd) == method_settings(fam(), "csd") == {
        "k": fam().default_k, "lenience": fam().default_lenience, "mag_lenience": False,
        "drafters": ["base", "small", "mag"]}


@pytest.mark.parametrize("change,msg", [
    (dict(max_new_tokens=7), "max_new_tokens is 6 there, 7 now"),
    (dict(lenience=3.0), "csd's lenience is 2.0 there, 3.0 now"),
    (dict(k=[[1, 1, 10], [0, 1, 10], [0, 0, 10]]), "csd's k is"),
    (dict(sd_k=2), "sd's k is"),
    (dict(split="val"), "split is 'test' there, 'val' now"),
    (dict(seed=1), "seed is 0 there, 1 now"),
    (dict(examples=[Ex("w5 w6 w7 w8 w5 w6", task="other")]), "task is 'toy' there, 'other' now"),
    (dict(examples=[Ex("w5 w6 w7 w8 w5 w6", source="elsewhere:0")]), "example 0's source is 'test' there"),
    (dict(family=random_family("t5", vocab_size=40, n_drafters=2, seed=1)), "family is 'random-llama' there"),
])
def test_resuming_another_runs_file_is_refused(tmp_path, change, msg):
    out = tmp_path / "r.jsonl"
    kw = dict(family=fam(), examples=EXAMPLES[:1], max_new_tokens=6, lenience=2.0)
    run_bench(methods=["ar", "sd", "csd"], out=out, warmup=0, progress=False, **kw)
    before = out.read_bytes()
    with pytest.raises(ValueError, match=f"holds another run's results \\(line \\d+: {re.escape(msg)}"):
        run_bench(methods=["ar", "sd", "csd"], out=out, warmup=0, progress=False, **{**kw, **change})
    assert out.read_bytes() == before


def test_error_lines_are_run_again_on_resume(tmp_path):
    out = tmp_path / "r.jsonl"
    run_bench(fam(), [EXAMPLES[0], Ex("   ")], ["ar", "csd"], out, 8, warmup=0, progress=False)
    assert sum("error" in r for r in read_records(out)) == 2
    recs = run_bench(fam(), [EXAMPLES[0], Ex("w9 w10 w11 w9 w10")], ["ar", "csd"], out, 8, warmup=0,
                     progress=False)
    keys = [_key(r) for r in read_records(out)]
    assert len(keys) == len(set(keys)) == 4 == len(recs)                   # one line per (example, method, rep)
    assert not any("error" in r for r in read_records(out))
    assert summarize(recs)["csd"]["n"] == 2


def test_cost_measurement_is_sized_to_its_budget(caplog):
    """Where the full grid would overrun the budget: fewer points, a short overhead run, and an estimate."""
    from csd_lib.price.costs import N_GRID, measure_costs
    with caplog.at_level("INFO", logger="csd_lib"):
        cm = measure_costs(fam(), [5, 6, 7, 8], seconds=1e-4, min_reps=1, warmup=1)
    ns = {s[1] for s in cm.samples if s[1] > 0}
    assert ns == set(N_GRID[::2]) and cm.env["reps_per_point"] == 1
    assert re.search(r"cost model of random-llama: \d+ points x 2 rounds, then 2 rounds of every method at 8 "
                     r"tokens on 1 prompt\(s\): about \d+ s", caplog.text)


def test_record_round_trips_through_json_with_its_plan(tmp_path):
    f = fam()
    recs = run_bench(f, EXAMPLES[:1], ["ar", "csd"], tmp_path / "r.jsonl", 8, warmup=0, progress=False)
    for raw in recs:
        rec = BenchRecord.from_dict(json.loads(json.dumps(raw)))
        assert rec.plan == Plan.from_dict(raw["plan"]) and rec.plan.method == raw["method"]
        assert rec.to_dict() == raw
        assert rec.commit_times == raw["commit_times"] and len(rec.commit_times) == rec.n_tokens
        assert rec.ttft == raw["commit_times"][0] <= rec.commit_times[-1] <= rec.wall_time
        assert rec.itl == pytest.approx([b - a for a, b in zip(rec.commit_times, rec.commit_times[1:])])
    old = {k: v for k, v in recs[0].items() if k != "commit_times"}  # a line written before commit times
    rec = BenchRecord.from_dict(old)
    assert rec.commit_times is None and rec.ttft is None and rec.itl is None
    assert rec.to_dict() == old  # "not recorded" stays absent: nothing is made up



def test_without_advisory_locks_a_bench_warns_and_runs(tmp_path, monkeypatch, caplog):
    from csd_lib.measure import bench
    monkeypatch.setattr(bench, "fcntl", None)  # a platform without fcntl (Windows)
    with caplog.at_level("WARNING", logger=bench.__name__):
        with bench.results_lock(tmp_path / "r.jsonl"):
            pass
    assert "no advisory file locks" in caplog.text and not (tmp_path / "r.jsonl.lock").exists()
