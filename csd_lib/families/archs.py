"""Published configs of the real checkpoints (``data/hf_configs``) and the models they describe.

Models are built by transformers without weights (or with random ones).

Used by :func:`csd_lib.families.hub.count_params` (parameters of a checkpoint from its config only)
and by :mod:`csd_lib.families.shadow` (random-weight copies of the real checkpoints).
"""
from __future__ import annotations

import json

import torch
import transformers

from .. import config

CONFIGS_DIR = config.DATA_ROOT / "hf_configs"   # published configs of the real checkpoints (see its SOURCE.md)


def config_object(cfg: dict):
    """A transformers config from a published dict, with the published tying kept.

    transformers 5.24's T5Config reports ``tie_word_embeddings=True`` whatever the dict
    says; the published FLAN-T5 checkpoints are untied (their own ``lm_head``), so the
    flag is set back here before a model is built from it.
    """
    obj = transformers.CONFIG_MAPPING[cfg["model_type"]].from_dict(dict(cfg))
    obj.tie_word_embeddings = bool(cfg.get("tie_word_embeddings", True))
    return obj


def _model_class(cfg: dict):
    if cfg.get("architectures"):
        return getattr(transformers, cfg["architectures"][0])
    seq2seq = cfg.get("is_encoder_decoder", False)
    return transformers.AutoModelForSeq2SeqLM if seq2seq else transformers.AutoModelForCausalLM


def build(cfg: dict, dtype: torch.dtype):
    """The model a config dict describes, uninitialised, in ``dtype`` on the current default device."""
    obj = config_object(cfg)
    cls = _model_class(cfg)
    model = cls.from_config(obj, dtype=dtype) if cls.__name__.startswith("Auto") else cls._from_config(obj, dtype=dtype)
    if cfg.get("is_encoder_decoder"):
        # Untied T5 in transformers 5.24 also unties the encoder's and decoder's input
        # embeddings from ``shared``; the published checkpoints share one input embedding.
        model.set_input_embeddings(model.get_input_embeddings())
    return model


def build_on_meta(cfg: dict):
    """The model a config dict describes, on the meta device (nothing allocated), with its published tying."""
    with torch.device("meta"):
        return build(cfg, torch.float32)


def stored_ids() -> list[str]:
    """Every repo id with a stored published config (``data/hf_configs/ORG/NAME``)."""
    return sorted(f"{p.parent.parent.name}/{p.parent.name}" for p in CONFIGS_DIR.glob("*/*/config.json"))


def read_stored(repo_id: str, name: str) -> dict:
    """A published file of ``repo_id`` (config.json, generation_config.json, ...) stored in ``data/hf_configs``."""
    path = CONFIGS_DIR / repo_id / name
    if not path.exists():
        raise ValueError(f"no stored published {name} for {repo_id!r} ({path} not found); "
                         f"stored ids: {', '.join(stored_ids())}")
    return json.loads(path.read_text())


def published_config(repo_id: str) -> dict:
    """The published ``config.json`` of ``repo_id`` as stored in ``data/hf_configs``."""
    return read_stored(repo_id, "config.json")
