"""results/evidence.json follows from the committed benchmark runs: recomputed here, it must come out unchanged."""
import json

import pytest

from csd_lib import config
from csd_lib.report.evidence import (EVIDENCE_N, FAMILIES, LESSON_QUESTIONS, LESSONS_FILE, QUESTIONS, TASKS, answer,
                                     committed_answers, evidence_json, evidence_rows, evidence_sentence, lesson_answer,
                                     lesson_evidence, lesson_records, lesson_rows, lesson_run_path)


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
from csd_lib.report.evidence import (BENCH_QUESTIONS, UNSETTLED, answer_words, answers_of,  # noqa: E402
                                     strict_run_path, vertical_records)


def _rows():
    return json.loads((config.RESULTS_DIR / "evidence.json").read_text(encoding="utf-8"))


def test_every_lesson_question_is_answered_where_it_applies():
    rows = [r for r in _rows() if r["question"] in BENCH_QUESTIONS]
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
def test_make_bench_runs_adds_only_the_missing_configuration(tmp_path):
    """On two prompts of a committed run: CSD at l = 1 and drafter + MaG are written packed beside the benchmark's
    own AR lines (AR is not run again), with AR's tokens; a second call finds them and runs nothing."""
    from csd_lib.report.evidence import make_bench_runs, vertical_run_path
    lines = [ln for ln in (config.RESULTS_DIR / "tiny-t5-synth-gsm8k.jsonl").read_text().splitlines()
             if json.loads(ln)["example"] < 2]
    (tmp_path / "tiny-t5-synth-gsm8k.jsonl").write_text("\n".join(lines) + "\n")
    paths = make_bench_runs(tmp_path, families=("tiny-t5",), tasks=("synth-gsm8k",))
    assert paths == [strict_run_path("tiny-t5", "synth-gsm8k", tmp_path).with_suffix(".jsonl.gz"),
                     vertical_run_path("tiny-t5", "synth-gsm8k", tmp_path).with_suffix(".jsonl.gz")]
    ar = {r["example"]: r for r in map(json.loads, lines) if r["method"] == "ar" and r["rep"] == 0}
    for p in paths:
        recs = read_records(p)
        assert [r for r in recs if r["method"] == "ar"] == [ar[0], ar[1]]          # the benchmark's own lines
        assert all(r["token_ids"] == ar[r["example"]]["token_ids"] for r in recs)  # lossless: AR's tokens
    assert read_records(paths[0])[-1]["plan"]["lenience"] == 1.0
    before = [p.read_bytes() for p in paths]
    make_bench_runs(tmp_path, families=("tiny-t5",), tasks=("synth-gsm8k",))
    assert [p.read_bytes() for p in paths] == before


# ---- lessons 01-04 ----------------------------------------------------------------------------------------------

def test_the_committed_lesson_evidence_follows_from_the_committed_runs():
    committed = (config.RESULTS_DIR / LESSONS_FILE).read_text(encoding="utf-8")
    rows = lesson_rows()
    assert evidence_json(rows) == committed, "results/evidence-lessons.json is stale: run python scripts/make_evidence.py"
    assert {(r["question"], r["family"], r["task"]) for r in rows} == {(q, f, t) for q in LESSON_QUESTIONS
                                                                      for f in FAMILIES for t in TASKS}
    for r in rows:   # every run holds the first 50 prompts of its task; a direction only beyond the interval
        recs = lesson_records(lesson_run_path(r["question"], r["family"], r["task"]))
        per_config = {}
        for x in recs:
            per_config.setdefault(x["config"], set()).add(x["example"])
        assert all(ex == set(range(EVIDENCE_N)) for ex in per_config.values()), (r["question"], r["family"], r["task"])
        assert r["n"] <= EVIDENCE_N and r["lo"] <= r["estimate"] <= r["hi"]
        assert (r["verdict"] == "higher") == (r["lo"] > 0) and (r["verdict"] == "lower") == (r["hi"] < 0)


