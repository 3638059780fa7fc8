"""Notebook 08's pieces: the paper's Table 3, a tree round from the event log, the comparison and its claims."""
import json
import math

import pytest

from csd_lib import config, generate, random_family
from csd_lib.families.tasks import Example
from csd_lib.measure.machine import run_fingerprint
from csd_lib.measure.records import as_records
from csd_lib.price.costmodel import CostModel
from csd_lib.price.predict import round_price
from csd_lib.report import trees

PROMPT = "w5 w6 w7 w5 w6"


@pytest.fixture(scope="module")
def fam():
    return random_family("llama", vocab_size=32, n_drafters=1, seed=2)


def test_paper_table3_speedups_follow_the_numbers():
    rows = {r["method"]: r for r in trees.paper_table3()}
    assert rows["ar"]["GSM8K x AR"] == 1.0 and rows["csd-tree"]["GSM8K tok/s"] == 63.81
    assert rows["csd-tree"]["MMLU x AR"] == pytest.approx(63.37 / 33.11)
    assert max(rows, key=lambda m: rows[m]["GSM8K tok/s"]) == "csd-tree"  # the paper's claim


def test_t5_families_take_no_tree_and_name_the_side_family():
    t5 = random_family("t5", vocab_size=32, n_drafters=1, seed=2)
    llama = random_family("llama", vocab_size=32, n_drafters=1, seed=2)
    assert not trees.takes_trees(t5) and trees.takes_trees(llama)
    assert "relative position bias" in trees.applies_says(t5) and "decoder-only" in trees.applies_says(llama)


def test_the_picked_round_is_a_branching_target_review(fam):
    g = generate(fam, PROMPT, "csd-tree", max_new_tokens=16)
    r = trees.pick_tree_round(g, None)
    e = trees.target_rounds(g)[r.index]
    assert r.event is e and r.parents == e.parents and r.accepted == e.path
    assert any(b > 0 for b in e.branch) and len(r.labels) == len(r.proposers) == len(e.tokens)
    assert r.labels == [str(t) for t in e.tokens] and r.next_label == str(e.next_token)


def test_a_chain_has_no_tree_round(fam):
    with pytest.raises(ValueError, match="no tree review"):
        trees.pick_tree_round(generate(fam, PROMPT, "csd", max_new_tokens=8), None)


def test_nodes_per_call_is_what_the_target_reviews_scored(fam):
    for g in (generate(fam, PROMPT, "csd-tree", max_new_tokens=16), generate(fam, PROMPT, "sd", k=3, max_new_tokens=12)):
        scored = sum(len(e.tokens) for e in g.events if e.depth == 0)  # the event log's count, not the stats'
        assert trees.nodes_per_target_call(g) == pytest.approx(scored / g.stats.calls["target"]) and scored > 0


def test_live_comparison_rows_and_claims(fam, tmp_path):
    examples = [Example(f"w{5 + i} w6 w7 w5 w6 w{8 + i}", "", "", "toy", "") for i in range(3)]
    recs, source = trees.table3_records(fam, examples, ["ar", "sd", "csd", "csd-tree"], 12,
                                        path=tmp_path / "none-trees.jsonl")
    assert "live run on 3 prompts" in source and len(recs) == 12
    rows = {r["method"]: r for r in trees.table3_rows(recs)}
    assert set(rows) == {"ar", "sd", "csd", "csd-tree"} and all(r["mismatches"] == 0 for r in rows.values())
    assert rows["ar"]["tokens / target call"] == 1 and rows["ar"]["nodes / target call"] == 0
    want = sum(r["stats"]["nodes"]["target"] for r in recs if r["method"] == "csd-tree") / \
        sum(r["stats"]["calls"]["target"] for r in recs if r["method"] == "csd-tree")
    assert rows["csd-tree"]["nodes / target call"] == pytest.approx(want) and want > 1
    diffs = trees.table3_differences(recs)
    assert set(diffs) == {f"csd-tree-vs-{b}-{w}" for b in ("csd", "sd") for w in ("tokens-per-target-call", "speedup")}
    assert all(d.n == 3 for d in diffs.values())


