"""results/evidence.json follows from the committed benchmark runs: recomputed here, it must come out unchanged."""
import json

import pytest

from csd_lib import config
from csd_lib.report.evidence import QUESTIONS, answer, committed_answers, evidence_json, evidence_rows


def test_the_committed_evidence_follows_from_the_committed_runs():
    committed = (config.RESULTS_DIR / "evidence.json").read_text(encoding="utf-8")
    rows = evidence_rows()
    assert evidence_json(rows) == committed, "results/evidence.json is stale: run python scripts/make_evidence.py"
    assert {(r["family"], r["task"]) for r in rows} == {(f, t) for f in ("tiny-t5", "tiny-llama", "tiny-t5-paper")
                                                         for t in ("synth-gsm8k", "synth-mmlu")}
    for r in rows:  # every answer rests on the run's 50 prompts and states a direction only beyond its interval
        assert r["n"] == 50 and r["lo"] <= r["estimate"] <= r["hi"]
        assert (r["verdict"] == "higher") == (r["lo"] > 0) and (r["verdict"] == "lower") == (r["hi"] < 0)


def test_an_answer_is_the_difference_of_the_two_methods(tmp_path):
    rows = json.loads((config.RESULTS_DIR / "evidence.json").read_text(encoding="utf-8"))
    paper = [r for r in rows if r["family"] == "tiny-t5-paper" and r["question"] == "csd-vs-sd-swi-model-size"]
    assert paper and all(r["verdict"] == "higher" for r in paper)   # the paper's regime: the cascade wins in SWI
    with pytest.raises(ValueError, match="unknown question"):
        answer([], "csd-beats-everything")
    assert set(QUESTIONS) >= {"csd-vs-sd-swi-model-size", "csd-vs-sd-target-calls"}
    assert evidence_rows(tmp_path) == []                            # no committed run: no answer


def test_committed_answers_are_the_files_rows_for_one_family():
    got = committed_answers("tiny-llama", "csd-vs-sd-swi-model-size")
    assert [r["task"] for r in got] == ["synth-gsm8k", "synth-mmlu"] and all(r["family"] == "tiny-llama" for r in got)
    assert committed_answers("vicuna", "csd-vs-sd-swi-model-size") == []      # no committed run: nothing to show
    with pytest.raises(ValueError, match="unknown question"):
        committed_answers("tiny-t5", "nothing")
