"""One adapter over encoder-decoder (T5) and decoder-only (Llama) models.

The adapter keeps a KV cache across calls. A call names the whole decoder sequence it
wants scored; the adapter reuses the longest cached prefix, rolls the rest back through
the cache API (``crop``), feeds only the new tokens and returns logits for the last
``m + 1`` positions. Rollback after a rejected draft is therefore automatic.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from huggingface_hub import try_to_load_from_cache
from transformers import DynamicCache, EncoderDecoderCache, PretrainedConfig

from . import config
from .archs import build_on_meta, published_config, stored_ids

log = logging.getLogger(__name__)

# What a generation's times are read from: wall time, or this process's CPU time (all its threads;
# with one torch thread on a CPU, time that other jobs preempt is not counted).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


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
        if self.max_length is None and getattr(cfg, "relative_attention_num_buckets", None) is None:
            # Relative-position encoders (T5) have no length limit: T5's n_positions is not one.
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


def model_arch(cfg) -> str:
    """'t5' for T5-family encoder-decoders (fp16 must keep their 'wo' layers in fp32), else the model type.

    ``cfg``: a transformers config or a ``config.json`` dict.
    """
    mt = (cfg.get("model_type") if isinstance(cfg, dict) else getattr(cfg, "model_type", "")) or ""
    return "t5" if mt in ("t5", "mt5", "umt5") else mt


def _model_class(cfg):
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM
    return AutoModelForSeq2SeqLM if getattr(cfg, "is_encoder_decoder", False) else AutoModelForCausalLM


def checkpoint_config(path_or_id: str) -> dict | None:
    """A checkpoint's ``config.json`` as a dict, without any download; None when it is not at hand.

    A local folder's own file, else the local Hugging Face cache's copy (what will load), else
    the published config stored in ``data/hf_configs`` (the real presets' ids).
    """
    if Path(path_or_id).is_dir():
        path = Path(path_or_id) / "config.json"
        return json.loads(path.read_text()) if path.is_file() else None
    hit = try_to_load_from_cache(path_or_id, "config.json")
    if isinstance(hit, str):
        return json.loads(Path(hit).read_text())
    return published_config(path_or_id) if path_or_id in stored_ids() else None


def count_params(path_or_id: str | dict, keep_fp32: tuple[str, ...] = ()) -> tuple[int, int]:
    """(parameters, those in modules named in ``keep_fp32``) of a checkpoint, read from its config only.

    ``path_or_id``: a folder, a hub id (its config from ``checkpoint_config``, fetched only when
    it is not at hand) or a ``config.json`` dict. The model is built on the meta device: no
    weights are downloaded or allocated. The config's own ``tie_word_embeddings`` is kept
    (transformers 5.24's T5Config reports True for the untied FLAN-T5 checkpoints, which would
    drop their ``lm_head`` from the count).
    """
    cfg = path_or_id if isinstance(path_or_id, dict) else checkpoint_config(path_or_id)
    if cfg is None:
        cfg, _ = PretrainedConfig.get_config_dict(path_or_id)
    model = build_on_meta(cfg)
    n = n32 = 0
    for name, p in model.named_parameters():  # tied parameters come once
        n += p.numel()
        if any(part in keep_fp32 for part in name.split(".")):
            n32 += p.numel()
    return n, n32


def hide_weight_loading_bars() -> None:
    """Hide transformers' own progress bars ("Loading weights"); hub download bars stay as they were.

    transformers' ``disable_progress_bar`` also turns off huggingface_hub's download bars, so
    a multi-GB first download would look hung; they are turned back on unless already off.
    """
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars
    from transformers.utils import logging as hf_logging
    hub_off = are_progress_bars_disabled()
    hf_logging.disable_progress_bar()
    if not hub_off:
        enable_progress_bars()


def _input_device(model) -> torch.device:
    """The device inputs go to: the first GPU of an accelerate device map, else the first parameter's."""
    dmap = getattr(model, "hf_device_map", None)
    if dmap:
        gpus = [d for d in dmap.values() if isinstance(d, int) or (isinstance(d, str) and d.startswith("cuda"))]
        return torch.device(f"cuda:{gpus[0]}" if isinstance(gpus[0], int) else gpus[0]) if gpus else torch.device("cpu")
    return next(model.parameters()).device


def check_loaded(model, pol: config.Policy) -> str | None:
    """Why a loaded model breaks the policy (a 'wo' layer not fp32, non-finite logits), or None."""
    if pol.keep_fp32:
        bad = {str(p.dtype).removeprefix("torch.") for n, p in model.named_parameters()
               if any(part in pol.keep_fp32 for part in n.split(".")) and p.dtype != torch.float32}
        if bad:
            return f"its {'/'.join(pol.keep_fp32)} layers were loaded in {', '.join(sorted(bad))}, not fp32"
    if pol.dtype == torch.float32:
        return None
    cfg = model.config
    dev = _input_device(model)
    ids = torch.arange(3, 3 + min(8, cfg.vocab_size - 3), device=dev)[None]  # (1, S), no special ids
    with torch.inference_mode():
        if getattr(cfg, "is_encoder_decoder", False):
            start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else cfg.pad_token_id
            logits = model(input_ids=ids, decoder_input_ids=torch.full((1, 1), start, device=dev)).logits
        else:
            logits = model(input_ids=ids).logits
    if not torch.isfinite(logits).all():
        return f"its logits are not finite in {str(pol.dtype).removeprefix('torch.')}"
    return None


class _UntiedHeadNote(logging.Filter):
    """Drops transformers' warning that T5's ``lm_head`` is not tied to ``shared``.

    transformers 5.24's T5Config says tied whatever the checkpoint's config says; the published
    FLAN-T5 checkpoints carry their own ``lm_head`` (untied) and one input embedding shared by
    encoder and decoder. Loading with the default config gives exactly that tying (``lm_head``
    kept, embeddings shared) and warns; ``tie_word_embeddings=False`` would instead re-initialise
    the encoder's and decoder's embeddings at random. So the load is right and the note is noise.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not ("tied weights mapping" in msg and "lm_head.weight" in msg)


@contextlib.contextmanager
def _published_tying(arch: str):
    """Silence the untied-``lm_head`` warning while a T5 checkpoint loads (see ``_UntiedHeadNote``)."""
    if arch != "t5":
        yield
        return
    hf_log, note = logging.getLogger("transformers.modeling_utils"), _UntiedHeadNote()
    hf_log.addFilter(note)
    try:
        yield
    finally:
        hf_log.removeFilter(note)


def load_lm(name: str, path_or_id: str, device=None, dtype=None, real: bool = False,
            policy: config.Policy | None = None, **hf_kwargs) -> LM:
    """Load an HF checkpoint (local dir or hub id) as an LM adapter, placed by the device/dtype policy.

    Args:
        real: a hub checkpoint (the "real" policy) rather than an embedded tiny model.
        policy: a policy already chosen for the family (``config.policy``); else one is chosen here.
        hf_kwargs: passed to ``from_pretrained``, e.g. ``device_map="auto", max_memory=...``.
    After loading, a reduced-precision model must keep its fp32 modules and give finite
    logits on a short input; if not, it is reloaded in fp32 and a line says so.
    """
    from transformers import AutoConfig
    cfg = AutoConfig.from_pretrained(path_or_id, local_files_only=hf_kwargs.get("local_files_only", False))
    pol = policy or config.policy("real" if real else "tiny", model_arch(cfg), config.describe_device(device),
                                  dtype, device)
    cls = _model_class(cfg)

    def load(dt):
        with _published_tying(model_arch(cfg)):
            model = cls.from_pretrained(path_or_id, dtype=dt, **hf_kwargs)
        return model if "device_map" in hf_kwargs else model.to(pol.device)

    model = load(pol.dtype)
    problem = check_loaded(model, pol)
    if problem:
        log.warning(f"load_lm: {path_or_id}: {problem}; reloading it in fp32")
        del model
        model = load(torch.float32)
    lm = LM(name=name, model=model, model_id=str(path_or_id))
    lm.device = _input_device(model)
    return lm
