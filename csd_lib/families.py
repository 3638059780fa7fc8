"""Model families: a target, neural drafters (largest first) and MaG, with default K and lenience."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from . import config
from .mag import MaG, build_bigram, load_bigram
from .models import LM, check_vocab, load_lm


@dataclass
class Family:
    """Everything a generation needs. ``drafters`` are neural, largest first."""
    name: str
    tokenizer: object
    target: LM
    drafters: list[LM]
    mag: MaG
    default_k: list[list[int]]
    default_lenience: float
    sd_k: int = 5
    staged_k: list[list[int]] = field(default_factory=lambda: [[5, 0], [0, 3]])
    task: str = "gsm8k"

    @property
    def models(self) -> list[LM]:
        return [self.target, *self.drafters]

    def __post_init__(self):
        check_vocab(self.models)
        self.mag.check_vocab(self.target.vocab_size)


# Drafter role names by count; the target is always "target".
ROLES = {1: ["small"], 2: ["base", "small"]}

# Real checkpoints. K and lenience: paper Table 5 (GSM8K) for FLAN-T5; the official
# code's shipped LLaMA setting for Vicuna (REFERENCE.md).
REAL_PRESETS = {
    "flan-t5": dict(target="google/flan-t5-xxl", drafters=["google/flan-t5-base", "google/flan-t5-small"],
                    k=[[8, 13, 10], [0, 1, 10], [0, 0, 10]], lenience=3.0, params=11.3e9),
    "flan-t5-colab": dict(target="google/flan-t5-large", drafters=["google/flan-t5-base", "google/flan-t5-small"],
                          k=[[8, 13, 10], [0, 1, 10], [0, 0, 10]], lenience=3.0, params=0.77e9),
    "vicuna": dict(target="lmsys/vicuna-7b-v1.3", drafters=["double7/vicuna-68m"],
                   k=[[13, 10], [0, 10]], lenience=3.0, params=7e9),
}

# The embedded families, trained by this project (csd_lib.zoo). K and lenience are the
# best measured by scripts/tune_tiny.py on the synth-gsm8k validation split (results/tune.json).
TINY_PRESETS = {
    "tiny-t5": dict(k=[[4, 5, 10], [0, 1, 10], [0, 0, 10]], lenience=5.0, sd_k=16, staged_k=[[5, 0], [0, 3]]),
    "tiny-llama": dict(k=[[8, 0], [0, 10]], lenience=5.0, sd_k=8, staged_k=None),
}

FAMILIES = (*TINY_PRESETS, *REAL_PRESETS)


class ModelUnavailableError(ValueError):
    """A real checkpoint is neither in the local HF cache nor downloadable."""


def load_family(name: str | None = None, device=None, dtype=None) -> Family:
    """Load a family by preset name: tiny-t5 (default), tiny-llama, flan-t5, flan-t5-colab, vicuna."""
    name = name or config.FAMILY
    if name in TINY_PRESETS:
        return _load_tiny(name, device, dtype)
    if name in REAL_PRESETS:
        return _load_real(name, device, dtype)
    raise ValueError(f"unknown family {name!r}; use one of {', '.join(FAMILIES)}")


def _load_tiny(name: str, device, dtype) -> Family:
    from transformers import AutoTokenizer
    manifest = config.MODELS_DIR / f"{name}.json"
    if not manifest.exists():
        raise ValueError(f"the embedded family '{name}' is missing ({manifest} not found); "
                         f"train it with `python -m csd_lib.zoo train --family {name}`")
    spec = json.loads(manifest.read_text())
    preset = TINY_PRESETS[name]
    path = lambda m: config.MODELS_DIR / m  # noqa: E731
    tok = AutoTokenizer.from_pretrained(path(spec["target"]))
    dt = dtype or torch.float32  # weights ship in fp16 to stay small; compute in fp32 by default
    target = load_lm("target", str(path(spec["target"])), device, dt)
    roles = ROLES[len(spec["drafters"])]
    drafters = [load_lm(r, str(path(m)), device, dt) for r, m in zip(roles, spec["drafters"])]
    mag = MaG(load_bigram(config.MODELS_DIR / f"{name}-bigram.npy"))
    return Family(name, tok, target, drafters, mag, preset["k"], preset["lenience"], preset["sd_k"],
                  preset["staged_k"] or [[5, 0], [0, 3]], task="synth-gsm8k")


def _missing_ids(ids: list[str]) -> list[str]:
    from huggingface_hub import try_to_load_from_cache
    missing = []
    for rid in ids:
        if Path(rid).is_dir():
            continue
        hit = try_to_load_from_cache(rid, "config.json")
        if not isinstance(hit, str):
            missing.append(rid)
    return missing


def _load_real(name: str, device, dtype) -> Family:
    from transformers import AutoTokenizer
    spec = REAL_PRESETS[name]
    ids = [spec["target"], *spec["drafters"]]
    missing = _missing_ids(ids)
    advice = (f"use family='tiny-t5' (the embedded default, works offline), or go online / set HF_HOME "
              f"to a cache that holds them")
    if missing and config.HF_OFFLINE:
        raise ModelUnavailableError(f"family '{name}' needs {', '.join(missing)}, which "
                                    f"{'is' if len(missing) == 1 else 'are'} not in the local Hugging Face "
                                    f"cache and the network is off (HF_HUB_OFFLINE=1); {advice}")
    dev = config.pick_device(device)
    extra = {}
    if dev.type == "cuda":
        free = torch.cuda.get_device_properties(dev).total_memory
        if spec["params"] * 2 * 1.2 > free:  # bf16 weights plus headroom
            extra["device_map"] = "auto"
    try:
        toks = {rid: AutoTokenizer.from_pretrained(rid) for rid in ids}
        target = load_lm("target", spec["target"], device, dtype, real=True, **extra)
        roles = ROLES[len(spec["drafters"])]
        drafters = [load_lm(r, m, device, dtype, real=True) for r, m in zip(roles, spec["drafters"])]
    except OSError as e:
        raise ModelUnavailableError(f"could not load family '{name}' ({', '.join(missing or ids)}): {e}; "
                                    f"{advice}") from None
    check_vocab([target, *drafters], toks)
    mag = MaG(real_bigram(name, toks[spec["target"]], target.vocab_size))
    return Family(name, toks[spec["target"]], target, drafters, mag, spec["k"], spec["lenience"])


def real_bigram(name: str, tokenizer, vocab_size: int) -> np.ndarray:
    """Bigram table for a real family, built from a task corpus on first use and cached."""
    path = config.cache_dir() / f"{name}-bigram-{vocab_size}.npy"
    if path.exists():
        table = load_bigram(path)
        if len(table) == vocab_size:
            return table
    from .tasks import load_task
    texts = []
    for ex in load_task("gsm8k", "train", n=2000):
        texts.append(ex.prompt + ex.reference)
    seqs = [tokenizer(t)["input_ids"] for t in texts]
    table = build_bigram(seqs, vocab_size)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, table)
    tmp.replace(path)
    return table


# -- tiny random families for correctness tests ------------------------------------------

def toy_tokenizer(vocab_size: int, seq2seq: bool):
    """A whitespace word-level tokenizer over tokens w3..w{V-1}; 0 pad, 1 eos, 2 unk."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2, **{f"w{i}": i for i in range(3, vocab_size)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if seq2seq:
        tk.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")


