"""Machine fingerprints: the match rule, what a cost model and a run carry, and which cost model a bench prices with."""
import json
import logging

import pytest

from csd_lib import config, random_family
from csd_lib.measure import machine
from csd_lib.measure.bench import run_bench
from csd_lib.measure.machine import (REFERENCE_TOLERANCE, environment, fingerprint, machine_key,
                                     match_fingerprints, run_fingerprint)
from csd_lib.price import costs
from csd_lib.price.costmodel import CostModel
from csd_lib.price.costs import (bench_costs, cost_fingerprint, cost_path, costs_for, machine_cost_path, measure_costs,
                                 reference_of, save_costs, step_costs)

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
    assert machine.describe_fingerprint(fingerprint({})) == "machine not recorded"   # no environment: no line of Nones
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
    csd = next(r for r in recs if r["method"] == "csd")["stats"]
    assert csd["nodes"]["small"] > 0  # small reviews MaG's drafts: many tokens a call, not a one-token step
    assert run["reference"]["drafter_name"] == "small" and run["reference"]["drafter"] is None
    assert run["vector_extensions"] == environment("cpu")["vector_extensions"]
    # where small only drafts (it reviews nothing), its seconds per call are the drafter's one-token step
    drafting = {**csd, "nodes": {**csd["nodes"], "small": 0}, "forward_time": {**csd["forward_time"], "small": 0.006},
                "calls": {**csd["calls"], "small": 3}}
    recs2 = [r if r["method"] != "csd" else {**r, "stats": drafting} for r in recs]
    assert run_fingerprint(recs2)["reference"]["drafter"] == pytest.approx(0.002)


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
    again = costs_for(f, seconds=1e-4, prompt_ids=PROMPT)  # the next run finds this machine's own file
    assert again.path == machine_cost_path(f.name, here) and again.cost_model.samples == cm.samples
    assert again.match.verdict == "match" and "this machine's own file" in again.why


def test_a_run_far_from_the_stored_reference_measures(tmp_path, monkeypatch, measured):
    """Same CPU name, extensions and threads, but the run's own target steps are 3x faster: not priced with it."""
    monkeypatch.setattr(config, "RESULTS_DIR", tmp_path)
    f = fam()
    _store(measured, cost_path(f.name, "cpu"))
    slow = {**measured.env["reference"], "target": 3 * measured.env["reference"]["target"]}
    cm, m, path, why = costs_for(f, slow, 1e-4, PROMPT)
    assert path.parent.name == costs.MACHINES_DIR and cm.samples != measured.samples
    assert why.startswith("measured here into") and "beyond the 1.5x tolerance" in why  # says why it measured


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
    _store(measured, costs.class_cost_path(f.name, here))
    cm, m, path, why = costs_for(f, measured.env["reference"], 1e-4, PROMPT)
    assert path == costs.class_cost_path(f.name, here) and m.verdict == "match"
    assert "the committed file of this machine class" in why and "matches" in why
    assert cm.samples == measured.samples and not machine_cost_path(f.name, here).exists()
    assert path.parent == tmp_path and machine_key(here) in path.name


def test_a_summary_prices_chains_and_trees(tmp_path, measured):
    """With a cost model, SD's prediction is set by a chain's EWIF and csd-tree's by the tree pricing (its lines
    carry the per-branch meters); lines without those meters stay NaN."""
    from csd_lib.report.summary import summarize
    ex = [type("Ex", (), dict(prompt=f"w5 w6 w{7 + i} w8", task="toy", source="t"))() for i in range(2)]
    recs = run_bench(fam(), ex, ["ar", "sd", "csd-tree"], tmp_path / "r.jsonl", 8, warmup=0, progress=False)
    s = summarize(recs, measured)
    assert s["sd"]["speedup_walltime_predicted"] > 0 and s["csd-tree"]["mismatches"] == 0
    assert s["csd-tree"]["speedup_walltime_predicted"] > 0
    old = [dict(r, stats={k: v for k, v in r["stats"].items() if k != "branches"}) if r["method"] == "csd-tree" else r
           for r in recs]  # lines written before the per-branch meters
    s_old = summarize(old, measured)["csd-tree"]["speedup_walltime_predicted"]
    assert s_old != s_old  # NaN


