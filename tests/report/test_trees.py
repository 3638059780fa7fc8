"""Notebook 08's pieces: the paper's Table 3, a tree round from the event log, the comparison and its claims."""
import json
import math

import pytest

from csd_lib import config, generate, random_family
from csd_lib.families.tasks import Example
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
    assert trees.tree_family_name(t5) == trees.TREE_SIDE and trees.tree_family_name(llama) == llama.name
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
    from csd_lib.report.claims import Difference
    up, flat = Difference(1.0, 0.5, 1.5, 6), Difference(0.1, -0.2, 0.4, 6)
    diffs = {"csd-tree-vs-csd-tokens-per-target-call": up, "csd-tree-vs-csd-speedup": flat}
    text = trees.table3_says(diffs, fam, "a test")
    assert "gets more (+1.00" in text and "no different beyond the noise (+0.10" in text
    assert "not checked: random weights" in text and "SD" not in text  # random weights; sd did not run
    assert "nothing to compare" in trees.table3_says({}, fam, "a test")
