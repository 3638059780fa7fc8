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
        assert (r["n"] == 50 or r["question"] == "lenience-vs-strict-acceptance") and r["lo"] <= r["estimate"] <= r["hi"]
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


# -- notebooks 05-08's questions ---------------------------------------------------------------------------

from csd_lib.measure.records import as_records, fastest, read_records  # noqa: E402
from csd_lib.report.evidence import (LESSON_QUESTIONS, UNSETTLED, answer_words, answers_of,  # noqa: E402
                                     strict_run_path, vertical_records)


def _rows():
    return json.loads((config.RESULTS_DIR / "evidence.json").read_text(encoding="utf-8"))


def test_every_lesson_question_is_answered_where_it_applies():
    rows = [r for r in _rows() if r["question"] in LESSON_QUESTIONS]
    have = {(r["family"], r["task"], r["question"]) for r in rows}
    runs = {(f, t) for f in ("tiny-t5", "tiny-llama", "tiny-t5-paper") for t in ("synth-gsm8k", "synth-mmlu")}
    for q in ("csd-vs-sd-walltime", "csd-walltime-vs-prediction", "sd-walltime-vs-prediction",
              "drafter-mag-vs-sd-swi-model-size"):      # every family and task
        assert {(f, t) for f, t, qq in have if qq == q} == runs, q
    t5 = {(f, t) for f, t in runs if f != "tiny-llama"}  # tiny-llama's plan has no lenient review: nothing to compare
    assert {(f, t) for f, t, q in have if q == "lenience-vs-strict-swi-model-size"} == t5
    assert {(f, t) for f, t, q in have if q == "csd-tree-vs-csd-walltime"} == {(f, t) for f, t in runs
                                                                               if f == "tiny-llama"}
    for r in rows:
        assert r["n"] >= 40 and r["lo"] <= r["estimate"] <= r["hi"]
        if r["question"].endswith("-vs-prediction"):
            assert r["predicted"] > 0 and r["cost_model"].startswith(f"costs-{r['family']}-")
    lenient = [r for r in rows if r["question"] == "lenience-vs-strict-acceptance" and r["lenient"]]
    assert lenient and {r["pair"] for r in lenient} == {"base<-small"}


def test_the_strict_runs_are_the_benchmark_s_csd_at_lenience_1_with_the_same_tokens():
    """Lenience moves work between levels but never a token: the strict run writes the benchmark's tokens."""
    for fam in ("tiny-t5", "tiny-t5-paper"):
        for task in ("synth-gsm8k", "synth-mmlu"):
            bench = fastest(as_records(read_records(config.RESULTS_DIR / f"{fam}-{task}.jsonl")))["csd"]
            strict = fastest(as_records(read_records(strict_run_path(fam, task))))["csd"]
            assert set(strict) == set(bench) and len(strict) == 50
            one = next(iter(strict.values())).plan
            assert one.lenience == 1.0 and one.k == next(iter(bench.values())).plan.k
            assert all(strict[i].token_ids == bench[i].token_ids for i in strict)


def test_the_drafter_mag_run_is_the_committed_one_else_the_evidence_run():
    recs, path = vertical_records("tiny-t5", "synth-gsm8k")
    assert path.name == "tiny-t5-synth-gsm8k-vertical.jsonl" and recs
    recs, path = vertical_records("tiny-t5-paper", "synth-mmlu")
    assert path.parent.name == "evidence" and path.name.startswith("drafter-mag-vs-sd-") and recs
    assert vertical_records("tiny-llama", "synth-gsm8k") == ([], None)


def test_answer_words_state_a_direction_only_beyond_the_interval():
    rows = answers_of("csd-vs-sd-walltime")
    assert len(rows) == 6 and answers_of("csd-vs-sd-walltime", path=config.RESULTS_DIR / "none.json") == []
    for r in rows:
        words = answer_words(r, "faster", "slower")
        assert words.startswith({"higher": "faster", "lower": "slower"}.get(r["verdict"], UNSETTLED))
        assert f"{r['estimate']:+.2f}" in words and f"{r['lo']:+.2f} to {r['hi']:+.2f}" in words
    with pytest.raises(ValueError, match="unknown question"):
        answers_of("nothing")


@pytest.mark.slow
def test_make_lesson_runs_adds_only_the_missing_configuration(tmp_path):
    """On two prompts of a committed run: CSD at l = 1 and drafter + MaG are written packed beside the benchmark's
    own AR lines (AR is not run again), with AR's tokens; a second call finds them and runs nothing."""
    from csd_lib.report.evidence import make_lesson_runs, vertical_run_path
    lines = [ln for ln in (config.RESULTS_DIR / "tiny-t5-synth-gsm8k.jsonl").read_text().splitlines()
             if json.loads(ln)["example"] < 2]
    (tmp_path / "tiny-t5-synth-gsm8k.jsonl").write_text("\n".join(lines) + "\n")
    paths = make_lesson_runs(tmp_path, families=("tiny-t5",), tasks=("synth-gsm8k",))
    assert paths == [strict_run_path("tiny-t5", "synth-gsm8k", tmp_path).with_suffix(".jsonl.gz"),
                     vertical_run_path("tiny-t5", "synth-gsm8k", tmp_path).with_suffix(".jsonl.gz")]
    ar = {r["example"]: r for r in map(json.loads, lines) if r["method"] == "ar" and r["rep"] == 0}
    for p in paths:
        recs = read_records(p)
        assert [r for r in recs if r["method"] == "ar"] == [ar[0], ar[1]]          # the benchmark's own lines
        assert all(r["token_ids"] == ar[r["example"]]["token_ids"] for r in recs)  # lossless: AR's tokens
    assert read_records(paths[0])[-1]["plan"]["lenience"] == 1.0
    before = [p.read_bytes() for p in paths]
    make_lesson_runs(tmp_path, families=("tiny-t5",), tasks=("synth-gsm8k",))
    assert [p.read_bytes() for p in paths] == before
