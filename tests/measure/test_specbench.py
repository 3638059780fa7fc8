"""Spec-Bench answer files: every value agrees with the bench's own records; Spec-Bench's questions load; bad
input is one line before any work."""
import json
import os
from functools import partial

import pytest

from csd_lib import config, random_family
from csd_lib.cli.main import main
from csd_lib.families.family import load_family
from csd_lib.families.tasks import SPEC_BENCH, load_task, read_spec_bench, spec_bench_id, spec_bench_note
from csd_lib.measure.bench import run_bench
from csd_lib.measure.records import BenchRecord, as_records, fastest, read_records
from csd_lib.measure.specbench import accept_lengths, answer, answers, write_spec_bench

QUESTIONS = [  # Spec-Bench's shape: an id, a category, one or more turns (MT-bench's have two)
    {"question_id": 81, "category": "writing", "turns": ["Write a short note about pens.", "Now shorten it."]},
    {"question_id": 7, "category": "math_reasoning", "turns": ["Tom has 5 apples and buys 3 more. How many?"]},
    {"question_id": 300, "category": "qa", "turns": ["What color is the sky?"]},
]
CHOICE_KEYS = {"index", "turns", "decoding_steps", "new_tokens", "wall_time", "accept_lengths"}


def write_questions(path, rows=QUESTIONS):
    path.write_text("".join(json.dumps(q) + "\n" for q in rows), encoding="utf-8")
    return path


