"""One adapter over encoder-decoder (T5) and decoder-only (Llama) models.

The adapter keeps a KV cache across calls. A call names the whole decoder sequence it
wants scored; the adapter reuses the longest cached prefix, rolls the rest back through
the cache API (``crop``), feeds only the new tokens and returns logits for the last
``m + 1`` positions. Rollback after a rejected draft is therefore automatic.
"""
from __future__ import annotations

import functools
import inspect
import logging
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
from transformers import DynamicCache, EncoderDecoderCache

log = logging.getLogger(__name__)

# What a generation's times are read from: wall time, or this process's CPU time (all its threads;
# with one torch thread on a CPU, time that other jobs preempt is not counted).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


# The config key that marks a model whose weights are random (shadow checkpoints, toy models).
RANDOM_WEIGHTS_KEY = "csd_random_weights"


@dataclass
class Meter:
    """Forward calls and their time (read from ``clock``) of one model during one generation."""
    calls: int = 0
    time: float = 0.0
    tokens_fed: int = 0
    clock: Callable[[], float] = CLOCKS["wall"]  # a setting: reset() keeps it

    def reset(self) -> None:
        """Zero the counts: a new generation starts."""
        self.calls, self.time, self.tokens_fed = 0, 0.0, 0


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
    """A causal or seq2seq model with a rolling KV cache, named by its cascade role.

    ``random_weights`` is read from the model's config (``RANDOM_WEIGHTS_KEY``), which shadow
    checkpoints and toy models set: claims that need trained weights are then not checked.
    """
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
        if self.max_length is None and getattr(cfg, "relative_attention_num_buckets", None) is None:
            # Relative-position encoders (T5) have no length limit: T5's n_positions is not one.
            self.max_length = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
        self.decoder_start = getattr(cfg, "decoder_start_token_id", None)
        self.random_weights = bool(getattr(cfg, RANDOM_WEIGHTS_KEY, False))
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
            t0 = self.meter.clock()
            with torch.inference_mode():
                self._enc = self.model.get_encoder()(input_ids=ids)
            self.meter.time += self.meter.clock() - t0
            return [self.decoder_start]
        self._cache = DynamicCache(config=self.model.config)
        return list(prompt_ids)

    def release(self) -> None:
        """Drop the cache and encoder states."""
        self._cache, self._enc, self._cached = None, None, []

    # -- scoring ---------------------------------------------------------------------
    @functools.cached_property
    def _keeps_logits(self) -> bool:
        """Whether the model's forward takes ``logits_to_keep`` (HF decoder-only models; T5 does not)."""
        return "logits_to_keep" in inspect.signature(self.model.forward).parameters

    def logits(self, seq: list[int], m: int) -> torch.Tensor:
        """Logits predicting seq[-m:] and the token after: shape (m + 1, V), float32 on the model's device.

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
        t0 = self.meter.clock()
        with torch.inference_mode():
            if self.is_encoder_decoder:
                out = self.model(encoder_outputs=self._enc, decoder_input_ids=ids,
                                 cache=self._cache, use_cache=True)
            elif self._keeps_logits:  # the LM head runs on the m+1 rows the review needs, not on all fed
                out = self.model(input_ids=ids, cache=self._cache, use_cache=True, logits_to_keep=m + 1)
            else:
                out = self.model(input_ids=ids, cache=self._cache, use_cache=True)
        logits = out.logits[0, -(m + 1):].float()  # (m+1, V), left on the device for the review
        if logits.device.type == "cuda":  # the meter times the forward itself, not its launch
            torch.cuda.synchronize(logits.device)
        self.meter.time += self.meter.clock() - t0
        self.meter.calls += 1
        self.meter.tokens_fed += len(new)
        self._cached = list(seq)
        return logits


# pad plays no part in single-prompt decoding, and some drafter tokenizers define none
SPECIAL_IDS = ("eos_token_id", "bos_token_id", "unk_token_id")


def _pad_tokens(*toks) -> set[str]:
    """The pad tokens of ``toks`` that are no other special token (they may differ between tokenizers)."""
    pads = {str(t.pad_token) for t in toks if getattr(t, "pad_token", None) is not None}
    return pads - {str(getattr(t, a, None)) for t in toks for a in ("eos_token", "bos_token", "unk_token")}


def check_vocab(models: list[LM], tokenizers: dict[str, object] | None = None) -> None:
    """Raise ValueError naming both models if any two models disagree on the vocabulary.

    ``tokenizers`` (model id -> tokenizer) must agree on every token and on the special ids
    eos, bos and unk; the pad token may differ (or be missing).
    """
    ref = models[0] if models else None
    for other in models[1:]:
        if other.vocab_size != ref.vocab_size:
            raise ValueError(f"models '{ref.name}' ({ref.model_id or 'in memory'}) and '{other.name}' "
                             f"({other.model_id or 'in memory'}) have different vocabularies "
                             f"({ref.vocab_size} vs {other.vocab_size} logits); every model of a "
                             f"family must share one tokenizer")
    if tokenizers:
        names = list(tokenizers)
        first = tokenizers[names[0]]
        for nm in names[1:]:
            tok = tokenizers[nm]
            pads = _pad_tokens(first, tok)
            a, b = [{s: i for s, i in t.get_vocab().items() if s not in pads} for t in (first, tok)]
            if a != b:
                tok_s, tid = min(set(a.items()) ^ set(b.items()))
                raise ValueError(f"models '{names[0]}' and '{nm}' use different tokenizers ({len(a)} vs "
                                 f"{len(b)} tokens; e.g. {tok_s!r} -> {tid} is in one only); every model of "
                                 f"a family must share one tokenizer")
            diff = [f"{s.removesuffix('_token_id')} {getattr(first, s, None)} vs {getattr(tok, s, None)}"
                    for s in SPECIAL_IDS if getattr(first, s, None) != getattr(tok, s, None)]
            if diff:
                raise ValueError(f"models '{names[0]}' and '{nm}' disagree on special token ids "
                                 f"({', '.join(diff)}); every model of a family must share one tokenizer")


