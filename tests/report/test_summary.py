"""csd_lib.report.summary: per-method summaries of constructed benchmark lines, every number worked by hand."""
import json
import math

import pytest

from csd_lib.measure.records import BenchRecord, fastest
from csd_lib.report.bench_stats import bootstrap_median_ci, ratios
from csd_lib.report.summary import format_table, mag_share, run_conditions, summarize, summary_json

AR_PARAMS = {"target": 1000}
CSD_PARAMS = {"target": 1000, "small": 40, "mag": 0}


def line(example, method, wall, calls=None, fwd=None, params=None, rep=0, tokens=10, ids=None, load1=None, **kw):
    stats = {"n_tokens": tokens, "wall_time": wall}
    if calls is not None:
        stats.update(calls=calls, forward_time=fwd, params=params, acceptance={})
    return dict(example=example, method=method, rep=rep, family="tiny-t5", task="synth-gsm8k",
                token_ids=ids if ids is not None else list(range(tokens)), stats=stats, load1=load1, **kw)


RECORDS = [
    line(0, "ar", 2.0, {"target": 10}, {"target": 1.5}, AR_PARAMS, load1=0.5),
    line(0, "csd", 1.5, {"target": 5, "small": 12, "mag": 6}, {"target": 0.7, "small": 0.2}, CSD_PARAMS),
    line(1, "ar", 4.0, {"target": 10}, {"target": 3.0}, AR_PARAMS, load1=1.5),
    line(1, "csd", 1.0, {"target": 2, "small": 10, "mag": 4}, {"target": 0.3, "small": 0.2}, CSD_PARAMS,
         ids=[0, 1, 2, 3, 4, 5, 6, 7, 8, 99]),
    line(0, "csd", 1.0, {"target": 4, "small": 10, "mag": 6}, {"target": 0.6, "small": 0.2}, CSD_PARAMS, rep=1,
         provenance={"mag-match": 3, "mag-bigram": 1, "small": 4}),
    dict(example=2, method="csd", rep=0, family="tiny-t5", error="RuntimeError: boom"),
]


def test_fastest_repeat_per_example_and_ratios():
    best = fastest(RECORDS)
    assert best["csd"][0].rep == 1 and best["csd"][0].wall_time == 1.0  # the faster repeat of example 0
    assert 2 not in best["csd"]  # error lines are skipped
    assert ratios(best, "csd") == {0: 2.0, 1: 4.0}  # AR 2.0 / 1.0, 4.0 / 1.0


def test_csd_row_by_hand():
    s = summarize(RECORDS)["csd"]
    assert (s["n"], s["repeats"], s["errors"], s["tokens"]) == (2, 2, 1, 20)
    assert s["tokens_per_s"] == pytest.approx(20 / 2.0)
    assert s["speedup_walltime"] == pytest.approx((2.0 + 4.0) / (1.0 + 1.0))   # total over total
    assert s["speedup_walltime_median"] == pytest.approx(3.0)                  # median of 2 and 4
    assert s["speedup_walltime_ci95"] == bootstrap_median_ci([2.0, 4.0]) == [2.0, 4.0]
    assert s["mismatches"] == 1                                                # example 1's last token
    assert s["calls_per_model"] == {"target": 6, "small": 20, "mag": 10}
    assert s["mean_tokens_per_target_call"] == pytest.approx(20 / 6)
    assert s["speedup_swi_ms"] == pytest.approx(20 / (6 + 20 * 40 / 1000))     # small costs 0.04 by size
    assert s["speedup_swi_pw"] == pytest.approx(20 / (6 + 20 * 0.02))          # tiny-t5's previous-work table
    assert s["outside_share"] == pytest.approx((2.0 - (0.6 + 0.2 + 0.3 + 0.2)) / 2.0)
    assert s["forward_time_per_call"] == pytest.approx({"target": 0.9 / 6, "small": 0.4 / 20})
    assert math.isnan(s["speedup_walltime_predicted"])  # no cost model given


def test_ar_row_is_the_reference():
    s = summarize(RECORDS)["ar"]
    assert s["speedup_walltime"] == 1.0 and s["speedup_walltime_median"] == 1.0 and s["mismatches"] == 0
    assert s["speedup_swi_ms"] == 1.0 and s["speedup_swi_pw"] == 1.0 and s["errors"] == 0


def test_run_conditions_by_hand():
    seen = run_conditions(RECORDS)
    assert seen == {"clock": "wall", "load1": dict(start=0.5, end=1.5, min=0.5, median=1.0, max=1.5, n=2)}
    mixed = run_conditions([line(0, "ar", 1.0, clock="cpu"), line(0, "sd", 1.0)])
    assert mixed["clock"] == "cpu+wall" and mixed["load1"]["n"] == 0 and mixed["load1"]["start"] is None
    assert summarize(RECORDS)["csd"]["clock"] == "wall"


