"""Details of the real-model path: prompt encoding, the Vicuna template, bigram sources,
previous-work costs per preset, progress bars."""
import json
import sys

import pytest
import torch

from csd_lib import config, generate
from csd_lib.families import family as families, tasks
from csd_lib.measure.curves import greedy_continuations
from csd_lib.engine.cascade import encode_prompt
from csd_lib.families.family import Family, real_bigram
from csd_lib.families.toy import random_family, toy_tokenizer
from csd_lib.engine.mag import MaG
from csd_lib.engine.models import LM
from csd_lib.families.paper_costs import PREVIOUS_WORK, previous_work_costs
from csd_lib.engine import prompts


@pytest.fixture
def offline_no_data(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "HF_OFFLINE", True)
    monkeypatch.setattr(config, "DATA_DIR", None)
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))


# -- prompts -------------------------------------------------------------------------------

def test_vicuna_template_rewords_task_prompts_as_the_official_code():
    g = prompts.GSM8K_PROMPT.format(question="Tom has 3 pens. How many")
    assert prompts.format_prompt(g, "vicuna-v1.1") == (
        "A chat between a curious user and an artificial intelligence assistant. The assistant gives "
        "helpful, detailed, and polite answers to the user's questions. USER: Reason the math question "
        "step by step. Question: Tom has 3 pens. How many\n Answer:  ASSISTANT:")
    m = prompts.MMLU_PROMPT.format(q="Q?", a="1", b="2", c="3", d="4")
    assert prompts.format_prompt(m, "vicuna-v1.1").endswith(
        " USER: Answer the question step by step: Question: Q?\n(A) 1 (B) 2 (C) 3 (D) 4\n Answer: \n ASSISTANT:")
    assert prompts.format_prompt("hello", "vicuna-v1.1") == prompts.VICUNA_SYSTEM + " USER: hello ASSISTANT:"
    assert prompts.format_prompt(g) == g
    with pytest.raises(ValueError, match="prompt style"):
        prompts.format_prompt("x", "chatml")


@pytest.mark.parametrize("arch", ["t5", "llama"])
def test_generate_and_acceptance_tokenize_prompts_alike(arch):
    fam = random_family(arch, vocab_size=48, n_drafters=1, dtype=torch.float32)
    prompt = "w5 w6 w7"
    ids = encode_prompt(fam, prompt)
    cont = greedy_continuations(fam.target.model, fam.tokenizer, [prompt], max_new_tokens=4)[0]
    assert cont.prompt_ids == ids
    if arch == "t5":
        assert ids[-1] == fam.tokenizer.eos_token_id     # T5's </s> is kept
    fam.prompt_style = "vicuna-v1.1"
    wrapped = encode_prompt(fam, prompt)
    assert wrapped == fam.tokenizer(prompts.format_prompt(prompt, "vicuna-v1.1")).input_ids != ids
    cont = greedy_continuations(fam.target.model, fam.tokenizer, [prompt], 4, prompt_style="vicuna-v1.1")[0]
    assert cont.prompt_ids == wrapped


# -- bigram source --------------------------------------------------------------------------

def test_bigram_corpus_offline_is_the_synthetic_train_split(offline_no_data):
    texts, source = tasks.bigram_corpus("gsm8k", n=50)
    assert source == "synth-gsm8k-train" and len(texts) == 50
    test_prompts = {ex.prompt for ex in tasks.load_task("synth-gsm8k", "test")}
    train = tasks.load_task("gsm8k", "train", n=50)
    assert all(":train:" in ex.source for ex in train)
    assert not test_prompts & {ex.prompt for ex in train}


def test_bigram_corpus_from_local_train_data(offline_no_data, monkeypatch, tmp_path):
    d = tmp_path / "data" / "gsm8k"
    d.mkdir(parents=True)
    rows = [{"question": f"q{i}", "answer": f"a {i}\n#### {i}"} for i in range(5)]
    (d / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "test.jsonl").write_text(json.dumps({"question": "TEST", "answer": "x\n#### 0"}) + "\n")
    monkeypatch.setattr(config, "DATA_DIR", str(tmp_path / "data"))
    texts, source = tasks.bigram_corpus("gsm8k")
    assert source == "gsm8k-train" and len(texts) == 5 and not any("TEST" in t for t in texts)