def read_answers(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def check_agrees(answer_file, records, decode, family):
    """Each line of ``answer_file`` is its example's fastest record: text, tokens, walltime, tokens per target call."""
    lines = read_answers(answer_file)
    method = answer_file.stem
    kept = fastest(records)[method]
    assert len(lines) == len(kept) and [a["question_id"] for a in lines] == sorted(a["question_id"] for a in lines)
    by_id = {r.example if spec_bench_id(r.source) is None else spec_bench_id(r.source): r for r in kept.values()}
    for a in lines:
        rec = by_id[a["question_id"]]
        (c,) = a["choices"]
        assert set(c) == CHOICE_KEYS and c["index"] == 0
        assert a["category"] == rec.task and a["model_id"] == f"{family}-{method}"
        assert c["turns"] == [decode(rec.token_ids)] and c["new_tokens"] == [rec.n_tokens]
        assert c["wall_time"] == [rec.wall_time]
        # Spec-Bench's SPS counts each target call's kept tokens, bonus or correction token included, over every
        # call: the lengths sum to the new tokens and there is one per target call
        assert sum(c["accept_lengths"]) == sum(c["new_tokens"]) and all(n >= 1 for n in c["accept_lengths"])
        if "calls" in rec.stats:  # the engine's methods count their target calls
            assert len(c["accept_lengths"]) == rec.stats["calls"]["target"] == c["decoding_steps"][0]
    return lines


def test_cli_bench_writes_answer_files_that_agree_with_its_records(tmp_path, capsys):
    out, d = tmp_path / "r.jsonl", tmp_path / "sb"
    argv = ["bench", "--family", "tiny-t5", "--n", "2", "--methods", "ar,sd,csd", "--max-new-tokens", "10",
            "--costs", "none", "--threads", "1", "--out", str(out), "--spec-bench-out", str(d)]
    assert main(argv) == 0
    fam = load_family("tiny-t5")
    decode = partial(fam.tokenizer.decode, skip_special_tokens=True)
    records = as_records(read_records(out))
    assert sorted(p.name for p in d.iterdir()) == ["ar.jsonl", "csd.jsonl", "sd.jsonl"]
    texts = {}
    for path in d.iterdir():
        lines = check_agrees(path, records, decode, "tiny-t5")
        assert [a["question_id"] for a in lines] == [0, 1] and {a["category"] for a in lines} == {"synth-gsm8k"}
        kept = [n for a in lines for n in a["choices"][0]["accept_lengths"]]
        assert set(kept) == {1} if path.stem == "ar" else max(kept) > 1  # a draft was kept somewhere
        texts[path.stem] = [a["choices"][0]["turns"] for a in lines]
    assert texts["sd"] == texts["csd"] == texts["ar"]  # greedy is lossless: what Spec-Bench's equal.py compares
    before = {p.name: read_answers(p) for p in d.iterdir()}
    assert main(argv) == 0  # resumed: nothing to run, the files are written again from the same records
    again = {p.name: read_answers(p) for p in d.iterdir()}
    strip = lambda files: {k: [{**a, "tstamp": 0} for a in v] for k, v in files.items()}  # noqa: E731
    assert strip(again) == strip(before)
    assert not [p for p in d.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_fastest_repeat_is_the_line_and_lengths_are_the_commit_runs(tmp_path):
    fam = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    exs = [type("Ex", (), {"prompt": p, "task": "toy", "source": "test"})() for p in ("w5 w6 w7 w8 w5 w6", "w9 w10")]
    recs = run_bench(fam, exs, ["sd", "csd", "hf-assisted"], tmp_path / "r.jsonl", 12, warmup=0, progress=False,
                     repeats=2)
    decode = lambda ids: " ".join(map(str, ids))  # noqa: E731
    paths = write_spec_bench(recs, tmp_path / "sb", decode, fam.name)
    assert sorted(p.stem for p in paths) == ["ar", "csd", "hf-assisted", "sd"]
    for p in paths:
        for a in check_agrees(p, as_records(recs), decode, fam.name):
            reps = [r for r in as_records(recs) if r.method == p.stem and r.example == a["question_id"]]
            assert len(reps) == 2 and a["choices"][0]["wall_time"] == [min(r.wall_time for r in reps)]
            assert a["answer_id"] == f"{p.stem}-{a['question_id']}-r{min(reps, key=lambda r: r.wall_time).rep}"


def test_lengths_are_never_guessed(tmp_path):
    fam = random_family("t5", vocab_size=40, n_drafters=2, seed=1)
    exs = [type("Ex", (), {"prompt": "w5 w6 w7 w8 w5 w6", "task": "toy", "source": "test"})()]
    (rec,) = [r for r in as_records(run_bench(fam, exs, ["mag"], tmp_path / "r.jsonl", 12, warmup=0, progress=False))
              if r.method == "mag"]
    runs = accept_lengths(rec)
    assert len(runs) == rec.stats["calls"]["target"] and sum(runs) == rec.n_tokens
    coarse = BenchRecord.from_dict({**rec.to_dict(), "commit_times": [0.0] * rec.n_tokens})  # one clock tick
    missing = BenchRecord.from_dict({k: v for k, v in rec.to_dict().items() if k != "commit_times"})
    assert accept_lengths(coarse) == [] and accept_lengths(missing) == []
    line = answer(missing, "text", "m", 1.0)
    assert line["choices"][0]["accept_lengths"] == [] and line["choices"][0]["new_tokens"] == [rec.n_tokens]
    assert answers([rec.to_dict(), {"example": 0, "method": "sd", "error": "boom"}], str, "f").keys() == {"mag"}


def test_questions_load_first_turns_with_their_categories(tmp_path, monkeypatch):
    path = write_questions(tmp_path / "question.jsonl")
    exs = load_task(SPEC_BENCH, questions=path)
    assert [e.prompt for e in exs] == [q["turns"][0] for q in QUESTIONS]
    assert [e.task for e in exs] == [q["category"] for q in QUESTIONS]
    assert [spec_bench_id(e.source) for e in exs] == [81, 7, 300] and spec_bench_id("synthetic:test:seed0:3") is None
    assert len(load_task(SPEC_BENCH, n=2, questions=path)) == 2
    with pytest.raises(ValueError, match=f"^{SPEC_BENCH}/test holds 3 examples, 4 were asked for"):
        load_task(SPEC_BENCH, n=4, questions=path)
    (tmp_path / "spec_bench").mkdir()
    write_questions(tmp_path / "spec_bench" / "question.jsonl", QUESTIONS[1:])
    monkeypatch.setattr(config, "DATA_DIR", str(tmp_path))  # CSD_DATA_DIR: a Spec-Bench checkout's data/
    assert [e.prompt for e in load_task(SPEC_BENCH)] == [q["turns"][0] for q in QUESTIONS[1:]]
    assert spec_bench_note("tiny-t5") and "synthetic" in spec_bench_note("tiny-llama")
    assert spec_bench_note("flan-t5") is None


BAD_QUESTIONS = [
    ('{"question_id": 1, "category": "qa", "turns": ["a"]}\n{"question_id": 2, "category": "qa", "turns": [\n',
     r":2 is not JSON \("),
    ('{"question_id": 1, "category": "qa"}\n', r":1 has no 'turns' list whose first turn is text"),
    ('{"question_id": 1, "category": "qa", "turns": []}\n', r":1 has no 'turns' list"),
    ('{"question_id": "x1", "category": "qa", "turns": ["a"]}\n', r":1 has question_id 'x1', not an integer"),
    ('{"question_id": 1, "turns": ["a"]}\n', r":1 has no 'category' text"),
    ('{"question_id": 1, "category": "qa", "turns": ["a"]}\n{"question_id": 1, "category": "qa", "turns": ["b"]}\n',
     r":2 repeats question_id 1 of line 1"),
    ('[1, 2]\n', r":1 is not a JSON object"),
    ("\n", r"holds no questions"),
]


@pytest.mark.parametrize("text,says", BAD_QUESTIONS)
def test_bad_question_files_are_one_line(tmp_path, text, says):
    path = tmp_path / "question.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=says):
        read_spec_bench(path)


def test_where_the_questions_are_not(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "DATA_DIR", None)
    with pytest.raises(ValueError, match="pass --spec-bench-questions PATH, or set CSD_DATA_DIR"):
        load_task(SPEC_BENCH)
    with pytest.raises(ValueError, match=f"^Spec-Bench questions file {tmp_path} is a directory, not a file"):
        load_task(SPEC_BENCH, questions=tmp_path)
    with pytest.raises(ValueError, match="has one split, test"):
        load_task(SPEC_BENCH, "val", questions=write_questions(tmp_path / "q.jsonl"))


def cli_error(capsys, *argv):
    """(exit status, the one stderr line) of a bench that must stop before any model loads."""
    code = main(["bench", "--family", "tiny-t5", "--n", "1", "--methods", "ar", "--costs", "none", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return code, err[0]


def test_cli_refuses_bad_spec_bench_arguments_before_any_work(tmp_path, capsys, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a family was loaded before the arguments were checked")
    monkeypatch.setattr("csd_lib.cli.args.load_family", refuse)
    out = tmp_path / "r.jsonl"
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    cases = [
        (["--out", str(out), "--spec-bench-out", str(afile)], f"--spec-bench-out {afile} is a file, not a folder"),
        (["--out", str(out), "--spec-bench-out", str(afile / "sub")], f"{afile} is a file, not a folder"),
        (["--out", str(tmp_path / "sb" / "ar.jsonl"), "--spec-bench-out", str(tmp_path / "sb")],
         "is the --out file this command reads"),
        (["--out", str(out), "--spec-bench-questions", str(afile)], "--spec-bench-questions is read by --task spec-bench"),
        (["--out", str(out), "--task", SPEC_BENCH, "--spec-bench-questions", str(tmp_path)],
         "Spec-Bench questions file"),
        (["--out", str(out), "--task", SPEC_BENCH, "--spec-bench-questions", str(afile)], f"{afile}:1 is not JSON"),
    ]
    for argv, says in cases:
        code, line = cli_error(capsys, *argv)
        assert code == 2 and says in line, line
    assert not out.exists() and not (tmp_path / "sb").exists()


def test_cli_spec_bench_task_keeps_ids_and_categories(tmp_path, capsys):
    q = write_questions(tmp_path / "question.jsonl")
    out, d = tmp_path / "r.jsonl", tmp_path / "sb"
    assert main(["bench", "--family", "tiny-t5", "--task", SPEC_BENCH, "--spec-bench-questions", str(q), "--n", "2",
                 "--methods", "ar", "--max-new-tokens", "4", "--costs", "none", "--threads", "1", "--out", str(out),
                 "--spec-bench-out", str(d)]) == 0
    assert "trained on the synthetic tasks only" in capsys.readouterr().err
    fam = load_family("tiny-t5")
    lines = check_agrees(d / "ar.jsonl", as_records(read_records(out)), partial(fam.tokenizer.decode,
                         skip_special_tokens=True), "tiny-t5")
    assert [(a["question_id"], a["category"]) for a in lines] == [(7, "math_reasoning"), (81, "writing")]
    assert os.listdir(d) == ["ar.jsonl"]