def random_model(arch: str, vocab_size: int, size: str, seed: int, dtype=torch.float64, eos: int | None = 1):
    """A randomly initialised tiny T5 or Llama; ``size`` is 'target', 'base' or 'small'."""
    from transformers import LlamaConfig, LlamaForCausalLM, T5Config, T5ForConditionalGeneration
    d, layers = {"target": (32, 2), "base": (16, 1), "small": (8, 1)}[size]
    torch.manual_seed(seed)
    if arch == "t5":
        cfg = T5Config(vocab_size=vocab_size, d_model=d, d_kv=8, d_ff=2 * d, num_layers=layers,
                       num_decoder_layers=layers, num_heads=2, decoder_start_token_id=0, pad_token_id=0,
                       eos_token_id=eos, tie_word_embeddings=False, initializer_factor=10.0)
        model = T5ForConditionalGeneration(cfg)  # a large init keeps random T5 outputs from collapsing
    elif arch == "llama":
        cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=d, intermediate_size=2 * d, num_hidden_layers=layers,
                          num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                          eos_token_id=eos, pad_token_id=0, bos_token_id=None, tie_word_embeddings=False)
        model = LlamaForCausalLM(cfg)
    else:
        raise ValueError(f"unknown arch {arch!r}; use 't5' or 'llama'")
    with torch.no_grad():  # sharper random distributions; never predict pad
        w = model.get_output_embeddings().weight
        w.mul_(4.0)
        w[0].fill_(0.0)
        w[0, 0] = -1.0
    return model.to(dtype).eval()


def random_family(arch: str = "t5", vocab_size: int = 64, n_drafters: int = 2, seed: int = 0,
                  dtype=torch.float64, drafter_is_target: bool = False, k=None, lenience: float = 2.0,
                  eos: int | None = 1, bigram: np.ndarray | None = None) -> Family:
    """A family of random tiny models (for tests only: random weights teach nothing)."""
    target_model = random_model(arch, vocab_size, "target", seed, dtype, eos)
    roles = ROLES.get(n_drafters, []) if n_drafters else []
    drafters = []
    for i, role in enumerate(roles):
        m = target_model if drafter_is_target else random_model(arch, vocab_size, role, seed + 1 + i, dtype, eos)
        drafters.append(LM(role, m))
    n = n_drafters + 1
    k = k or [[3 if i == j else (4 if j == n - 1 else 2) for j in range(n)] for i in range(n)]
    if bigram is None:
        rng = np.random.default_rng(seed)
        bigram = rng.integers(3, vocab_size, size=vocab_size).astype(np.int32)
    return Family(f"random-{arch}", toy_tokenizer(vocab_size, arch == "t5"), LM("target", target_model),
                  drafters, MaG(bigram), k, lenience, sd_k=4, staged_k=[[3, 1], [0, 2]], task="synthetic")
