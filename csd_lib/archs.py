"""Models from published config dicts, built by transformers without weights (or with random ones).

Used by :func:`csd_lib.models.count_params` (parameters of a checkpoint from its config only)
and by :mod:`csd_lib.shadow` (random-weight copies of the real checkpoints).
"""
from __future__ import annotations

import torch
import transformers


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