def test_the_core_count_is_named_but_not_compared():
    m = match_fingerprints(fp(cpu_count=64), fp())
    assert m.verdict == "match" and m.usable and "cores 64 here, 2 there (not compared" in m.describe()
    assert match_fingerprints(fp(cpu_count=64, threads=2), fp()).verdict == "mismatch"  # the threads are compared


def _md():
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("make_benchmarks_md",
                                                  Path(__file__).parents[2] / "scripts" / "make_benchmarks_md.py")
    md = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(md)
    return md


def _as_machine(recs, path, **env):
    """A run's lines as if measured on another machine (``env`` overrides), written to ``path``."""
    out = [{**r, "env": {**r["env"], **env}} for r in recs]
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return out


def test_benchmarks_md_prices_each_machine_class_with_its_own_cost_model(tmp_path, monkeypatch, measured):
    """A main run, a run of another class with its class file, and one of a class nothing matches: each run
    states its fingerprint and cost model, the unmatched one says it is not priced, the goals are per class."""
    md = _md()
    f = fam()
    res = tmp_path / "results"
    res.mkdir()
    for mod, key, value in ((config, "RESULTS_DIR", res), (md, "RES", res), (md, "ROOT", tmp_path),
                            (md, "DOCS", tmp_path), (md, "FAMILIES", (f.name,)), (md, "TASKS", ("toy",)),
                            (md, "png", lambda fig, path: False)):
        monkeypatch.setattr(mod, key, value)
    ex = [type("Ex", (), dict(prompt=p, task="toy", source="t"))() for p in ("w5 w6 w7 w8", "w9 w10 w11 w9")]
    recs = run_bench(f, ex, ["ar", "sd", "csd"], res / f"{f.name}-toy.jsonl", 8, warmup=0, progress=False)
    ref = run_fingerprint(recs)["reference"]
    _store(measured, cost_path(f.name, "cpu"), reference=ref)  # the default: this machine's class
    other = run_fingerprint(_as_machine(recs, res / "o.jsonl", cpu_model="Another CPU"))
    (res / "o.jsonl").rename(res / f"{f.name}-toy.{machine_key(other)}.jsonl")
    _store(measured, costs.class_cost_path(f.name, other), cpu_model="Another CPU", reference=ref)
    third = run_fingerprint(_as_machine(recs, res / "t.jsonl", cpu_model="Third CPU"))
    (res / "t.jsonl").rename(res / f"{f.name}-toy.{machine_key(third)}.jsonl")
    (tmp_path / "README.md").write_text("# R\n\n## Results at a glance\n\nold\n\n## Next\n")
    assert md.main() == 0
    text = (tmp_path / "BENCHMARKS.md").read_text()
    assert f"| {f.name} / toy |" in (tmp_path / "README.md").read_text()  # the main run only: priced
    runs = text.split("\n## ")
    main_run, class_run, unmatched = (next(r for r in runs if r.startswith(f"{f.name} on toy{w}"))
                                      for w in (" (", f", machine class `{machine_key(other)}`",
                                                f", machine class `{machine_key(third)}`"))
    assert f"`results/costs-{f.name}-cpu.json` (the committed default), whose fingerprint matches" in main_run
    assert (f"`results/costs-{f.name}-cpu-{machine_key(other)}.json` (the committed file of this machine class)"
            in class_run and "Another CPU" in class_run)
    assert md.UNPRICED not in main_run + class_run and "| csd | 2 × 1 |" in class_run
    assert unmatched.count(md.UNPRICED) == 2 and unmatched.count("| not priced |") == 6  # no number where none matches
    assert "Third CPU" in unmatched
    assert f"cpu model 'Third CPU' here, '{environment('cpu')['cpu_model']}' there" in unmatched  # why not priced
    goals = next(r for r in runs if r.startswith("Headline goals per machine class"))
    for key in (machine_key(run_fingerprint(recs)), machine_key(other), machine_key(third)):
        assert f"### Machine class `{key}`" in goals
    assert goals.count(f"| {f.name} / toy |") == 3 and "limit not priced" in goals or "| met |" in goals
    assert f"### Cost model of {f.name} (`results/costs-{f.name}-cpu-{machine_key(other)}.json`, one machine class)" \
        in text


