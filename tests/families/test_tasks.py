"""Synthetic tasks and dataset loaders (no network: the hub is never contacted here)."""
import json
import re

import pytest

from csd_lib import config
from csd_lib.families import tasks
from csd_lib.engine.prompts import GSM8K_PROMPT, MMLU_PROMPT
from csd_lib.families.tasks import Example


def test_prompt_formats_are_the_papers():
    assert GSM8K_PROMPT == "Reason the math question below step by step. Question: {question}.\n Answer: "
    assert MMLU_PROMPT == ("Question: {q}\n(A) {a} (B) {b} (C) {c} (D) {d}\n Answer: \n"
                           " Let's think step by step. ")
    g = tasks.generate_synthetic("synth-gsm8k", "val", 5)
    assert all(re.fullmatch(r"Reason the math question below step by step\. Question: .+\?\.\n Answer: ",
                            e.prompt, re.S) for e in g)
    m = tasks.generate_synthetic("synth-mmlu", "val", 5)
    assert all(re.fullmatch(r"Question: .+\n\(A\) .+ \(B\) .+ \(C\) .+ \(D\) .+\n Answer: \n"
                            r" Let's think step by step\. ", e.prompt) for e in m)


@pytest.mark.parametrize("task", ["synth-gsm8k", "synth-mmlu"])
def test_deterministic_given_seed(task):
    a = tasks.generate_synthetic(task, "train", 30, seed=3)
    b = tasks.generate_synthetic(task, "train", 30, seed=3)
    c = tasks.generate_synthetic(task, "train", 30, seed=4)
    assert a == b
    assert [e.prompt for e in a] != [e.prompt for e in c]


@pytest.mark.parametrize("task", ["synth-gsm8k", "synth-mmlu"])
def test_splits_disjoint(task):
    test = {e.prompt for e in tasks.load_task(task, "test")}
    val = {e.prompt for e in tasks.load_task(task, "val", 200)}
    train = {e.prompt for e in tasks.load_task(task, "train", 2000)}
    assert len(test) == tasks.N_BUNDLED
    assert not (test & val) and not (test & train) and not (val & train)


@pytest.mark.parametrize("task", ["synth-gsm8k", "synth-mmlu"])
def test_references_are_consistent(task):
    for e in tasks.load_task(task, "test", 100):
        assert tasks.is_correct(e.reference, e), e
        if task == "synth-gsm8k":
            assert e.reference.endswith(f"The answer is {e.answer}.")
            assert 0 <= int(e.answer) < 200
            question = e.prompt.split("Question: ")[1]
            nums_q = set(re.findall(r"\d+", question))
            assert nums_q <= set(re.findall(r"\d+", e.reference))  # question numbers reappear
        else:
            assert e.reference.endswith(f"The answer is ({e.answer}).")
            assert e.answer in "ABCD"


def test_bundled_file_matches_generator(tmp_path):
    paths = tasks._write_bundled(tmp_path, n=tasks.N_BUNDLED)
    for path in paths:
        shipped = config.TASKS_DIR / path.name
        assert shipped.read_text() == path.read_text(), f"regenerate {shipped} with tasks._write_bundled()"


def test_answer_extraction():
    assert tasks.answer_of("so 3 + 4 = 7. The answer is 7.", "synth-gsm8k") == "7"
    assert tasks.answer_of("The answer is 1,234.", "gsm8k") == "1234"
    assert tasks.answer_of("The answer is 3. Then The answer is 5.", "gsm8k") == "5"
    assert tasks.answer_of("The answer is $18.00.", "gsm8k") == "18"
    assert tasks.answer_of("no answer here", "gsm8k") is None
    assert tasks.answer_of("So the answer is Paris. The answer is (C).", "synth-mmlu") == "C"
    assert tasks.answer_of("The answer is Paris.", "mmlu") is None
    ex = Example("p", "r", "B", "mmlu", "s")
    assert tasks.is_correct("... The answer is (B).", ex)
    assert not tasks.is_correct("... The answer is (A).", ex)
    with pytest.raises(ValueError, match="valid names"):
        tasks.answer_of("x", "squad")


