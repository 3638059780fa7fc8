"""One adapter over encoder-decoder (T5) and decoder-only (Llama) models.

The adapter keeps a KV cache across calls. A call names the whole decoder sequence it
wants scored; the adapter reuses the longest cached prefix, rolls the rest back through
the cache API (``crop``), feeds only the new tokens and returns logits for the last
``m + 1`` positions. Rollback after a rejected draft is therefore automatic.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache, EncoderDecoderCache

from . import config


@dataclass
class Meter:
    """Forward calls and wall time of one model during one generation."""
    calls: int = 0
    time: float = 0.0
    tokens_fed: int = 0


def _common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists (slice compares, log n)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(eq=False)
class LM:
    """A causal or seq2seq model with a rolling KV cache, named by its cascade role."""
    name: str
    model: torch.nn.Module
    model_id: str = ""
    max_length: int | None = None
    meter: Meter = field(default_factory=Meter)

    def __post_init__(self):
        self.model.eval()
        cfg = self.model.config
        self.is_encoder_decoder = bool(getattr(cfg, "is_encoder_decoder", False))
        p = next(self.model.parameters())
        self.device, self.dtype = p.device, p.dtype
        self.n_params = sum(t.numel() for t in self.model.parameters())
        self.vocab_size = self.model.get_output_embeddings().weight.shape[0]
        self.eos_token_id = cfg.eos_token_id
        if self.max_length is None:
            self.max_length = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
        self.decoder_start = getattr(cfg, "decoder_start_token_id", None)
        self._cache = None
        self._cached: list[int] = []  # decoder tokens whose keys/values are in the cache
        self._enc = None

    # -- lifecycle -------------------------------------------------------------------
    def start(self, prompt_ids: list[int]) -> list[int]:
        """Reset the cache for a new prompt; return the decoder's initial sequence."""
        if self.max_length is not None and len(prompt_ids) > self.max_length:
            raise ValueError(f"the prompt has {len(prompt_ids)} tokens but model '{self.name}' "
                             f"accepts at most {self.max_length}; shorten the prompt")
        self._cached = []
        if self.is_encoder_decoder:
            self._cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
            ids = torch.tensor([prompt_ids], device=self.device)  # (1, S)
            t0 = time.perf_counter()
            with torch.inference_mode():
                self._enc = self.model.get_encoder()(input_ids=ids)
            self.meter.time += time.perf_counter() - t0
            return [self.decoder_start]
        self._cache = DynamicCache(config=self.model.config)
        return list(prompt_ids)

    def release(self) -> None:
        """Drop the cache and encoder states."""
        self._cache, self._enc, self._cached = None, None, []

    # -- scoring ---------------------------------------------------------------------
    def logits(self, seq: list[int], m: int) -> torch.Tensor:
        """Logits predicting seq[-m:] and the token after: shape (m + 1, V), float32 on the CPU.

        Row i is the distribution of the token at position len(seq) - m + i given the
        tokens before it; the last row is the bonus distribution.
        """
        n = len(seq)
        keep = min(_common_prefix(self._cached, seq), n - m - 1)  # must re-feed >= m+1 tokens
        cur = len(self._cached)
        if keep < cur:
            self._cache.crop(keep - cur)  # negative: remove the last (cur - keep) tokens
        new = seq[keep:]
        ids = torch.tensor([new], device=self.device)  # (1, T)
        t0 = time.perf_counter()
        with torch.inference_mode():
            if self.is_encoder_decoder:
                out = self.model(encoder_outputs=self._enc, decoder_input_ids=ids,
                                 cache=self._cache, use_cache=True)
            else:
                out = self.model(input_ids=ids, cache=self._cache, use_cache=True)
        logits = out.logits[0, -(m + 1):].float().cpu()  # (m+1, V); .cpu() also waits for the GPU
        self.meter.time += time.perf_counter() - t0
        self.meter.calls += 1
        self.meter.tokens_fed += len(new)
        self._cached = list(seq)
        return logits


def check_vocab(models: list[LM], tokenizers: dict[str, object] | None = None) -> None:
    """Raise ValueError naming both models if any two models disagree on the vocabulary."""
    ref = models[0]
    for other in models[1:]:
        if other.vocab_size != ref.vocab_size:
            raise ValueError(f"models '{ref.name}' ({ref.model_id or 'in memory'}) and '{other.name}' "
                             f"({other.model_id or 'in memory'}) have different vocabularies "
                             f"({ref.vocab_size} vs {other.vocab_size} logits); every model of a "
                             f"family must share one tokenizer")
    if tokenizers:
        names = list(tokenizers)
        first = tokenizers[names[0]].get_vocab()
        for nm in names[1:]:
            if tokenizers[nm].get_vocab() != first:
                raise ValueError(f"models '{names[0]}' and '{nm}' use different tokenizers; every "
                                 f"model of a family must share one tokenizer")


def load_lm(name: str, path_or_id: str, device=None, dtype=None, real: bool = False,
            **hf_kwargs) -> LM:
    """Load an HF checkpoint (local dir or hub id) as an LM adapter."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM
    dev = config.pick_device(device)
    dt = config.pick_dtype(dtype, dev, real=real)
    cfg = AutoConfig.from_pretrained(path_or_id)
    cls = AutoModelForSeq2SeqLM if getattr(cfg, "is_encoder_decoder", False) else AutoModelForCausalLM
    if "device_map" in hf_kwargs:
        model = cls.from_pretrained(path_or_id, dtype=dt, **hf_kwargs)
    else:
        model = cls.from_pretrained(path_or_id, dtype=dt, **hf_kwargs).to(dev)
    return LM(name=name, model=model, model_id=str(path_or_id))
