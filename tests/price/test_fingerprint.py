"""Machine fingerprints: the match rule, what a cost model and a run carry, and which cost model a bench prices with."""
import json
import logging

import pytest

from csd_lib import config, random_family
from csd_lib.measure import machine
from csd_lib.measure.bench import run_bench
from csd_lib.measure.machine import (REFERENCE_TOLERANCE, environment, fingerprint, machine_key,
                                     match_fingerprints, run_fingerprint)
from csd_lib.price import costfile
from csd_lib.price.costfile import bench_costs, cost_fingerprint, cost_path, costs_for, machine_cost_path, save_costs
from csd_lib.price.costmodel import CostModel
from csd_lib.price.timing import measure_costs, reference_of, step_costs

PROMPT = [5, 6, 7, 8]


def fp(**kw):
    base = dict(device="cpu", cpu_model="AMD EPYC", vector_extensions=["avx2", "fma"], cpu_count=2, threads=1,
                reference={"target": 0.016, "drafter": 0.0024, "drafter_name": "small"})
    return {**base, **kw}


def test_same_machine_class_matches():
    m = match_fingerprints(fp(), fp())
    assert m.verdict == "match" and m.usable and m.ratios == {"target": 1.0, "drafter": 1.0}


@pytest.mark.parametrize("field, value, words", [
    ("cpu_model", "Intel(R) Xeon(R) Processor", "cpu model"),
    ("threads", 4, "threads"),
    ("device", "cuda-nvidia-h200", "device"),
    ("vector_extensions", ["avx2", "avx512f", "fma"], "only here: avx512f"),
])
def test_any_static_difference_is_a_mismatch(field, value, words):
    m = match_fingerprints(fp(**{field: value}), fp())
    assert m.verdict == "mismatch" and not m.usable and words in m.describe()


def test_reference_steps_match_within_the_tolerance_either_way():
    """The issue's case: one CPU name, a target 3.4x and a drafter 4.3x faster here."""
    for factor in (REFERENCE_TOLERANCE * 0.99, 1 / (REFERENCE_TOLERANCE * 0.99)):
        here = fp(reference={"target": 0.016 * factor, "drafter": 0.0024, "drafter_name": "small"})
        assert match_fingerprints(here, fp()).verdict == "match"
    here = fp(reference={"target": 0.0048, "drafter": 0.00056, "drafter_name": "small"})
    m = match_fingerprints(here, fp())
    assert m.verdict == "mismatch" and m.ratios["target"] == pytest.approx(0.3)
    assert "4.80 ms here, 16.00 ms there" in m.describe() and "0.30x" in m.describe()


def test_drafter_steps_of_different_drafters_are_not_compared():
    here = fp(reference={"target": 0.016, "drafter": 0.1, "drafter_name": "base"})
    m = match_fingerprints(here, fp())
    assert m.verdict == "match" and set(m.ratios) == {"target"}


def test_a_fingerprint_without_reference_or_extensions():
    assert match_fingerprints(fp(reference=None), fp()).verdict == "match"  # static parts only
    old = match_fingerprints(fp(), fp(vector_extensions=None))
    assert old.verdict == "unknown" and old.usable and "vector_extensions" in old.describe()
    assert match_fingerprints(fp(cpu_model="x"), fp(vector_extensions=None)).verdict == "mismatch"


def test_vector_extensions_are_read_from_the_cpu_flags(monkeypatch):
    monkeypatch.setattr(machine, "_cpuinfo", lambda: [
        "model name\t: Some CPU", "flags\t\t: fpu sse2 sse4_2 avx avx2 fma smep avx512f avx512bw amx_tile",
        "flags\t\t: fpu"])
    assert machine.vector_extensions() == ["amx_tile", "avx", "avx2", "avx512bw", "avx512f", "fma", "sse4_2"]
    assert "AVX2+AVX-512+AMX" in machine.describe_fingerprint(fingerprint(environment("cpu")))
    monkeypatch.setattr(machine, "_cpuinfo", lambda: ["Features\t: fp asimd sve2 i8mm"])
    assert machine.vector_extensions() == ["asimd", "i8mm", "sve2"]


def test_machine_key_names_the_class_in_a_file_name():
    key = machine_key(fp())
    assert key.startswith("amd-epyc-1t-") and key == machine_key(fp(reference=None, cpu_count=64))
    assert key != machine_key(fp(vector_extensions=["avx2", "avx512f", "fma"])) != machine_key(fp(threads=2))
    assert all(c.isalnum() or c == "-" for c in machine_key(fp(cpu_model="Apple M2 (Pro) / 10 cores")))


