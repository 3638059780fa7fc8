"""Tiny random families for correctness tests: random weights are fine for identity and exactness, and teach
nothing.
"""
from __future__ import annotations

import logging
import numbers

import numpy as np
import torch

from ..engine.mag import MaG
from ..engine.models import LM, RANDOM_WEIGHTS_KEY
from .family import Family, roles

log = logging.getLogger(__name__)


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


def toy_model(arch: str, vocab_size: int, size: str, seed: int, dtype=torch.float64, eos: int | None = 1):
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
    setattr(model.config, RANDOM_WEIGHTS_KEY, True)
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
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, numbers.Integral) or vocab_size < 4:
        raise ValueError(f"vocab_size must be an integer >= 4 (pad, eos and unk, then words w3...), got "
                         f"{vocab_size!r}")
    target_model = toy_model(arch, vocab_size, "target", seed, dtype, eos)
    drafters = []
    for i, role in enumerate(roles(n_drafters)):
        m = target_model if drafter_is_target else toy_model(arch, vocab_size, role, seed + 1 + i, dtype, eos)
        drafters.append(LM(role, m))
    n = n_drafters + 1
    k = k or [[3 if i == j else (4 if j == n - 1 else 2) for j in range(n)] for i in range(n)]
    if bigram is None:
        rng = np.random.default_rng(seed)
        bigram = rng.integers(3, vocab_size, size=vocab_size).astype(np.int32)
    return Family(f"random-{arch}", toy_tokenizer(vocab_size, arch == "t5"), LM("target", target_model),
                  drafters, MaG(bigram), k, lenience, sd_k=4, staged_k=[[3, 1], [0, 2]], task="synthetic")
