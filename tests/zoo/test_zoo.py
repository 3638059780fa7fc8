"""Tokenizer, presets, resumable training and the shipped model directories."""
import json

import numpy as np
import pytest
import torch

from csd_lib import config
from csd_lib.families import tasks
from csd_lib.zoo import train as T
from csd_lib.zoo.recipes import FAMILY_RECIPES, PRESETS, family_models, make_model

TINY = dict(arch="llama", d_model=32, num_layers=1, num_heads=2, d_ff=64, batch=4, lr=1e-3)
SHIPPED_TOK = config.MODELS_DIR / "tiny-t5-small"


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    """A tokenizer and corpus trained on a few hundred synthetic examples."""
    torch.set_num_threads(1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(config, "data_dir", lambda: None)  # synthetic text only: fast and hermetic
        return T.prepare(tmp_path_factory.mktemp("runs"), n_per_task=150, vocab_size=600)


def _texts():
    return [e.prompt for e in tasks.load_task("synth-gsm8k", "test", 5)] + \
        [e.prompt + e.reference for e in tasks.load_task("synth-mmlu", "test", 5)] + \
        ["  two  spaces\n\nnewlines\tand tab, ümlaut 12+3=15."]


def test_tokenizer_round_trips(small_data):
    tok, _ = small_data
    assert tok.pad_token_id == 0 and tok.eos_token_id == 1 and tok.unk_token_id == 2
    for text in _texts():
        ids = tok.encode(text, add_special_tokens=False)
        assert tok.decode(ids) == text
        assert tok.encode(text) == ids  # the tokenizer adds no special tokens


def test_batches_mask_the_prompt(small_data):
    _, data = small_data
    P, R = data["train"]["prompt"][:3], data["train"]["reference"][:3]
    b = T.make_batch("llama", P, R)
    for i in range(3):
        lab = b["labels"][i][b["labels"][i] != -100].tolist()
        assert lab == R[i] + [1]
        assert b["input_ids"][i, :len(P[i])].tolist() == P[i]
    b = T.make_batch("t5", P, R)
    assert b["labels"][0][b["labels"][0] != -100].tolist() == R[0] + [1]


@pytest.mark.parametrize("arch", ["llama", "t5"])
def test_resume_matches_uninterrupted(small_data, tmp_path, arch):
    _, data = small_data
    kw = dict(overrides={**TINY, "arch": arch}, batch=4, lr=1e-3, device="cpu", progress=False, bf16=False)
    m_full, s_full = T.train_model("toy", data, tmp_path / "full", steps=5, **kw)
    # interrupted after 3 steps (stop_at in the past stops after one step each call)
    T.train_model("toy", data, tmp_path / "cut", steps=5, stop_at=0.0, **kw)
    T.train_model("toy", data, tmp_path / "cut", steps=5, stop_at=0.0, **kw)
    m_cut, s_cut = T.train_model("toy", data, tmp_path / "cut", steps=5, **kw)
    assert s_cut["step"] == s_full["step"] == 5
    for (k, a), b in zip(m_full.state_dict().items(), m_cut.state_dict().values()):
        torch.testing.assert_close(a, b, msg=k)
    _, again = T.train_model("toy", data, tmp_path / "cut", steps=5, **kw)
    assert again["done"] and again["step"] == 5
    assert (again["batch"], again["peak_lr"]) == (4, 1e-3)  # the recipe the run used, kept in the checkpoint


def test_export_loads_offline_as_fp32(small_data, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok, data = small_data
    model = make_model("toy", **TINY)
    T.export_model(model, tok, tmp_path / "m", {"done": True})
    m2 = AutoModelForCausalLM.from_pretrained(str(tmp_path / "m"))
    assert m2.dtype == torch.float32
    assert AutoTokenizer.from_pretrained(str(tmp_path / "m")).encode("ab") == tok.encode("ab")


def test_presets_and_families():
    for fam, spec in FAMILY_RECIPES.items():
        names = family_models(fam)
        assert names[0] == spec["target"] and all(n in PRESETS for n in names)
    params = {n: sum(p.numel() for p in {id(p): p for p in make_model(n).parameters()}.values())
              for n in family_models("tiny-t5")}
    ratio = params["tiny-t5-target"] / params["tiny-t5-small"], params["tiny-t5-base"] / params["tiny-t5-small"]
    assert 35 < ratio[0] < 70 and 3 < ratio[1] < 6  # close to 50:4:1
    with pytest.raises(ValueError):
        family_models("tiny-gpt")


def _shipped(family):
    path = config.MODELS_DIR / f"{family}.json"
    if not path.is_file():
        pytest.skip(f"{path} not shipped yet")
    spec = json.loads(path.read_text())
    names = [spec["target"], *spec["drafters"]]
    if not all((config.MODELS_DIR / n / "config.json").is_file() for n in names):
        pytest.skip(f"{family} models not exported yet")
    return spec, names


@pytest.mark.parametrize("family", sorted(FAMILY_RECIPES))
def test_shipped_models_load_and_generate(family):
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer
    spec, names = _shipped(family)
    cls = AutoModelForSeq2SeqLM if spec["arch"] == "t5" else AutoModelForCausalLM
    ex = tasks.load_task("synth-mmlu", "test", 1)[0]
    for name in names:
        path = config.MODELS_DIR / name
        tok = AutoTokenizer.from_pretrained(str(path))
        assert tok.decode(tok.encode(ex.prompt)) == ex.prompt
        model = cls.from_pretrained(str(path), dtype=torch.float32).eval()
        assert model.generation_config.eos_token_id == tok.eos_token_id == 1
        ids = tok(ex.prompt, return_tensors="pt").input_ids
        out = model.generate(ids, max_new_tokens=4, do_sample=False)
        assert out.shape[1] >= 2
    table = np.load(config.MODELS_DIR / f"{family}-bigram.npy")
    assert table.dtype == np.int32 and len(table) == model.config.vocab_size


def test_data_dir_under_100mb():
    root = config.REPO_ROOT / "data"
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert total <= 100 * 2 ** 20, f"data/ is {total / 2**20:.1f} MB"


def test_card_mag_section_comes_from_benchmark_records(tmp_path):
    from csd_lib.zoo import card
    rec = lambda m, ex, prov: {"method": m, "example": ex, "token_ids": [5] * sum(prov.values()),
                               "provenance": prov, "stats": {"n_tokens": sum(prov.values()), "wall_time": 1.0}}
    lines = [rec("ar", 0, {"target-bonus": 10}), rec("mag", 0, {"mag-match": 3, "target-bonus": 7}),
             rec("csd", 0, {"mag-match": 1, "mag-bigram": 3, "tiny-t5-base": 2, "target-bonus": 4})]
    (tmp_path / "tiny-t5-synth-gsm8k.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    rows = card._mag_rows("tiny-t5", results_dir=tmp_path)
    assert [r["task"] for r in rows] == ["synth-gsm8k"]  # synth-mmlu has no records
    assert "| synth-gsm8k | 30.0% |" in rows[0]["row"] and "40.0% (10.0% / 30.0%)" in rows[0]["row"]
    assert rows[0]["match_fraction"] == pytest.approx(0.25)


def test_recipe_switches_on_an_accelerator():
    """The CPU keeps each preset's own keys; an accelerator takes the preset's ``accel`` keys."""
    from csd_lib.zoo.recipes import recipe
    for name, p in PRESETS.items():
        cpu = recipe(name, "cpu")
        assert (cpu["batch"], cpu["lr"]) == (p["batch"], p["lr"])
        gpu = recipe(name, "cuda")
        assert all(gpu[k] == v for k, v in p.get("accel", {}).items())
        assert all(gpu[k] == cpu[k] for k in cpu if k not in p.get("accel", {}))
    assert recipe("tiny-t5-target", "cuda")["batch"] > recipe("tiny-t5-target", "cpu")["batch"]