def fam():
    return random_family("llama", vocab_size=40, n_drafters=2, seed=1)


@pytest.fixture(scope="module")
def measured():
    """One real cost model of the random family, measured here in a fraction of a second."""
    return measure_costs(fam(), PROMPT, seconds=1e-4, min_reps=1, warmup=1)


def test_a_cost_model_carries_its_fingerprint(measured):
    ref = measured.env["reference"]
    one = [s[3] for s in measured.samples if s[0] == "target" and s[1] == 1]
    assert ref["drafter_name"] == "small" == list(measured.forward)[-1]
    assert min(one) <= ref["target"] <= max(one)
    fpr = cost_fingerprint(measured)
    assert fpr["vector_extensions"] == environment("cpu")["vector_extensions"] and fpr["reference"] == ref
    old = CostModel.from_dict({**measured.to_dict(), "env": {"cpu_model": "AMD EPYC", "threads": 1}})
    assert cost_fingerprint(old)["reference"] == ref  # read from its own one-token timings


def test_step_costs_give_a_reference_of_every_model():
    steps = step_costs(fam(), PROMPT, ns=(1, 10), reps=2, warmup=1)
    assert set(steps) == {"target", "base", "small"} and all(set(v) == {1, 10} and min(v.values()) > 0
                                                         for v in steps.values())
    assert reference_of(steps) == {"target": steps["target"][1], "drafter": steps["small"][1], "drafter_name": "small"}


def test_a_run_carries_its_fingerprint(tmp_path):
    recs = run_bench(fam(), [type("Ex", (), dict(prompt="w5 w6 w7 w8", task="toy", source="t"))()],
                     ["ar", "csd"], tmp_path / "r.jsonl", 8, warmup=0, progress=False)
    run = run_fingerprint(recs)
    ar = next(r for r in recs if r["method"] == "ar")["stats"]
    assert run["reference"]["target"] == ar["forward_time"]["target"] / ar["calls"]["target"]
    assert run["reference"]["drafter_name"] == "small" and run["reference"]["drafter"] > 0
    assert run["vector_extensions"] == environment("cpu")["vector_extensions"]


def _store(cm, path, **env):
    d = cm.to_dict()
    d["env"] = {**d["env"], **env}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(d))
    return path.read_bytes()


def test_bench_prices_with_a_stored_model_only_on_its_machine(tmp_path, monkeypatch, measured, caplog):
    monkeypatch.setattr(config, "RESULTS_DIR", tmp_path)
    f = fam()
    committed = cost_path(f.name, "cpu")
    here = fingerprint(environment("cpu"), measured.env["reference"])
    # the same machine class: the stored model prices the run, nothing is measured
    _store(measured, committed)
    cm, m = bench_costs(f, seconds=1e-4, prompt_ids=PROMPT)
    assert m.verdict == "match" and cm.samples == measured.samples
    assert not machine_cost_path(f.name, here).exists()
    # another machine class (constructed): measured here, into this machine's own file; the committed one stays
    before = _store(measured, committed, cpu_model="Another CPU", reference={**measured.env["reference"],
                                                                           "target": 9.0})
    with caplog.at_level(logging.WARNING, logger="csd_lib"):
        cm, m = bench_costs(f, seconds=1e-4, prompt_ids=PROMPT)
    assert "measured on another machine class, not used: cpu model 'X' here, 'Another CPU' there" in \
        caplog.text.replace(environment("cpu")["cpu_model"], "X")
    assert cm.env["cpu_model"] == environment("cpu")["cpu_model"] and cm.samples != measured.samples
    assert committed.read_bytes() == before and machine_cost_path(f.name, here).exists()
    again, m2, path = costs_for(f, seconds=1e-4, prompt_ids=PROMPT)  # the next run finds this machine's own file
    assert path == machine_cost_path(f.name, here) and again.samples == cm.samples and m2.verdict == "match"


def test_a_run_far_from_the_stored_reference_measures(tmp_path, monkeypatch, measured):
    """Same CPU name, extensions and threads, but the run's own target steps are 3x faster: not priced with it."""
    monkeypatch.setattr(config, "RESULTS_DIR", tmp_path)
    f = fam()
    _store(measured, cost_path(f.name, "cpu"))
    slow = {**measured.env["reference"], "target": 3 * measured.env["reference"]["target"]}
    cm, m, path = costs_for(f, slow, 1e-4, PROMPT)
    assert path.parent.name == costfile.MACHINES_DIR and cm.samples != measured.samples


