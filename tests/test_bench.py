"""Bench harness: resume without loss or duplicates, summaries from raw lines, HF baselines."""
import json
from dataclasses import dataclass

import pytest

from csd_lib import random_family
from csd_lib.bench import hf_generate, mag_share, read_records, run_bench, summarize, summary_json
from csd_lib.cascade import generate


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
                              "mean_tokens_per_target_call", "mismatches"}


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
        assert hf_generate(f, ids, method, 14)["token_ids"] == ref


def test_bench_rejects_unknown_method(tmp_path):
    with pytest.raises(ValueError, match="unknown method"):
        run_bench(fam(), EXAMPLES, ["ar", "beam"], tmp_path / "r.jsonl", 8, warmup=0, progress=False)


def test_predicted_vs_measured_uses_the_runs_own_acceptance(tmp_path):
    from csd_lib.bench import predicted_vs_measured
    f = random_family("llama", vocab_size=40, n_drafters=2, seed=2, drafter_is_target=True)
    recs = run_bench(f, EXAMPLES, ["ar", "mag", "csd"], tmp_path / "r.jsonl", 24, warmup=0, progress=False)
    pv = predicted_vs_measured(recs)
    assert pv["ar"]["predicted_walltime"] == 1.0
    for m in ("mag", "csd"):
        # the i.i.d. model fed with this run's acceptance reproduces its count-based SWI closely
        assert pv[m]["predicted_swi_ms"] == pytest.approx(pv[m]["speedup_swi_ms"], rel=0.2)
        assert pv[m]["predicted_walltime"] > 0 and pv[m]["latency_costs"]["target"] == 1.0
