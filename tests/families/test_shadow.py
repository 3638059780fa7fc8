"""Shadow checkpoints (csd_lib.shadow): published configs, tokenizers and sizes of the real ids."""
import json
import re

import huggingface_hub
import pytest
import torch

from csd_lib.families import shadow
from csd_lib.families.presets import REAL_PRESETS
from csd_lib.engine.models import LM, RANDOM_WEIGHTS_KEY

SMALL_IDS = ["google/flan-t5-small", "double7/vicuna-68m"]  # one of each architecture, cheap to build


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    out = tmp_path_factory.mktemp("hub")
    for rid in SMALL_IDS:
        shadow.build_shadow(out, rid, max_layers=1)
    return out


@pytest.fixture
def offline_hub(hub, monkeypatch):
    """The shadow cache as the process's hub cache, offline (huggingface_hub reads these at call time)."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return hub


def test_every_preset_model_has_a_stored_published_config():
    ids = {rid for p in REAL_PRESETS.values() for rid in (p["target"], *p["drafters"])}
    assert ids <= set(shadow.stored_ids())
    assert shadow.preset_ids(["flan-t5-colab", "flan-t5"]) == [
        "google/flan-t5-large", "google/flan-t5-base", "google/flan-t5-small", "google/flan-t5-xxl"]
    with pytest.raises(ValueError, match="unknown real preset"):
        shadow.preset_ids(["tiny-t5"])


# The published architecture of each id (the model cards and config.json files of the hub).
T5 = dict(vocab_size=32128, feed_forward_proj="gated-gelu", tie_word_embeddings=False, decoder_start_token_id=0,
          pad_token_id=0, eos_token_id=1, d_kv=64, relative_attention_num_buckets=32,
          relative_attention_max_distance=128, layer_norm_epsilon=1e-6, model_type="t5", is_encoder_decoder=True)
PUBLISHED = {
    "google/flan-t5-small": dict(T5, d_model=512, d_ff=1024, num_heads=6, num_layers=8, num_decoder_layers=8),
    "google/flan-t5-base": dict(T5, d_model=768, d_ff=2048, num_heads=12, num_layers=12, num_decoder_layers=12),
    "google/flan-t5-large": dict(T5, d_model=1024, d_ff=2816, num_heads=16, num_layers=24, num_decoder_layers=24),
    "google/flan-t5-xl": dict(T5, d_model=2048, d_ff=5120, num_heads=32, num_layers=24, num_decoder_layers=24),
    "google/flan-t5-xxl": dict(T5, d_model=4096, d_ff=10240, num_heads=64, num_layers=24, num_decoder_layers=24),
    "lmsys/vicuna-7b-v1.3": dict(model_type="llama", hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                 num_attention_heads=32, vocab_size=32000, max_position_embeddings=2048,
                                 rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                                 tie_word_embeddings=False, torch_dtype="float16"),
    "double7/vicuna-68m": dict(model_type="llama", hidden_size=768, intermediate_size=3072, num_hidden_layers=2,
                               num_attention_heads=12, vocab_size=32000, max_position_embeddings=2048,
                               bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False),
}
# Published sizes: google/flan-t5-* and vicuna model cards.
SIZES = {"google/flan-t5-small": 77e6, "google/flan-t5-base": 248e6, "google/flan-t5-large": 783e6,
         "google/flan-t5-xl": 2.85e9, "google/flan-t5-xxl": 11.3e9, "lmsys/vicuna-7b-v1.3": 6.74e9,
         "double7/vicuna-68m": 68e6}


@pytest.mark.parametrize("rid", sorted(PUBLISHED))
def test_stored_config_has_the_published_fields(rid):
    cfg = shadow.published_config(rid)
    assert {k: cfg[k] for k in PUBLISHED[rid]} == PUBLISHED[rid]
    assert shadow.tokenizer_facts(rid)["published_params"] == SIZES[rid]


@pytest.mark.parametrize("rid", sorted(SIZES))
def test_full_depth_parameter_count_within_2_percent(rid):
    n = shadow.config_params(shadow.published_config(rid))  # meta device: nothing allocated
    assert abs(n / SIZES[rid] - 1) < 0.02, f"{rid}: {n / 1e6:.1f}M vs published {SIZES[rid] / 1e6:.0f}M"


def test_cut_changes_only_layer_counts():
    full = shadow.published_config("google/flan-t5-xxl")
    cut = shadow.shadow_config("google/flan-t5-xxl", 2)
    assert {k for k in full if full[k] != cut[k]} == {"num_layers", "num_decoder_layers"}
    assert cut["num_layers"] == cut["num_decoder_layers"] == 2
    assert shadow.shadow_config("double7/vicuna-68m", 5)["num_hidden_layers"] == 2  # never deeper than published
    with pytest.raises(ValueError, match="max_layers"):
        shadow.shadow_config("double7/vicuna-68m", 0)
    with pytest.raises(ValueError, match="no stored published"):
        shadow.published_config("google/flan-t5-huge")


@pytest.mark.parametrize("rid", ["google/flan-t5-xxl", "google/flan-t5-small", "lmsys/vicuna-7b-v1.3",
                                 "double7/vicuna-68m"])
def test_narrowing_keeps_heads_whole_and_builds_a_model_of_that_width(rid):
    full = shadow.published_config(rid)
    cfg = shadow.shadow_config(rid, 1, max_width=512)
    t5 = full["model_type"] == "t5"
    hidden, ff, heads = ("d_model", "d_ff", "num_heads") if t5 else ("hidden_size", "intermediate_size",
                                                                       "num_attention_heads")
    head = full["d_kv"] if t5 else full[hidden] // full[heads]
    assert cfg[hidden] == min(full[hidden], 512 // head * head) and cfg[hidden] % head == 0
    assert cfg[heads] <= full[heads] and (cfg[heads] * head == cfg[hidden] if not t5 or cfg[hidden] != full[hidden]
                                          else cfg[heads] * head <= cfg[hidden])  # T5's inner dim is its own
    assert cfg[ff] / cfg[hidden] == pytest.approx(full[ff] / full[hidden], rel=0.01)
    assert cfg["vocab_size"] == full["vocab_size"]  # the real tokenizer's ids still fit
    assert {k for k in full if full[k] != cfg[k]} <= {hidden, ff, heads, *shadow.LAYER_KEYS}
    n = shadow.config_params(cfg)
    assert n < shadow.config_params(shadow.shadow_config(rid, 1)) or full[hidden] <= 512
    with pytest.raises(ValueError, match="head size"):
        shadow.shadow_config(rid, 1, max_width=head - 1)


@pytest.mark.parametrize("rid", SMALL_IDS)
def test_written_files_equal_the_stored_published_ones(hub, rid):
    snap = next((hub / f"models--{rid.replace('/', '--')}" / "snapshots").iterdir())
    assert (hub / f"models--{rid.replace('/', '--')}" / "refs" / "main").read_text() == snap.name
    written = json.loads((snap / "config.json").read_text())
    assert written.pop(RANDOM_WEIGHTS_KEY) is True  # the mark that the weights are random
    assert written == shadow.shadow_config(rid, 1)
    assert json.loads((snap / "generation_config.json").read_text()) == shadow.published_generation_config(rid)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert (snap / name).exists()


@pytest.mark.parametrize("rid", SMALL_IDS)
def test_hub_ids_resolve_offline(offline_hub, rid):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM
    assert isinstance(huggingface_hub.try_to_load_from_cache(rid, "config.json"), str)
    cfg = AutoConfig.from_pretrained(rid)
    want = shadow.shadow_config(rid, 1)
    assert cfg.vocab_size == want["vocab_size"] and cfg.model_type == want["model_type"]
    cls = AutoModelForSeq2SeqLM if cfg.is_encoder_decoder else AutoModelForCausalLM
    model = cls.from_pretrained(rid, dtype=torch.float32)
    emb_in, emb_out = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    assert emb_out.shape == (want["vocab_size"], want.get("d_model") or want["hidden_size"])
    assert not torch.equal(emb_in, emb_out)  # untied, as published
    if cfg.is_encoder_decoder:  # one shared input embedding; T5 v1.1 does not rescale untied outputs
        assert model.encoder.embed_tokens.weight is model.shared.weight
        assert model.config.scale_decoder_outputs is False


@pytest.mark.parametrize("rid", SMALL_IDS)
def test_tokenizer_matches_the_real_one(offline_hub, rid):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(rid)
    facts = shadow.tokenizer_facts(rid)
    assert len(tok) == facts["vocab_size"]
    for attr, (text, i) in facts["special"].items():
        assert getattr(tok, attr) == text and getattr(tok, attr + "_id") == i, attr
    ids = tok("Natalia sold clips to 48 of her friends.")["input_ids"]
    assert len(ids) > 3 and max(ids) < facts["vocab_size"]
    if facts["kind"] == "t5":
        assert ids[-1] == tok.eos_token_id and ids[0] != tok.eos_token_id
        assert tok.convert_tokens_to_ids("<extra_id_0>") == 32099
        assert tok.convert_tokens_to_ids("<extra_id_99>") == 32000
    else:
        assert ids[0] == tok.bos_token_id and tok.eos_token_id not in ids
        assert tok.decode(tok("\u00e9t\u00e9 \u4e2d")["input_ids"], skip_special_tokens=True) == "\u00e9t\u00e9 \u4e2d"


def test_rebuild_reuses_the_snapshot(hub):
    rec = shadow.build_shadow(hub, "double7/vicuna-68m", max_layers=1)
    assert rec["reused"] and rec["cut"] == {"num_hidden_layers": "2->1"}
    assert rec["params_full"] == shadow.config_params(shadow.published_config("double7/vicuna-68m"))


def test_relative_position_encoder_has_no_prompt_length_limit():
    from csd_lib.families.toy import toy_model
    t5 = LM("t", toy_model("t5", 40, "small", 0, dtype=torch.float32))
    assert t5.max_length is None
    assert t5.start(list(range(3, 40)) * 20)  # a 740-token prompt
    llama = LM("l", toy_model("llama", 40, "small", 0, dtype=torch.float32))
    assert llama.max_length == 512


# Tokens per English word of the published tokenizers: ~1.33 (100 tokens ~ 75 words; docs/REFERENCE.md,
# "Tokens per word of the real tokenizers"). The shadow's must be within 25% of it.
PUBLISHED_TOKENS_PER_WORD = 1.33
PLAIN_ENGLISH = [  # plain sentences written for this test; none is in the tokenizer's corpus
    "My grandmother keeps a small garden behind her house, where she grows tomatoes and beans every summer.",
    "The train was late again this morning, so most of the passengers missed the start of their meetings.",
    "Although the museum is closed on Mondays, visitors can still walk through the park next to it.",
    "He promised his daughter that they would go camping by the lake as soon as the school year ended.",
    "Doctors recommend drinking plenty of water and getting enough sleep before an important exam.",
    "The old bridge across the river was repaired last spring after a heavy storm damaged its wooden rails.",
]


@pytest.mark.parametrize("rid", SMALL_IDS)
def test_tokenizer_splits_english_at_the_published_rate(offline_hub, rid):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(rid)
    for name, texts in (("synth-gsm8k test prompts", None), ("plain English", PLAIN_ENGLISH)):
        rate = shadow.tokens_per_word(tok, texts)
        assert abs(rate / PUBLISHED_TOKENS_PER_WORD - 1) < 0.25, f"{rid} on {name}: {rate:.2f} tokens per word"
    pieces = tok.tokenize("Natalia sold 48 apples, then 24.")
    assert pieces[-2:] == (["4", "."] if tok.bos_token else ["\u258124", "."])  # Llama splits digits, T5 does not
    assert "," in pieces and "\u2581sold" in pieces and "\u2581apples" in pieces


def test_tokens_per_word_counts_pieces_per_whitespace_word(offline_hub):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained("google/flan-t5-small")
    assert shadow.tokens_per_word(tok, ["the dog ran", "on the road"]) == 1.0  # frequent words: one piece each
    assert shadow.tokens_per_word(tok, ["the dog ran.", "On the road"]) == 7 / 6  # "." is a piece; </s> not counted


def test_build_shadows_checks_ids_before_writing(tmp_path):
    out = tmp_path / "hub"
    with pytest.raises(ValueError, match="no stored published config for 'google/flan-t5-huge'"):
        shadow.build_shadows(out, ids=["google/flan-t5-small", "google/flan-t5-huge"], verbose=False)
    with pytest.raises(ValueError, match="no models to build"):
        shadow.build_shadows(out, presets=[], verbose=False)
    assert not out.exists()


def test_cli_builds_stored_ids_and_prints_tokens_per_word(hub, capsys):
    from csd_lib.cli.main import main
    assert main(["shadow", "--out", str(hub), "--ids", "double7/vicuna-68m", "--max-layers", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("double7/vicuna-68m: ") and "(already there)" in out[0]
    assert re.search(r"tokenizer: 1\.\d\d tokens per word", out[0]) and out[1].startswith("use them with")
    assert len(out) == 2  # that id only


def test_cli_rejects_unknown_ids_before_writing(tmp_path, capsys):
    from csd_lib.cli.main import main
    out = tmp_path / "hub"
    assert main(["shadow", "--out", str(out), "--ids", "google/flan-t5-small,google/flan-t5-huge"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no stored published config for 'google/flan-t5-huge'")
    assert not out.exists()
    with pytest.raises(SystemExit):  # one or the other
        main(["shadow", "--out", str(out), "--ids", "google/flan-t5-small", "--presets", "vicuna"])


@pytest.mark.parametrize("rid", SMALL_IDS)
def test_a_model_loaded_from_a_shadow_knows_its_weights_are_random(offline_hub, rid):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM
    cls = AutoModelForSeq2SeqLM if AutoConfig.from_pretrained(rid).is_encoder_decoder else AutoModelForCausalLM
    assert LM("target", cls.from_pretrained(rid, dtype=torch.float32)).random_weights