def test_committed_records_are_read_and_lack_nodes_when_not_recorded(fam, tmp_path):
    examples = [Example("w5 w6 w7 w5 w6", "", "", "toy", "")]
    recs = trees.live_records(fam, examples, ["ar", "csd-tree"], 8)
    path = tmp_path / "x-trees.jsonl"
    old = [{**r, "stats": {k: v for k, v in r["stats"].items() if k != "nodes"}} for r in recs]  # before Stats.nodes
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    got, source = trees.table3_records(fam, examples, ["ar"], 8, path=path)  # the file wins over a live run
    assert source == "the committed run `x-trees.jsonl`" and {r["method"] for r in got} == {"ar", "csd-tree"}
    rows = {r["method"]: r for r in trees.table3_rows(got)}
    assert math.isnan(rows["csd-tree"]["nodes / target call"]) and rows["csd-tree"]["mismatches"] == 0
    assert config.RESULTS_DIR in trees.trees_path("tiny-llama", "synth-gsm8k").parents


def test_the_sentence_says_directions_only_beyond_the_interval(fam):
    from csd_lib.report.intervals import Difference
    up, flat = Difference(1.0, 0.5, 1.5, 6), Difference(0.1, -0.2, 0.4, 6)
    diffs = {"csd-tree-vs-csd-tokens-per-target-call": up, "csd-tree-vs-csd-speedup": flat}
    text = trees.table3_says(diffs, fam, "a test")
    assert "gets more (+1.00" in text and "no different beyond the noise (+0.10" in text
    assert "not checked: random weights" in text and "SD" not in text  # random weights; sd did not run
    assert "nothing to compare" in trees.table3_says({}, fam, "a test")


@pytest.fixture(scope="module")
def table3_run():
    """Real records of a random llama family (ar, sd, csd, csd-tree; sd@2: sd's lines relabelled at k = 2), whose
    walltimes the tests set."""
    f = random_family("llama", vocab_size=6, n_drafters=1, seed=1, eos=None)
    examples = [Example(p, "", "", "toy", "") for p in ("w3 w4 w5 w3 w4", "w4 w5 w3 w4 w5", "w5 w3 w5 w4 w3")] * 3
    recs = trees.live_records(f, examples, ["ar", "sd", "csd", "csd-tree"], 16)
    return recs + [dict(r, method="sd@2", plan={**r["plan"], "k": [[2]]}) for r in recs if r["method"] == "sd"]


def _timed(recs, walls: dict):
    """``recs`` with each method's walltime per example set to ``walls[method](example)``."""
    return [dict(r, stats={**r["stats"], "wall_time": walls[r["method"]](r["example"])}) for r in recs
            if r["method"] in walls]


def _jit(base, spread=0.05):
    return lambda i: base * (1 + spread * ((i * 7) % 5 - 2) / 2)


def test_table3_goals_use_the_best_sd_and_intervals(table3_run):
    recs = _timed(table3_run, {"ar": _jit(10), "sd": _jit(5), "sd@2": _jit(4), "csd": _jit(4.5), "csd-tree": _jit(3)})
    assert trees.best_sd_label(recs) == "sd@2"
    (sd_goal, sd_val, sd_need, sd_ok, _), (csd_goal, _, _, csd_ok, csd_note), medusa = trees.table3_goals(recs)
    assert "the best SD (k = 2; SD ran at k = 4, 2)" in sd_goal and sd_need == ">= 1.2x, lower CI >= 1.1"
    r = float(sd_val.split("x")[0])
    assert r == pytest.approx(4 / 3, rel=0.06) and sd_ok  # sd@2's walltime over csd-tree's
    assert csd_ok and csd_note == "faster" and "over CS Drafting:" in csd_goal
    assert medusa[3] is None and medusa[4] == "Medusa did not run in this file" and "Medusa" in medusa[0]
    assert trees.table3_limit(recs, CostModel.constant({"target": 1e-2, "small": 1e-3, "mag": 0.0})) == ""  # met


