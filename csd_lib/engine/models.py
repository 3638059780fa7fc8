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
import re
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
import transformers
from transformers import DynamicCache, EncoderDecoderCache

from .tree import tree_mask

log = logging.getLogger(__name__)

# What a generation's times are read from: wall time, or this process's CPU time (all its threads;
# with one torch thread on a CPU, time that other jobs preempt is not counted).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


# The transformers releases the tests run (scripts/stack_matrix.sh: the oldest admitted, the lent GPU
# machine's 5.17.0, and requirements.txt's pin); pyproject.toml admits the same range
# (tests/engine/test_models.py checks that the two agree).
TRANSFORMERS_TESTED = ("5.0.0", "5.24.0")
TESTED_RANGE = f">={TRANSFORMERS_TESTED[0]},<={TRANSFORMERS_TESTED[1]}"
# The forward's keyword for the KV cache: recent releases name it ``cache``, older ones ``past_key_values``.
# A forward with ``**kwargs`` swallows the wrong one silently, so the name is read from its signature.
CACHE_KEYWORDS = ("cache", "past_key_values")


class StackError(ValueError):
    """The installed transformers does not run the adapter as tested (a ValueError: the CLI says it in one line)."""


def _release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: '5.17.0' -> (5, 17, 0), '5.25.0.dev0' -> (5, 25, 0)."""
    return tuple(int(x) for x in re.match(r"\d+(?:\.\d+)*", version).group().split("."))


def transformers_ok(version: str | None = None) -> str | None:
    """None when ``version`` (default: the installed transformers) is in the tested range, else the problem in one line."""
    version = version or transformers.__version__
    lo, hi = (_release(v) for v in TRANSFORMERS_TESTED)
    if lo <= _release(version) <= hi:
        return None
    return (f"transformers {version} is outside the range this workbook is tested with ({TESTED_RANGE}); "
            f"pip install 'transformers{TESTED_RANGE}'")


def cache_keyword(model: torch.nn.Module) -> str:
    """The keyword ``model``'s forward takes its KV cache by (``CACHE_KEYWORDS``, read from its signature)."""
    params = inspect.signature(model.forward).parameters
    for kw in CACHE_KEYWORDS:
        if kw in params:
            return kw
    raise StackError(f"the forward of {type(model).__name__} names no KV cache argument "
                     f"({' or '.join(CACHE_KEYWORDS)}) in transformers {transformers.__version__}; "
                     f"use transformers{TESTED_RANGE}")


# The config key that marks a model whose weights are random (shadow checkpoints, toy models).
RANDOM_WEIGHTS_KEY = "csd_random_weights"


@dataclass
class Meter:
    """Forward calls and their time (read from ``clock``) of one model during one generation."""
    calls: int = 0
    time: float = 0.0
    tokens_fed: int = 0
    nodes: int = 0  # drafted tokens scored: a chain's m per call, a tree's nodes
    clock: Callable[[], float] = CLOCKS["wall"]  # a setting: reset() keeps it

    def reset(self) -> None:
        """Zero the counts: a new generation starts."""
        self.calls, self.time, self.tokens_fed, self.nodes = 0, 0.0, 0, 0


