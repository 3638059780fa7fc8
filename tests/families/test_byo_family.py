"""Bring your own models: load_family(target=..., drafters=[...]) on local directories."""
import json

import pytest
import torch

from csd_lib import config, generate, load_family
from csd_lib.families.presets import DEFAULT_LENIENCE
from csd_lib.families.family import default_k, roles
from csd_lib.families.toy import toy_model, toy_tokenizer


@pytest.fixture(autouse=True)
def offline_no_data(monkeypatch, tmp_path):
    """No real data and no network: the bigram comes from the synthetic train split."""
    monkeypatch.setattr(config, "HF_OFFLINE", True)
    monkeypatch.setattr(config, "DATA_DIR", None)
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))


def save(root, arch, size, seed, tok=None, vocab=48):
    d = root / f"{arch}-{size}-{seed}"
    toy_model(arch, vocab, size, seed, torch.float32).save_pretrained(d)
    (tok or toy_tokenizer(vocab, arch == "t5")).save_pretrained(d)
    return str(d)


@pytest.mark.parametrize("arch,sizes", [("t5", ["target", "base", "small"]), ("llama", ["target", "small"])])
def test_byo_family_is_lossless_with_default_k(arch, sizes, tmp_path):
    paths = [save(tmp_path, arch, s, i) for i, s in enumerate(sizes)]
    fam = load_family(target=paths[0], drafters=paths[1:])
    n = len(sizes) - 1
    assert [d.name for d in fam.drafters] == roles(n) and [d.model_id for d in fam.drafters] == paths[1:]
    assert fam.default_k == default_k(n) and fam.default_lenience == DEFAULT_LENIENCE
    assert fam.name == f"custom-{arch}-target-0" and fam.policy.device.type == "cpu"
    assert "parameter-count ratios" in fam.previous_work.source
    prompt = "w5 w6 w7 w5 w6 w9"
    ar = generate(fam, prompt, "ar", max_new_tokens=16)
    for method in ("sd", "mag", "csd"):
        assert generate(fam, prompt, method, max_new_tokens=16).token_ids == ar.token_ids, method
    cached = list((tmp_path / "cache").glob("*-bigram-synth-gsm8k-train-48-*.npy"))
    assert len(cached) == 1 and len(fam.mag.bigram) == 48


def test_byo_overrides_and_single_model(tmp_path):
    t = save(tmp_path, "llama", "target", 0)
    d = save(tmp_path, "llama", "small", 1)
    fam = load_family(target=t, drafters=d, k=[[4, 6], [0, 6]], lenience=2)
    assert fam.default_k == [[4, 6], [0, 6]] and fam.default_lenience == 2.0 and len(fam.drafters) == 1
    alone = load_family(target=t)
    assert alone.drafters == [] and alone.default_k == [[10]]
    with pytest.raises(ValueError, match="2x2"):
        load_family(target=t, drafters=[d], k=[[1, 2, 3]])
    with pytest.raises(ValueError, match="lenience"):
        load_family(target=t, drafters=[d], lenience=0.5)


def test_tokenizer_mismatch_names_both_models(tmp_path):
    t = save(tmp_path, "t5", "target", 0)
    other = toy_tokenizer(48, True)
    other.add_tokens(["extra"])
    d = save(tmp_path, "t5", "small", 1, tok=other)
    with pytest.raises(ValueError, match="different tokenizers") as e:
        load_family(target=t, drafters=[d])
    assert t in str(e.value) and d in str(e.value)


def test_special_id_mismatch_names_both_models(tmp_path):
    t = save(tmp_path, "llama", "target", 0)
    other = toy_tokenizer(48, False)
    other.eos_token = "w3"          # same vocabulary, another eos id
    d = save(tmp_path, "llama", "small", 1, tok=other)
    with pytest.raises(ValueError, match=r"special token ids \(eos 1 vs 3\)") as e:
        load_family(target=t, drafters=[d])
    assert t in str(e.value) and d in str(e.value)


def test_byo_argument_errors(tmp_path):
    t = save(tmp_path, "llama", "target", 0)
    with pytest.raises(ValueError, match="not both"):
        load_family("tiny-t5", target=t)
    with pytest.raises(ValueError, match="needs target"):
        load_family(drafters=[t])
    with pytest.raises(ValueError, match="twice"):
        load_family(target=t, drafters=[t])
    with pytest.raises(ValueError, match="not in the local Hugging Face cache"):
        load_family(target="no-such-org/no-such-model")


def test_vicuna_named_target_gets_the_chat_template(tmp_path):
    root = tmp_path / "my-vicuna"
    root.mkdir()
    t = save(root, "llama", "target", 0)
    fam = load_family(target=t)
    assert fam.prompt_style == "vicuna-v1.1"
    assert load_family(target=t, prompt_style="plain").prompt_style == "plain"


@pytest.mark.parametrize("n,want", [
    (0, [[10]]),
    (1, [[13, 10], [0, 10]]),                                  # the official code's LLaMA setting
    (2, [[8, 13, 10], [0, 1, 10], [0, 0, 10]]),                # paper Table 5 (GSM8K)
    (3, [[8, 13, 13, 10], [0, 1, 1, 10], [0, 0, 1, 10], [0, 0, 0, 10]]),
])
def test_default_k_rule(n, want):
    assert default_k(n) == want


def test_cli_target_and_drafters(tmp_path, capsys):
    from csd_lib.cli.main import main
    paths = [save(tmp_path, "t5", s, i) for i, s in enumerate(["target", "base", "small"])]
    out = {}
    for method in ("ar", "csd"):
        rc = main(["generate", "--target", paths[0], "--drafters", ",".join(paths[1:]), "--method", method,
                   "--prompt", "w5 w6 w7 w5 w6", "--max-new-tokens", "10", "--dtype", "fp32", "--json"])
        assert rc == 0
        out[method] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["csd"]["token_ids"] == out["ar"]["token_ids"] and out["csd"]["plan"]["family"] == "custom-t5-target-0"
    rc = main(["generate", "--drafters", paths[1], "--prompt", "w5"])
    assert rc == 2 and "needs target" in capsys.readouterr().err


def test_bad_overrides_fail_before_loading(monkeypatch):
    from csd_lib.families import family as families
    monkeypatch.setattr(families, "_load_tiny", lambda *a: pytest.fail("loaded despite a bad override"))
    with pytest.raises(ValueError, match="3x3"):
        load_family("tiny-t5", k=[[1]])
    with pytest.raises(ValueError, match="prompt style"):
        load_family("tiny-t5", prompt_style="chatml")
    with pytest.raises(ValueError, match="unknown family"):
        load_family("gpt-5")