def test_an_old_file_is_used_with_a_warning_and_a_given_file_is_compared(tmp_path, monkeypatch, measured, caplog):
    monkeypatch.setattr(config, "RESULTS_DIR", tmp_path)
    f = fam()
    old = {k: v for k, v in measured.env.items() if k not in ("vector_extensions", "reference")}
    path = cost_path(f.name, "cpu")
    path.write_text(json.dumps({**measured.to_dict(), "env": old}))
    with caplog.at_level(logging.WARNING, logger="csd_lib"):
        cm, m = bench_costs(f, seconds=1e-4, prompt_ids=PROMPT)
    assert m.verdict == "unknown" and cm.samples == measured.samples and "not known" in caplog.text
    given = save_costs(CostModel.from_dict({**measured.to_dict(), "env": {**measured.env, "cpu_model": "Other"}}),
                       tmp_path / "given.json")
    cm, m = bench_costs(f, str(given), 1e-4, prompt_ids=PROMPT)
    assert cm.env["cpu_model"] == "Other" and m.verdict == "mismatch" and "'Other' there" in m.describe()
    assert bench_costs(f, "none") == (None, None)


def test_a_run_resumed_on_another_machine_splits_by_class():
    env = environment("cpu")
    recs = [{"env": env}, {"env": {**env, "vector_extensions": ["avx2"]}}, {"env": env}]
    groups = machine.by_machine(recs)
    assert len(groups) == 2 and [len(g) for g in groups.values()] == [2, 1]
    assert list(groups)[0] == machine_key(fingerprint(env))


def test_benchmarks_md_states_each_machine_class(tmp_path, measured):
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("make_benchmarks_md",
                                                  Path(__file__).parents[2] / "scripts" / "make_benchmarks_md.py")
    md = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(md)
    ex = [type("Ex", (), dict(prompt=p, task="toy", source="t"))() for p in ("w5 w6 w7 w8", "w9 w10 w11 w9")]
    recs = run_bench(fam(), ex, ["ar", "sd"], tmp_path / "r.jsonl", 8, warmup=0, progress=False)
    one = md.machine_lines(recs, measured)
    assert one[0].startswith(f"Machine of this run (class `{machine_key(run_fingerprint(recs))}`)")
    assert "against this run:" in one[0] and not any("machine classes" in line for line in one)
    other = {**recs[0]["env"], "cpu_model": "Another CPU"}
    mixed = [r if r["example"] == 0 else {**r, "env": other} for r in recs]
    text = "\n".join(md.machine_lines(mixed, None))
    assert "from 2 machine classes" in text and "Another CPU" in text
    assert text.count("| method | n × repeats |") == 2  # a table per class


def test_a_committed_class_file_is_found_before_the_default_and_nothing_is_measured(tmp_path, monkeypatch, measured):
    """The default file is of another machine class; the class file committed beside it is this one's."""
    monkeypatch.setattr(config, "RESULTS_DIR", tmp_path)
    f = fam()
    here = fingerprint(environment("cpu"), measured.env["reference"])
    _store(measured, cost_path(f.name, "cpu"), cpu_model="Another CPU")
    _store(measured, costfile.class_cost_path(f.name, here))
    cm, m, path = costs_for(f, measured.env["reference"], 1e-4, PROMPT)
    assert path == costfile.class_cost_path(f.name, here) and m.verdict == "match"
    assert cm.samples == measured.samples and not machine_cost_path(f.name, here).exists()
    assert path.parent == tmp_path and machine_key(here) in path.name


def test_a_summary_prices_chains_and_leaves_trees_unpriced(tmp_path, measured):
    """A chain's EWIF does not price a tree: with a cost model, csd-tree's prediction stays NaN, SD's is set."""
    from csd_lib.report.summary import summarize
    ex = [type("Ex", (), dict(prompt=f"w5 w6 w{7 + i} w8", task="toy", source="t"))() for i in range(2)]
    recs = run_bench(fam(), ex, ["ar", "sd", "csd-tree"], tmp_path / "r.jsonl", 8, warmup=0, progress=False)
    s = summarize(recs, measured)
    assert s["sd"]["speedup_walltime_predicted"] > 0 and s["csd-tree"]["mismatches"] == 0
    assert s["csd-tree"]["speedup_walltime_predicted"] != s["csd-tree"]["speedup_walltime_predicted"]  # NaN