def test_a_tie_and_a_miss_say_so_and_the_miss_is_priced(table3_run):
    # csd as fast as csd-tree give or take the jitter; sd@2 only a little slower: a tie, and the SD goal missed
    recs = _timed(table3_run, {"ar": _jit(10), "sd": _jit(5), "sd@2": _jit(3.2), "csd": _jit(3, 0.2),
                               "csd-tree": _jit(3, 0.1)})
    sd_row, csd_row, _ = trees.table3_goals(recs)
    assert sd_row[3] is False and 1.0 < float(sd_row[1].split("x")[0]) < 1.2
    assert csd_row[3] is False and csd_row[4] == "tie: the interval holds 1"
    slower = _timed(table3_run, {"ar": _jit(10), "sd@2": _jit(4), "csd": _jit(2), "csd-tree": _jit(3)})
    assert trees.table3_goals(slower)[1][4] == "slower" and trees.best_sd_label(slower) == "sd@2"
    cm = CostModel.constant({"target": 1e-2, "small": 1e-3, "mag": 0.0})
    text = trees.table3_limit(recs, cm)
    assert "a CS Drafting + tree round costs" in text and "round of SD at k = 2" in text and "drafting" in text
    priced = float(text.split("priced at ")[1].split("x")[0])
    t = round_price([r for r in as_records(recs) if r.method == "csd-tree"], cm)
    s = round_price([r for r in as_records(recs) if r.method == "sd@2"], cm)
    assert t["round_s"] == pytest.approx(t["draft_s"] + t["verify_s"]) and t["verify_s"] == pytest.approx(1e-2)
    assert priced == pytest.approx(s["per_token_s"] / t["per_token_s"], abs=0.01)
    assert trees.table3_limit(recs, None) == ""


def test_goals_of_a_run_without_sd_or_csd_tree(table3_run):
    recs = _timed(table3_run, {"ar": _jit(10), "csd": _jit(4)})
    rows = trees.table3_goals(recs)
    assert [r[3] for r in rows] == [None, None, None] and trees.best_sd_label(recs) is None
    assert rows[0][4] == "CS Drafting + tree did not run in this file" and trees.table3_limit(recs, None) == ""


def test_benchmarks_md_table3_section(table3_run, tmp_path, monkeypatch):
    """scripts/make_benchmarks_md.py's Table 3: every SD run as a row, each goal with its status ('not run' for
    Medusa here), and the limit sentence when the goal over the best SD is missed."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("make_benchmarks_md",
                                                  Path(__file__).parents[2] / "scripts" / "make_benchmarks_md.py")
    md = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(md)
    recs = _timed(table3_run, {"ar": _jit(10), "sd": _jit(5), "sd@2": _jit(3.2), "csd": _jit(4), "csd-tree": _jit(3)})
    cost = json.loads((config.RESULTS_DIR / "costs-tiny-llama-cpu.json").read_text())
    run = run_fingerprint(recs)  # the stored model is used only on its own machine class: give it this run's
    cost["env"] = {**cost["env"], **{k: run[k] for k in ("cpu_model", "vector_extensions", "cpu_count", "threads")},
                   "reference": run["reference"]}
    (tmp_path / "costs-tiny-llama-cpu.json").write_text(json.dumps(cost))
    monkeypatch.setattr(config, "RESULTS_DIR", tmp_path)
    trees.trees_path("tiny-llama", "synth-gsm8k").write_text("".join(json.dumps(r) + "\n" for r in recs))
    text = "\n".join(md.tree_sections())
    assert "## Table 3 on tiny-llama / synth-gsm8k" in text and "| sd@2 | 9 |" in text and "| sd | 9 |" in text
    assert "| not run | Medusa did not run in this file |" in text and "| MISSED |" in text and "| met | faster |" in text
    assert "What limits it: by the cost model" in text and "round of SD at k = 2" in text
