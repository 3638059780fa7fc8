"""The zoo's training recipes: named tiny model presets and the embedded families' recipes (FAMILY_RECIPES).

The target is deep and the drafters are shallow, because on a CPU the cost of one decode
step follows the number of layers far more than the width (see ENVIRONMENT.md).
"""
from __future__ import annotations

VOCAB_SIZE = 2048
PAD_ID, EOS_ID, UNK_ID, BOS_ID = 0, 1, 2, 3
SPECIAL_TOKENS = ["<pad>", "</s>", "<unk>", "<s>"]  # ids 0..3, in this order

# name -> (arch, size kwargs, default training minutes (or a fixed ``steps`` budget), batch size,
# peak lr[, embedding lr multiplier][, ``accel``: training keys that replace these on a GPU or
# other accelerator])
PRESETS: dict[str, dict] = {
    # FLAN-T5 analogues (XXL / BASE / SMALL); params close to 50:4:1
    # The shipped target is the accelerator recipe: 2015 steps, 150 s on an H200. On this
    # 2-core CPU a batch-128 step takes 9-14 s, so the CPU keeps batch 16 (~1 s a step).
    "tiny-t5-target": dict(arch="t5", d_model=256, num_layers=6, num_heads=4, d_ff=1024,
                           minutes=80, batch=16, lr=5e-4, emb_lr_mult=16.0,
                           accel=dict(minutes=3, batch=128, lr=7e-4)),
    "tiny-t5-base": dict(arch="t5", d_model=128, num_layers=2, num_heads=4, d_ff=512,
                         minutes=7, batch=16, lr=2e-3),
    "tiny-t5-small": dict(arch="t5", d_model=64, num_layers=1, num_heads=2, d_ff=256,
                          minutes=4, batch=16, lr=3e-3),
    # Drafters of the paper-regime family (FAMILY_RECIPES["tiny-t5-paper"]): the shapes of tiny-t5-base
    # and tiny-t5-small, trained for a fixed short step budget so that the shipped target
    # accepts them about as often as FLAN-T5-XXL accepts FLAN-T5-base/small (paper Fig. 2)
    "tiny-t5-paper-base": dict(arch="t5", d_model=128, num_layers=2, num_heads=4, d_ff=512,
                               steps=400, batch=16, lr=2e-3),
    "tiny-t5-paper-small": dict(arch="t5", d_model=64, num_layers=1, num_heads=2, d_ff=256,
                                steps=300, batch=16, lr=3e-3),
    # Vicuna-7B / vicuna-68m analogues
    "tiny-llama-target": dict(arch="llama", d_model=256, num_layers=8, num_heads=4, d_ff=704,
                              minutes=85, batch=16, lr=1e-3),
    "tiny-llama-small": dict(arch="llama", d_model=64, num_layers=1, num_heads=2, d_ff=192,
                             minutes=4, batch=16, lr=3e-3),
}

# family -> target and drafters, largest first (also written to data/models/<family>.json)
FAMILY_RECIPES: dict[str, dict] = {
    "tiny-t5": {"arch": "t5", "target": "tiny-t5-target",
                "drafters": ["tiny-t5-base", "tiny-t5-small"]},
    "tiny-llama": {"arch": "llama", "target": "tiny-llama-target",
                   "drafters": ["tiny-llama-small"]},
    # the shipped tiny-t5 target with less trained drafters (its own training is tiny-t5's)
    "tiny-t5-paper": {"arch": "t5", "target": "tiny-t5-target",
                      "drafters": ["tiny-t5-paper-base", "tiny-t5-paper-small"]},
}


def recipe(name: str, device_type: str = "cpu") -> dict:
    """Training keys of a preset (minutes, steps, batch, lr, emb_lr_mult) for a device type."""
    p = PRESETS[name]
    out = {"minutes": p.get("minutes", 5), "steps": p.get("steps"), "batch": p.get("batch", 16),
           "lr": p.get("lr", 1e-3), "emb_lr_mult": p.get("emb_lr_mult", 1.0)}
    return {**out, **(p.get("accel", {}) if device_type != "cpu" else {})}


def family_models(family_name: str) -> list[str]:
    """Model names of a family, target first then drafters largest first."""
    if family_name not in FAMILY_RECIPES:
        raise ValueError(f"unknown family {family_name!r}; use one of {sorted(FAMILY_RECIPES)}")
    fam = FAMILY_RECIPES[family_name]
    return [fam["target"], *fam["drafters"]]


def make_config(name: str, **overrides):
    """A fresh HF config for a preset name (overrides replace size keys, for tests)."""
    if name not in PRESETS and "arch" not in overrides:
        raise ValueError(f"unknown model {name!r}; use one of {sorted(PRESETS)}")
    p = {**PRESETS.get(name, {}), **overrides}
    if p["arch"] == "t5":
        from transformers import T5Config
        return T5Config(vocab_size=VOCAB_SIZE, d_model=p["d_model"], d_kv=p["d_model"] // p["num_heads"],
                        d_ff=p["d_ff"], num_layers=p["num_layers"],
                        num_decoder_layers=p["num_layers"], num_heads=p["num_heads"],
                        relative_attention_num_buckets=32, relative_attention_max_distance=128,
                        dropout_rate=0.0, feed_forward_proj="relu", tie_word_embeddings=True,
                        pad_token_id=PAD_ID, eos_token_id=EOS_ID, decoder_start_token_id=PAD_ID,
                        is_encoder_decoder=True)
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=VOCAB_SIZE, hidden_size=p["d_model"], intermediate_size=p["d_ff"],
                       num_hidden_layers=p["num_layers"], num_attention_heads=p["num_heads"],
                       num_key_value_heads=p["num_heads"], max_position_embeddings=1024,
                       rms_norm_eps=1e-6, tie_word_embeddings=True, attention_dropout=0.0,
                       bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID)


def make_model(name: str, seed: int = 0, **overrides):
    """A freshly initialised model for a preset (deterministic in ``seed``)."""
    import torch
    from transformers import LlamaForCausalLM, T5ForConditionalGeneration
    cfg = make_config(name, **overrides)
    torch.manual_seed(seed)
    cls = T5ForConditionalGeneration if cfg.model_type == "t5" else LlamaForCausalLM
    return cls(cfg)
