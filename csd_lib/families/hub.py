"""Checkpoints: their configs without a download, the hub's reachability, and loading a model as an LM.

Everything is read from the configs at hand first (a local folder's, the hub cache's, or the published
ones stored in ``data/hf_configs``), so a family that cannot load is refused before any weight moves.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

import torch
from huggingface_hub import constants as hub_constants
from huggingface_hub import try_to_load_from_cache
from transformers import PretrainedConfig

from .. import config
from ..engine.models import LM
from .archs import build_on_meta, published_config, stored_ids

log = logging.getLogger(__name__)


def model_arch(cfg) -> str:
    """'t5' for T5-family encoder-decoders (fp16 must keep their 'wo' layers in fp32), else the model type.

    ``cfg``: a transformers config or a ``config.json`` dict.
    """
    mt = (cfg.get("model_type") if isinstance(cfg, dict) else getattr(cfg, "model_type", "")) or ""
    return "t5" if mt in ("t5", "mt5", "umt5") else mt


def _auto_class(cfg):
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


def straight_to(device: torch.device, what: str = "the model") -> dict:
    """``from_pretrained`` arguments that read each weight straight onto ``device``: no whole model in host RAM first.

    On the CPU none are needed (weights are read there). Elsewhere a one-device map does it, which
    needs accelerate (the ``real`` extra); without it the model is read into host RAM, then moved,
    and a line says so.
    """
    if device.type == "cpu":
        return {}
    if importlib.util.find_spec("accelerate") is None:
        log.warning(f"load_lm: accelerate is not installed, so {what} is read into host RAM before it moves to "
                    f"{device}; pip install accelerate (or the package's 'real' extra) to load it straight there")
        return {}
    return {"device_map": {"": device}}


def load_lm(name: str, path_or_id: str, device=None, dtype=None, real: bool = False,
            policy: config.Policy | None = None, **hf_kwargs) -> LM:
    """Load an HF checkpoint (local dir or hub id) as an LM adapter, placed by the device/dtype policy.

    Args:
        real: a hub checkpoint (the "real" policy) rather than an embedded tiny model.
        policy: a policy already chosen for the family (``config.policy``); else one is chosen here.
        hf_kwargs: passed to ``from_pretrained``, e.g. ``device_map="auto", max_memory=...`` (an
            offload plan's map replaces the one-device map of ``straight_to``).
    Each weight is read straight onto the policy's device (``straight_to``). After loading, a reduced-precision model must keep its fp32 modules and give finite
    logits on a short input; if not, it is reloaded in fp32 and a line says so.
    """
    from transformers import AutoConfig
    hide_weight_loading_bars()  # as in the CLI and the notebooks: only download bars show
    cfg = AutoConfig.from_pretrained(path_or_id, local_files_only=hf_kwargs.get("local_files_only", False))
    pol = policy or config.policy("real" if real else "tiny", model_arch(cfg), config.describe_device(device),
                                  dtype, device)
    cls = _auto_class(cfg)
    kwargs = {**straight_to(pol.device, path_or_id), **hf_kwargs}  # the caller's device_map (an offload plan) wins

    def load(dt):
        with _published_tying(model_arch(cfg)):
            model = cls.from_pretrained(path_or_id, dtype=dt, **kwargs)
        return model if "device_map" in kwargs else model.to(pol.device)

    model = load(pol.dtype)
    problem = check_loaded(model, pol)
    if problem:
        log.warning(f"load_lm: {path_or_id}: {problem}; reloading it in fp32")
        del model
        model = load(torch.float32)
    lm = LM(name=name, model=model, model_id=str(path_or_id))
    lm.device = _input_device(model)
    return lm

# a hub id: ORG/NAME (or NAME alone)
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def checkpoint_ref(rid) -> str:
    """A hub id or an existing folder (``~`` expanded); a path-like id that names no folder is a ValueError."""
    rid = str(rid)
    path = os.path.expanduser(rid)
    if Path(path).is_dir():
        return path
    if rid.startswith(("/", "./", "../", "~")) or not _HUB_ID.match(rid):
        raise ValueError(f"no such folder: {rid!r}; give an existing local checkpoint folder or a hub id "
                         f"such as ORG/NAME")
    return rid


def missing_ids(ids: list[str]) -> list[str]:
    from huggingface_hub import try_to_load_from_cache
    missing = []
    for rid in ids:
        if Path(rid).is_dir():
            continue
        hit = try_to_load_from_cache(rid, "config.json")
        if not isinstance(hit, str):
            missing.append(rid)
    return missing

PROBE_TIMEOUT = 3.0  # seconds the hub's host gets to accept a connection


def hub_reachable(timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether the hub's host (``HF_ENDPOINT``, else huggingface.co) accepts a TCP connection within ``timeout``."""
    url = urlsplit(hub_constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False