def sync_device(device: torch.device) -> None:
    """Wait for the device's queued kernels (CUDA runs them asynchronously), so that a timer reads
    the work itself and not its launch; nothing to wait for elsewhere."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def common_prefix(a: list[int], b: list[int]) -> int:
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
        self._tree: list[int] = []  # tokens of the last tree, until keep_path

    # -- lifecycle -------------------------------------------------------------------
    def reset(self, prompt_ids: list[int]) -> list[int]:
        """Empty the cache for a new prompt (an encoder-decoder's encoder states are left to :meth:`start`);
        return the decoder's initial sequence."""
        if self.max_length is not None and len(prompt_ids) > self.max_length:
            raise ValueError(f"the prompt has {len(prompt_ids)} tokens but model '{self.name}' "
                             f"accepts at most {self.max_length}; shorten the prompt")
        self._cached = []
        if self.is_encoder_decoder:
            self._cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
            return [self.decoder_start]
        self._cache = DynamicCache(config=self.model.config)
        return list(prompt_ids)

    def start(self, prompt_ids: list[int]) -> list[int]:
        """Reset the cache for a new prompt (and run the encoder); return the decoder's initial sequence."""
        seq = self.reset(prompt_ids)
        if self.is_encoder_decoder:
            ids = torch.tensor([prompt_ids], device=self.device)  # (1, S)
            sync_device(ids.device)  # the encoder's cost lands in its own timing, not in the next call's
            t0 = self.meter.clock()
            with torch.inference_mode():
                self._enc = self.model.get_encoder()(input_ids=ids)
            sync_device(self._enc.last_hidden_state.device)
            self.meter.time += self.meter.clock() - t0
        return seq

    def release(self) -> None:
        """Drop the cache and encoder states."""
        self._cache, self._enc, self._cached = None, None, []

    # -- scoring ---------------------------------------------------------------------
    @functools.cached_property
    def _keeps_logits(self) -> bool:
        """Whether the model's forward takes ``logits_to_keep`` (HF decoder-only models; T5 does not)."""
        return "logits_to_keep" in inspect.signature(self.model.forward).parameters

    @functools.cached_property
    def _cache_kw(self) -> str:
        """The keyword this model's forward takes the KV cache by (:func:`cache_keyword`)."""
        return cache_keyword(self.model)

    def _check_cache(self, want: int) -> None:
        """Stop in one line unless the cache holds ``want`` tokens: a forward that ignored the cache
        recomputed nothing from it, and its output is wrong. Reads a shape, no device sync."""
        got = self._cache.get_seq_length()
        if got != want:
            raise StackError(f"model '{self.name}': the KV cache holds {got} tokens where {want} were expected "
                             f"after a call: transformers {transformers.__version__} did not use the cache "
                             f"passed as {self._cache_kw}=; use transformers{TESTED_RANGE}")

    def logits(self, seq: list[int], m: int) -> torch.Tensor:
        """Logits predicting seq[-m:] and the token after: shape (m + 1, V), float32 on the model's device.

        Row i is the distribution of the token at position len(seq) - m + i given the
        tokens before it; the last row is the bonus distribution.
        """
        n = len(seq)
        keep = min(common_prefix(self._cached, seq), n - m - 1)  # must re-feed >= m+1 tokens
        cur = len(self._cached)
        if keep < cur:
            self._cache.crop(keep - cur)  # negative: remove the last (cur - keep) tokens
        new = seq[keep:]
        ids = torch.tensor([new], device=self.device)  # (1, T)
        cache = {self._cache_kw: self._cache}
        t0 = self.meter.clock()
        with torch.inference_mode():
            if self.is_encoder_decoder:
                out = self.model(encoder_outputs=self._enc, decoder_input_ids=ids, use_cache=True, **cache)
            elif self._keeps_logits:  # the LM head runs on the m+1 rows the review needs, not on all fed
                out = self.model(input_ids=ids, use_cache=True, logits_to_keep=m + 1, **cache)
            else:
                out = self.model(input_ids=ids, use_cache=True, **cache)
        logits = out.logits[0, -(m + 1):].float()  # (m+1, V), left on the device for the review
        sync_device(logits.device)  # the meter times the forward itself, not its launch
        self.meter.time += self.meter.clock() - t0
        self._check_cache(keep + len(new))
        self.meter.calls += 1
        self.meter.tokens_fed += len(new)
        self.meter.nodes += m
        self._cached, self._tree = list(seq), []
        return logits

    def tree_logits(self, seq: list[int], tokens: list[int], parents: list[int], hidden: bool = False):
        """Logits of a token tree after ``seq`` in one forward call: (N + 1, V), float32 on the model's device.

        Node ``i`` holds ``tokens[i]`` and hangs under node ``parents[i]`` (-1: under ``seq[-1]``;
        parents come before their children). Row 0 is the distribution after ``seq``, row ``i + 1``
        the one after node ``i``'s root path. Each node sees the cache, the fed part of ``seq`` and
        its own ancestors (:func:`csd_lib.engine.tree.tree_mask`), at position ``len(seq) - 1 + depth``.
        ``hidden=True`` also returns the same rows' final hidden states (the output layer's input), (N + 1, D).
        Until :meth:`keep_path` says which root path was accepted the cache holds every node; the next
        call without it crops them all (they match no sequence).
        """
        if self.is_encoder_decoder:
            raise ValueError(f"model '{self.name}' is an encoder-decoder (T5): its decoder's relative "
                             f"position bias cannot score a token tree (docs/REFERENCE.md, tree attention); "
                             f"use a decoder-only family such as tiny-llama")
        n = len(seq)
        keep = min(common_prefix(self._cached, seq), n - 1)  # re-feed >= 1 token: row 0 is its output
        if keep < len(self._cached):
            self._cache.crop(keep - len(self._cached))
        lin = seq[keep:]
        ids = torch.tensor([lin + list(tokens)], device=self.device)  # (1, r + N)
        mask, pos = tree_mask(parents, len(lin), keep, self.dtype, self.device)  # (1, 1, T, keep + T), (1, T)
        caps: list[torch.Tensor] = []
        hook = self.model.get_output_embeddings().register_forward_pre_hook(
            lambda mod, args: caps.append(args[0])) if hidden else None
        t0 = self.meter.clock()
        try:
            keep_rows = {"logits_to_keep": len(tokens) + 1} if self._keeps_logits else {}
            with torch.inference_mode():
                out = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                                 **{self._cache_kw: self._cache}, **keep_rows)
        finally:
            if hook is not None:
                hook.remove()
        logits = out.logits[0, -(len(tokens) + 1):].float()  # (N + 1, V)
        sync_device(logits.device)
        self.meter.time += self.meter.clock() - t0
        self._check_cache(keep + ids.shape[1])
        self.meter.calls += 1
        self.meter.tokens_fed += ids.shape[1]
        self.meter.nodes += len(tokens)
        self._cached = list(seq) + [None] * len(tokens)  # node entries match no sequence until keep_path
        self._tree = list(tokens)
        return (logits, caps[-1][0, -(len(tokens) + 1):]) if hidden else logits  # hidden: (N + 1, D)

    def keep_path(self, path: list[int]) -> None:
        """Keep only the cache entries of the accepted root path (node indices, root first) of the last tree.

        The cache API rolls back a suffix (``crop``) but the accepted nodes need not be one: the kept
        rows are gathered along the sequence axis of every layer's keys and values, the tensors
        ``crop`` slices.
        """
        n = len(self._cached) - len(self._tree)
        idx = torch.tensor(list(range(n)) + [n + i for i in path], device=self.device)  # (n + a,)
        for layer in self._cache.layers:
            layer.keys = layer.keys.index_select(-2, idx)
            layer.values = layer.values.index_select(-2, idx)
        self._cached = self._cached[:n] + [self._tree[i] for i in path]
        self._tree = []


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