def test_nan_where_nothing_can_be_computed():
    recs = RECORDS[:4] + [line(0, "hf-pld", 0.5), line(5, "sd", 1.0, {"target": 3, "small": 9},
                                                       {"target": 0.1, "small": 0.1}, {"target": 10, "small": 1})]
    summ = summarize(recs)
    hf = summ["hf-pld"]  # HF baselines record tokens and time only
    assert hf["speedup_walltime"] == pytest.approx(4.0) and hf["calls_per_model"] is None
    assert all(math.isnan(hf[k]) for k in ("speedup_swi_ms", "speedup_swi_pw", "outside_share",
                                             "mean_tokens_per_target_call"))
    sd = summ["sd"]  # example 5 has no AR line: no ratio, no identity check
    assert math.isnan(sd["speedup_walltime"]) and math.isnan(sd["speedup_walltime_median"])
    assert all(math.isnan(v) for v in sd["speedup_walltime_ci95"]) and sd["mismatches"] == 0
    assert sd["speedup_swi_ms"] == pytest.approx(10 / (3 + 9 * 0.1))  # SWI needs no AR line
    js = summary_json(summ)
    assert js["sd"]["speedup_walltime"] is None and js["sd"]["speedup_walltime_ci95"] == [None, None]
    assert js["hf-pld"]["speedup_swi_ms"] is None and js["hf-pld"]["speedup_walltime"] == pytest.approx(4.0)
    json.dumps(js, allow_nan=False)  # no NaN left
    table = format_table(summ)
    row = next(r for r in table.splitlines() if r.startswith("sd "))
    assert row.split()[3:6] == ["-", "-", "-"]  # speedup, median, CI95


def test_records_may_be_bench_records():
    typed = [BenchRecord.from_dict(r) for r in RECORDS]
    assert summarize(typed)["csd"]["speedup_swi_ms"] == summarize(RECORDS)["csd"]["speedup_swi_ms"]


def test_format_table_rows_in_method_order():
    table = format_table(summarize(RECORDS))
    lines = table.splitlines()
    assert lines[0].startswith("clock: wall (wall time); load (1-minute average): start 0.50, end 1.50")
    assert lines[1].startswith("machine: ")  # the run's fingerprint (csd_lib.measure.machine)
    assert [r.split()[0] for r in lines[4:]] == ["ar", "csd"]
    csd = lines[5].split()
    assert csd[1:5] == ["2", "10.0", "3.00", "3.00"] and csd[5] == "2.00-4.00" and csd[-2:] == ["1", "1"]


def test_mag_share_by_hand():
    # csd's kept MaG tokens: 3 + 1 of rep 1 over all csd lines' 30 tokens (errors hold none)
    ok = [r for r in RECORDS if "error" not in r]
    assert mag_share(ok, "csd") == pytest.approx(4 / 30)
    assert mag_share(ok, "csd", kinds=("mag-match",)) == pytest.approx(3 / 30)
    assert math.isnan(mag_share(ok, "sd"))


def test_mag_share_skips_error_lines():
    assert mag_share(RECORDS, "csd") == pytest.approx(4 / 30)


def test_latency_in_the_summary_and_its_table():
    recs = [line(0, "ar", 2.0, {"target": 10}, {"target": 1.5}, AR_PARAMS, commit_times=[0.2 * i for i in range(1, 11)]),
            line(1, "ar", 2.0, {"target": 10}, {"target": 1.5}, AR_PARAMS, commit_times=[0.3 * i for i in range(1, 11)]),
            line(0, "hf-pld", 0.5), line(1, "hf-pld", 0.5)]
    s = summarize(recs)
    assert s["ar"]["ttft"]["p50"] == pytest.approx(0.25) and s["ar"]["ttft"]["n"] == 2
    assert s["ar"]["itl"]["p50"] == pytest.approx(0.25)  # nine gaps of 0.2 and nine of 0.3
    assert s["hf-pld"]["ttft"] is None and s["hf-pld"]["itl"] is None
    js = summary_json(s)
    assert js["hf-pld"]["ttft"] is None and js["ar"]["itl"]["p99_ci95"] == s["ar"]["itl"]["p99_ci95"]
    table = format_table(s).splitlines()
    i = next(j for j, r in enumerate(table) if r.startswith("latency"))
    ar = next(r for r in table[i:] if r.startswith("ar "))
    assert "250.0 [200.0-300.0]" in ar  # TTFT p50 in ms with its interval
    assert next(r for r in table[i:] if r.startswith("hf-pld")).endswith("not recorded")
    assert not any(r.startswith("latency") for r in format_table(summarize(RECORDS)).splitlines())


def test_sd_at_another_k_is_a_row_after_sd():
    """A bench's ``sd@K`` labels (SD at another draft length) are rows of the table, after ``sd``, by K."""
    sd = {"target": 3, "small": 9}
    recs = [line(e, m, w, sd if m != "ar" else {"target": 10}, {"target": 0.5, "small": 0.1} if m != "ar"
                 else {"target": 1.5}, CSD_PARAMS if m != "ar" else AR_PARAMS)
            for e in (0, 1) for m, w in (("ar", 2.0), ("sd@12", 1.2), ("sd", 1.0), ("sd@4", 1.1), ("csd", 0.9))]
    table = format_table(summarize(recs))
    names = [row.split()[0] for row in table.splitlines() if row.split() and row.split()[0] in
             ("ar", "sd", "sd@4", "sd@12", "csd")]
    assert names[:5] == ["ar", "sd", "sd@4", "sd@12", "csd"], table