def test_bad_names_raise():
    with pytest.raises(ValueError, match="synth-gsm8k"):
        tasks.load_task("gsm9k")
    with pytest.raises(ValueError, match="split"):
        tasks.load_task("synth-gsm8k", split="dev")


def _fake_data_dir(root):
    (root / "gsm8k").mkdir(parents=True)
    rows = [{"question": "Ann has 2 pens and buys 3 more. How many pens?",
             "answer": "She has 2 + 3 = <<2+3=5>>5 pens.\n#### 5"},
            {"question": "Bob earns 1,000 twice. Total?", "answer": "1000*2=<<1000*2=2000>>2000\n#### 2,000"}]
    with open(root / "gsm8k" / "test.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    (root / "mmlu" / "dev").mkdir(parents=True)
    (root / "mmlu" / "dev" / "x_dev.csv").write_text('"What, exactly?",None,b,c,d,A\nQ2,1,2,3,4,D\n')


def test_local_source_first(tmp_path, monkeypatch, capsys):
    _fake_data_dir(tmp_path)
    monkeypatch.setattr(config, "data_dir", lambda: tmp_path)
    monkeypatch.setattr(tasks, "_from_hub", lambda *a: pytest.fail("hub contacted"))
    g = tasks.load_task("gsm8k")
    out, err = capsys.readouterr()
    assert "local" in err and out == ""  # notes go to stderr: stdout is for results
    assert g[0].prompt == GSM8K_PROMPT.format(question=rows_q(tmp_path))
    assert g[0].reference == "She has 2 + 3 = 5 pens.\nThe answer is 5." and g[0].answer == "5"
    assert g[1].answer == "2000" and tasks.is_correct(g[1].reference, g[1])
    m = tasks.load_task("mmlu", n=1)
    assert len(m) == 1 and m[0].answer == "A"
    assert m[0].prompt == MMLU_PROMPT.format(q="What, exactly?", a="None", b="b", c="c", d="d")


def rows_q(root):
    return json.loads((root / "gsm8k" / "test.jsonl").read_text().splitlines()[0])["question"]


def test_hub_then_bundled_fallback(monkeypatch, capsys):
    monkeypatch.setattr(config, "data_dir", lambda: None)
    calls = []
    monkeypatch.setattr(tasks, "_from_hub", lambda name, split: calls.append(name))  # returns None
    monkeypatch.setattr(config, "HF_OFFLINE", False)
    g = tasks.load_task("gsm8k", n=10)
    assert calls == ["gsm8k"]
    assert len(g) == 10 and g[0].task == "synth-gsm8k"
    out, err = capsys.readouterr()
    assert "bundled synth-gsm8k" in err and out == ""
    monkeypatch.setattr(config, "HF_OFFLINE", True)
    m = tasks.load_task("mmlu", n=5)
    assert calls == ["gsm8k"] and m[0].task == "synth-mmlu"


def test_hub_connection_error_is_caught(monkeypatch, capsys):
    import datasets

    def boom(*a, **k):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", boom)
    assert tasks._from_hub("gsm8k", "test") is None
    out, err = capsys.readouterr()
    assert "could not serve" in err and out == ""


def test_corpus_interleaves_tasks():
    c = tasks.corpus("train", 10)
    assert len(c) == 20
    assert [e.task for e in c[:4]] == ["synth-gsm8k", "synth-mmlu"] * 2


def test_asking_more_than_a_split_holds_says_how_many_it_holds(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"synth-gsm8k/test holds 200 examples, 100000 were asked for; "
                                         r"pass n <= 200"):
        tasks.load_task("synth-gsm8k", "test", 100000)
    assert len(tasks.load_task("synth-gsm8k", "test", 100000, at_most=True)) == 200
    assert len(tasks.load_task("synth-gsm8k", "test", 200)) == 200
    assert len(tasks.load_task("synth-mmlu", "val", 300)) == 300      # generated splits have no end
    _fake_data_dir(tmp_path)
    monkeypatch.setattr(config, "data_dir", lambda: tmp_path)
    held = len(tasks.load_task("gsm8k"))
    with pytest.raises(ValueError, match=f"gsm8k/test holds {held} examples"):
        tasks.load_task("gsm8k", "test", held + 1)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        tasks.load_task("synth-gsm8k", "test", 0)