def test_acceptance_decays_and_mag_beats_its_bigram_table_on_every_family():
    for f in FAMILIES:
        assert [r["verdict"] for r in lesson_evidence(f, "decay-position-10")] == ["lower", "lower"], f
        assert [r["verdict"] for r in lesson_evidence(f, "mag-vs-bigram")] == ["higher", "higher"], f
    assert lesson_evidence("vicuna", "tail-swi") == []             # no committed run: nothing to show
    with pytest.raises(ValueError, match="unknown lesson question"):
        lesson_evidence("tiny-t5", "nothing")


def _rec(config_, ex, **kw):
    return dict(config=config_, example=ex, **kw)


def test_lesson_answers_are_the_pooled_differences_of_their_runs():
    # tail: SWI (model size) of two configurations; 4 prompts, the drafter costs 0.1 of a target call
    params = {"target": 10, "base": 1}
    recs = [_rec("with tail", i, tokens=10, calls={"target": 2, "base": 4 + i}, params=params, pairs={}) for i in range(4)]
    recs += [_rec("without tail", i, tokens=10, calls={"target": 4, "base": 4}, params=params, pairs={}) for i in range(4)]
    got = lesson_answer(recs, "tail-swi")
    with_tail = 40 / (8 + 0.1 * (16 + 6))
    assert got["estimate"] == pytest.approx(with_tail - 40 / (16 + 1.6), abs=1e-6) and got["verdict"] == "higher"
    assert got["swi"]["with tail"] == pytest.approx(with_tail, abs=1e-6)
    # mag-vs-bigram: accepted tokens per call pooled over examples
    recs = [_rec("mag", i, accepted=3 + i % 2, calls=4) for i in range(6)] + [_rec("bigram", i, accepted=1, calls=4) for i in range(6)]
    got = lesson_answer(recs, "mag-vs-bigram")
    assert got["estimate"] == pytest.approx(21 / 24 - 6 / 24, abs=1e-6) and got["rates"]["mag"] == pytest.approx(21 / 24, abs=1e-6)
    # decay: P(first 10 accepted) - P(first 1 accepted), with the pooled curve
    acc = [4, 4, 3, 3, 3, 2, 2, 2, 2, 1, 1, 0]
    recs = [_rec("sd, k = 12", i, tokens=20, calls={}, params=params,
                 pairs={"target<-base": dict(reached=[5] + acc[:-1], accepted=acc)}) for i in range(5)]
    got = lesson_answer(recs, "decay-position-10")
    assert got["estimate"] == pytest.approx(1 / 5 - 4 / 5, abs=1e-6) and got["curve"][:2] == [0.8, 0.8]
    with pytest.raises(ValueError, match="unknown lesson question"):
        lesson_answer([], "csd-beats-everything")


def test_the_evidence_sentence_says_the_direction_or_that_50_prompts_do_not_settle_it():
    row = dict(family="tiny-t5", task="synth-gsm8k", estimate=0.2, lo=0.1, hi=0.3, n=50, verdict="higher")
    both = [row, dict(row, task="synth-mmlu")]
    assert evidence_sentence(both, "MaG wins", "MaG loses").startswith("On tiny-t5, on every task, MaG wins (synth-gsm8k: +0.20 [+0.10, +0.30]")
    mixed = [row, dict(row, task="synth-mmlu", estimate=0.0, lo=-0.1, hi=0.1, verdict="no difference")]
    said = evidence_sentence(mixed, "MaG wins", "MaG loses")
    assert "synth-gsm8k: MaG wins" in said and "synth-mmlu: 50 prompts do not settle it" in said
    assert "live run" in evidence_sentence([], "a", "b")
    open_ = [dict(r, estimate=0.002, lo=-0.001, hi=0.005, verdict="no difference") for r in both]
    said = evidence_sentence(open_, "MaG wins", "MaG loses")
    assert said.startswith("On tiny-t5, 50 prompts per task do not settle whether MaG wins (")   # said once, plainly
    assert "+0.002 [-0.001, +0.005]" in said                     # a bound that is not 0 never prints as 0.00