def test_costs_out_writes_a_full_fingerprint_that_costs_for_finds(tmp_path, monkeypatch):
    """What scripts/class_benchmarks.sh runs: `costs --out results/costs-<family>-cpu-<machine key>.json`."""
    import functools

    from csd_lib.cli import commands
    from csd_lib.cli.main import main
    monkeypatch.setattr(config, "RESULTS_DIR", tmp_path)
    f = fam()
    monkeypatch.setattr(commands, "load_from_args", lambda args: f)
    monkeypatch.setattr(commands, "measure_costs", functools.partial(measure_costs, prompt_ids=PROMPT, min_reps=1,
                                                                     warmup=1))
    out = costs.class_cost_path(f.name, fingerprint(environment("cpu")))
    assert main(["costs", "--family", "tiny-t5", "--threads", "1", "--seconds", "0.0001", "--out", str(out)]) == 0
    env = json.loads(out.read_text())["env"]
    here = environment("cpu")
    assert {k: env[k] for k in ("cpu_model", "vector_extensions", "cpu_count", "threads")} == \
        {k: here[k] for k in ("cpu_model", "vector_extensions", "cpu_count", "threads")} and env["threads"] == 1
    ref = env["reference"]
    assert ref["drafter_name"] == "small" and ref["target"] > 0 and ref["drafter"] > 0
    choice = costs_for(f, ref, 1e-4, PROMPT)
    assert choice.path == out and choice.match.verdict == "match" and not machine_cost_path(f.name, here).exists()


def test_a_stored_run_is_priced_only_by_a_cost_model_of_its_own_class(tmp_path, monkeypatch, measured):
    monkeypatch.setattr(config, "RESULTS_DIR", tmp_path)
    f = fam()
    recs = run_bench(f, [type("Ex", (), dict(prompt="w5 w6 w7 w8", task="toy", source="t"))()], ["ar", "sd"],
                     tmp_path / "r.jsonl", 8, warmup=0, progress=False)
    ref = run_fingerprint(recs)["reference"]
    assert costs.stored_costs_for_run(f.name, recs).cost_model is None  # nothing stored: nothing measured
    _store(measured, cost_path(f.name, "cpu"), reference=ref)
    assert costs.stored_costs_for_run(f.name, recs).path == cost_path(f.name, "cpu")
    elsewhere = [{**r, "env": {**r["env"], "cpu_model": "Another CPU"}} for r in recs]
    none = costs.stored_costs_for_run(f.name, elsewhere)
    assert none.cost_model is None and "cpu model 'Another CPU' here" in none.why
    # priced here (costs_for_run): this machine's stored model, and the words say whose costs price the run
    here = costs.costs_for_run(f, elsewhere)
    assert here.path == cost_path(f.name, "cpu") and "the committed default" in here.why
    assert "The run was measured on another machine class" in here.why
    assert "another machine class" not in costs.costs_for_run(f, recs).why


def test_a_run_of_this_machine_is_priced_by_the_cost_model_measured_here_whatever_the_load(tmp_path, monkeypatch,
                                                                                             measured):
    """Notebook 05 measures this machine's cost model; notebook 06 prices a committed run of the same machine
    class timed when the machine was 3x faster: the file measured here is used, not called another machine
    class, and the committed default stored before fingerprints is not preferred to it."""
    monkeypatch.setattr(config, "RESULTS_DIR", tmp_path)
    f = fam()
    recs = run_bench(f, [type("Ex", (), dict(prompt="w5 w6 w7 w8", task="toy", source="t"))()], ["ar", "sd"],
                     tmp_path / "r.jsonl", 8, warmup=0, progress=False)
    ref = run_fingerprint(recs)["reference"]
    slow = {**ref, "target": 3 * ref["target"], "drafter": 3 * ref["drafter"]}
    own = machine_cost_path(f.name, fingerprint(environment("cpu")))
    _store(measured, own, reference=slow)
    _store(measured, cost_path(f.name, "cpu"), vector_extensions=None, reference=ref)  # 'unknown': before fingerprints
    choice = costs.costs_for_run(f, recs, seconds=1e-4, progress=False)
    assert choice.path == own and choice.match.verdict == "match"
    assert "another machine class" not in choice.why and "this machine's own file" in choice.why
    assert "priced at this machine's present costs" in choice.why
    _store(measured, costs.class_cost_path(f.name, fingerprint(environment("cpu"))), reference=ref)
    exact = costs.costs_for_run(f, recs, seconds=1e-4, progress=False)   # a file of the run's own speed: that one
    assert exact.path == costs.class_cost_path(f.name, fingerprint(environment("cpu"))) and "the run's" in exact.why
