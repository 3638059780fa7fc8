"""Checks of what a caller hands the Python API, before torch sees it: a family and a prompt.

Each mistake is one ``ValueError`` that says what was given and what to pass instead.
"""
from __future__ import annotations

import numbers

import numpy as np
import torch

from .. import config

FAMILY_PARTS = ("tokenizer", "target", "drafters", "mag")


def check_family(family):
    """A loaded family (``load_family``, ``random_family``, ``family_from_models``), returned as is."""
    if isinstance(family, str):
        raise ValueError(f"family {family!r} is a name, not a loaded family; load it first: "
                         f"fam = load_family({family!r})")
    missing = [a for a in FAMILY_PARTS if not hasattr(family, a)]
    if missing:
        raise ValueError(f"family must be a loaded Family (load_family, random_family), got a "
                         f"{type(family).__name__} without {', '.join(missing)}")
    return family


def check_prompt(prompt, vocab_size: int):
    """A non-blank ``str``, or token ids as a list, tuple or 1-D integer array/tensor of ints in
    ``[0, vocab_size)``; returns the str as is, or the ids as a list of Python ints."""
    if isinstance(prompt, str):
        return check_prompt_text(prompt)
    if isinstance(prompt, (torch.Tensor, np.ndarray)):
        if prompt.ndim != 1:
            raise ValueError(f"prompt ids must be 1-D, got shape {tuple(prompt.shape)}; pass one prompt's ids")
        ints = np.issubdtype(prompt.dtype, np.integer) if isinstance(prompt, np.ndarray) else \
            not (prompt.dtype.is_floating_point or prompt.dtype.is_complex or prompt.dtype == torch.bool)
        if not ints:
            raise ValueError(f"prompt ids must be integers, got an array of {prompt.dtype}")
        prompt = prompt.tolist()
    elif not isinstance(prompt, (list, tuple)):
        raise ValueError(f"prompt must be text (str) or token ids (a list of ints), got "
                         f"{type(prompt).__name__} {_short(prompt)}")
    bad = [t for t in prompt if isinstance(t, (bool, np.bool_)) or not isinstance(t, numbers.Integral)]
    if bad:
        bad = bad[0]
        raise ValueError(f"prompt ids must be ints, got {type(bad).__name__} {_short(bad)}; pass a list of "
                         f"token ids or a str")
    ids = [int(t) for t in prompt]
    if not ids:
        raise ValueError("the prompt is empty; pass at least one token")
    out = [t for t in ids if not 0 <= t < vocab_size]
    if out:
        raise ValueError(f"prompt token id {out[0]} is out of range [0, {vocab_size}) for this family's "
                         f"vocabulary; pass ids from its tokenizer")
    return ids


def check_prompt_text(text: str) -> str:
    """A prompt given as text, returned as is: not blank, and encodable (no lone surrogate, which is what
    Python makes of command-line bytes that are not UTF-8, or a JSON ``"\\udce9"``)."""
    if not text.strip():
        raise ValueError("the prompt is empty; pass some text to continue")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        ch = text[e.start]
        what = (f"byte {ord(ch) - 0xDC00:#04x}, which is not UTF-8 (text from a terminal or file in another "
                f"encoding, e.g. Latin-1)" if 0xDC80 <= ord(ch) <= 0xDCFF else "a lone surrogate, not a character")
        raise ValueError(f"the prompt is not valid text: character {e.start + 1} ({ch!r}) is {what}; pass UTF-8 "
                         f"text") from None
    return text


def prompt_limit() -> int:
    """The prompt limit of models without a position limit: ``config.MAX_PROMPT_TOKENS``
    (``$CSD_MAX_PROMPT_TOKENS``, default 2048)."""
    value = config.MAX_PROMPT_TOKENS
    try:
        limit = int(value)
    except (TypeError, ValueError):
        limit = 0
    if isinstance(value, bool) or limit < 1 or str(limit) != str(value).strip():
        raise ValueError(f"CSD_MAX_PROMPT_TOKENS (csd_lib.config.MAX_PROMPT_TOKENS) is {value!r}, not an integer "
                         f">= 1; unset it for the default 2048, or give e.g. 4096")
    return limit


def check_prompt_length(ids: list[int], models) -> list[int]:
    """``ids`` if every one of ``models`` (LMs) without a position limit (``max_length`` None: T5's
    relative positions) takes a prompt that long (:func:`prompt_limit`); checked before any tensor is
    made. A position limit is checked with ``max_new_tokens`` (``cascade.run_plan``, ``LM.start``)."""
    for lm in models:
        if lm.max_length is None and len(ids) > prompt_limit():
            raise ValueError(f"the prompt has {len(ids)} tokens, more than the limit of {prompt_limit()} for models "
                             f"with relative positions such as '{lm.name}' (memory grows with the square of the "
                             f"prompt); shorten the prompt, or raise the limit with CSD_MAX_PROMPT_TOKENS=N "
                             f"(csd_lib.config.MAX_PROMPT_TOKENS)")
    return ids


def check_room(target, ids: list[int], max_new_tokens: int) -> list[int]:
    """``ids`` if a target with learned positions (``max_length``) has room for them plus ``max_new_tokens``."""
    if not target.is_encoder_decoder and target.max_length and len(ids) + max_new_tokens > target.max_length:
        raise ValueError(f"the prompt ({len(ids)} tokens) plus max_new_tokens ({max_new_tokens}) exceeds "
                         f"the model limit of {target.max_length} tokens; shorten the prompt or lower "
                         f"max_new_tokens")
    return ids


def _short(x) -> str:
    r = repr(x)
    return r if len(r) <= 40 else r[:37] + "..."