def test_bigram_cache_name_follows_the_source(offline_no_data, monkeypatch, tmp_path):
    tok = toy_tokenizer(48, True)
    real_bigram("fam/x", tok, 48)
    (tmp_path / "data" / "gsm8k").mkdir(parents=True)
    (tmp_path / "data" / "gsm8k" / "train.jsonl").write_text(json.dumps({"question": "q", "answer": "a\n#### 1"}) + "\n")
    monkeypatch.setattr(config, "DATA_DIR", str(tmp_path / "data"))  # real data may come now: the synthetic table is not enough
    monkeypatch.setattr(families, "bigram_corpus", lambda task: (["w5 w6 w7 w5 w8"] * 3, "gsm8k-train"))
    table = real_bigram("fam/x", tok, 48)
    names = sorted(p.name for p in (tmp_path / "cache").glob("*.npy"))
    assert len(names) == 2, names
    assert names[0].startswith("fam--x-bigram-gsm8k-train-48-") and names[1].startswith("fam--x-bigram-synth-gsm8k-train-48-")
    assert table[5] == 6 and table[6] == 7                 # built from the new source, not the cached one


def test_a_cached_bigram_table_is_found_by_name_before_any_corpus_loads(offline_no_data, monkeypatch, tmp_path, caplog):
    tok = toy_tokenizer(48, True)
    first = real_bigram("fam/x", tok, 48)
    with monkeypatch.context() as m, caplog.at_level("INFO"):
        m.setattr(tasks, "load_task", lambda *a, **k: pytest.fail("a corpus was loaded although the table is cached"))
        caplog.clear()
        assert (real_bigram("fam/x", tok, 48) == first).all()
    assert not [r for r in caplog.records if "not available" in r.getMessage()]
    other = toy_tokenizer(48, True)
    other.add_tokens(["zzz"])  # another tokenizer: another name, so the table is built again
    real_bigram("fam/x", other, 48)
    assert len(list((tmp_path / "cache").glob("fam--x-bigram-synth-gsm8k-train-48-*.npy"))) == 2


def test_missing_datasets_is_said_plainly(monkeypatch, capsys):
    monkeypatch.setattr(config, "HF_OFFLINE", False)
    monkeypatch.setattr(config, "DATA_DIR", None)
    monkeypatch.setitem(sys.modules, "datasets", None)     # import datasets -> ImportError
    exs = tasks.load_task("gsm8k", "train", n=5)
    out = capsys.readouterr().err  # a note: stderr, never stdout
    assert "`datasets` package is not installed" in out and "pip install datasets" in out
    assert exs[0].task == "synth-gsm8k" and ":train:" in exs[0].source


# -- previous-work costs ------------------------------------------------------------------

def test_previous_work_costs_per_preset():
    assert set(PREVIOUS_WORK) >= {"flan-t5", "flan-t5-colab", "vicuna", "tiny-t5", "tiny-llama"}
    assert all(t.source and t.costs["target"] == 1.0 and t.costs["mag"] == 0.0 for t in PREVIOUS_WORK.values())
    colab = previous_work_costs("flan-t5-colab").costs
    assert colab["base"] == pytest.approx(0.04 / 0.11) and colab["small"] == pytest.approx(0.02 / 0.11)
    assert previous_work_costs("vicuna").costs["small"] == pytest.approx(68 / 7000)
    ratio = previous_work_costs("custom:x", {"target": 100, "small": 5})
    assert ratio.costs == {"target": 1.0, "small": 0.05, "mag": 0.0}
    with pytest.raises(ValueError, match="parameter counts"):
        previous_work_costs("custom:x")


def test_generation_prices_calls_with_its_presets_table():
    fam = random_family("t5", vocab_size=48, n_drafters=2, dtype=torch.float32)
    colab = Family("flan-t5-colab", fam.tokenizer, LM("target", fam.target.model), fam.drafters,
                   MaG(fam.mag.bigram), fam.default_k, 2.0)
    g = generate(colab, "w5 w6 w7 w5 w6", "csd", max_new_tokens=16)
    costs = PREVIOUS_WORK["flan-t5-colab"].costs
    assert g.stats.previous_work_costs == costs
    spent = sum(n * costs.get(m, 0.0) for m, n in g.stats.calls.items())
    assert g.stats.swi_previous_work == pytest.approx(g.stats.n_tokens / spent)
    assert g.to_dict()["stats"]["previous_work_costs"] == costs


# -- progress bars ---------------------------------------------------------------------------

def test_only_weight_loading_bars_are_hidden():
    from huggingface_hub.utils import are_progress_bars_disabled
    from transformers.utils import logging as hf_logging

    from csd_lib.families.hub import hide_weight_loading_bars
    hf_logging.enable_progress_bar()
    try:
        hide_weight_loading_bars()
        assert isinstance(hf_logging.tqdm(range(3), desc="Loading weights"), hf_logging.EmptyTqdm)
        assert not are_progress_bars_disabled()              # hub download bars stay on
    finally:
        hf_logging.enable_progress_bar()
