"""results/evidence-policies.json (notebook 10: draft-length policies against fixed K) follows from the committed
policies runs: recomputed here, it must come out unchanged; the runs keep every law."""
import json

import pytest

from csd_lib import config
from csd_lib.engine.policy import POLICIES
from csd_lib.report.evidence import (EVIDENCE_N, EVIDENCE_NEW_TOKENS, FAMILIES, POLICIES_FILE, POLICY_METHODS,
                                     POLICY_QUESTIONS, POLICY_RUN, TASKS, evidence_json, lesson_records,
                                     lesson_run_path, policy_answer, policy_evidence, policy_label, policy_rows)


def test_the_committed_policy_evidence_follows_from_the_committed_runs():
    committed = (config.RESULTS_DIR / POLICIES_FILE).read_text(encoding="utf-8")
    rows = policy_rows()
    assert evidence_json(rows) == committed, f"results/{POLICIES_FILE} is stale: run python scripts/make_evidence.py"
    want = {(q, f, t, m, p) for q in POLICY_QUESTIONS for f in FAMILIES for t in TASKS for m in POLICY_METHODS
            for p in POLICIES[1:]}
    assert {(r["question"], r["family"], r["task"], r["method"], r["policy"]) for r in rows} == want
    for r in rows:   # 50 prompts each; a direction only beyond the interval; the load the runs shared the machine with
        assert r["n"] == EVIDENCE_N and r["lo"] <= r["estimate"] <= r["hi"], r
        assert (r["verdict"] == "higher") == (r["lo"] > 0) and (r["verdict"] == "lower") == (r["hi"] < 0)
        assert r["load1_median"] is not None and r["load1_median"] >= 0


@pytest.mark.parametrize("family", FAMILIES)
def test_every_policy_returned_the_same_greedy_tokens_on_every_prompt(family):
    """A law: a draft-length policy changes the rounds, never the output (fixed K's tokens are AR's, asserted by
    the engine tests); every configuration ran on the first 50 prompts at the evidence runs' length."""
    for task in TASKS:
        recs = lesson_records(lesson_run_path(POLICY_RUN, family, task))
        labels = {policy_label(m, p) for m in POLICY_METHODS for p in POLICIES}
        assert {r["config"] for r in recs} == labels and len(recs) == len(labels) * EVIDENCE_N
        by_example = {}
        for r in recs:
            by_example.setdefault(r["example"], set()).add(tuple(r["token_ids"]))
            assert r["tokens"] == len(r["token_ids"]) <= EVIDENCE_NEW_TOKENS and r["seconds"] > 0
            assert len(r["draft_lengths"]) == r["calls"]["target"]   # one draft per target review
        assert sorted(by_example) == list(range(EVIDENCE_N))
        assert all(len(ids) == 1 for ids in by_example.values()), (family, task)


def _rec(config_, ex, tokens, target, seconds):
    return dict(config=config_, example=ex, tokens=tokens, calls={"target": target}, seconds=seconds, load1=1.0)


def test_a_policy_answer_is_the_pooled_rate_and_the_median_time_ratio():
    recs = [_rec("sd, fixed", i, 30, 3, 1.0) for i in range(8)]
    recs += [_rec("sd, ewif", i, 30, 5 + i % 2, 0.8 + 0.01 * i) for i in range(8)]
    calls = policy_answer(recs, "sd", "ewif", "policy-vs-fixed-target-calls")
    assert calls["estimate"] == pytest.approx(240 / 44 - 10, abs=1e-6) and calls["verdict"] == "lower"
    time = policy_answer(recs, "sd", "ewif", "policy-vs-fixed-walltime")
    ratios = sorted(1 / (0.8 + 0.01 * i) for i in range(8))
    assert time["estimate"] == pytest.approx((ratios[3] + ratios[4]) / 2 - 1, abs=1e-6) and time["verdict"] == "higher"
    assert time["load1_median"] == 1.0 and time["method"] == "sd" and time["policy"] == "ewif"
    with pytest.raises(ValueError, match="unknown policy question"):
        policy_answer(recs, "sd", "ewif", "fastest")


def test_policy_evidence_reads_one_familys_rows():
    got = policy_evidence("tiny-llama", "policy-vs-fixed-walltime")
    assert len(got) == len(TASKS) * len(POLICY_METHODS) * (len(POLICIES) - 1) and {r["family"] for r in got} == {"tiny-llama"}
    assert policy_evidence("vicuna", "policy-vs-fixed-walltime") == []       # no committed run: nothing to show
    assert policy_evidence("tiny-t5", "policy-vs-fixed-walltime", path=config.RESULTS_DIR / "none.json") == []
    with pytest.raises(ValueError, match="unknown policy question"):
        policy_evidence("tiny-t5", "nothing")
    assert json.loads((config.RESULTS_DIR / POLICIES_FILE).read_text(encoding="utf-8"))   # the file is committed
