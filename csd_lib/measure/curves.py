"""Per-position acceptance of a drafter against a reviewer (paper Fig. 2), greedy, lenience 1.

No decoding engine is needed. Under greedy review with lenience 1, if the drafter's first
``j`` tokens were accepted, the drafter's prefix *is* the reviewer's prefix. So one
teacher-forced forward of the drafter over the reviewer's greedy output ``y`` tells
everything: from a start ``s`` the drafter's first ``i`` tokens are all accepted iff

    argmax q(. | x, y[:s+j]) == y[s+j]   for every j < i.

Conventions (state them when you compare with the paper):

- every position ``s`` of the reviewer's output is a start, not only the positions where
  a real speculative step would begin, and every start weighs the same;
- position ``i`` only counts starts with at least ``i`` tokens left (``s + i <= len(y)``),
  so the tail of a generation never counts as a rejection;
- the reviewer's output includes its final ``</s>`` when it stops before
  ``max_new_tokens``;
- prompts are tokenized as ``generate`` tokenizes them (``prompts.prompt_ids``: the family's
  prompt style, then the tokenizer's special tokens).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..engine.prompts import prompt_ids


@dataclass
class Continuation:
    """A prompt and the reviewer's greedy continuation, as token ids."""
    prompt_ids: list[int]
    output_ids: list[int]


def _is_encdec(model) -> bool:
    return bool(getattr(model.config, "is_encoder_decoder", False))


def _start_id(model) -> int:
    cfg = model.config
    sid = cfg.decoder_start_token_id
    return cfg.pad_token_id if sid is None else sid


def _device(model):
    return next(model.parameters()).device


@torch.no_grad()
def greedy_continuations(model, tokenizer, prompts: list[str], max_new_tokens: int = 128,
                         prompt_style: str = "plain") -> list[Continuation]:
    """The model's greedy output for each prompt, cut after its first ``</s>`` (kept).

    ``prompt_style`` is the family's (``Family.prompt_style``), e.g. "vicuna-v1.1".
    """
    eos = model.config.eos_token_id if model.config.eos_token_id is not None else tokenizer.eos_token_id
    out = []
    for prompt in prompts:
        ids = torch.tensor([prompt_ids(tokenizer, prompt, prompt_style)], device=_device(model))  # (1, S)
        gen = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                             min_new_tokens=1, do_sample=False, eos_token_id=eos,
                             pad_token_id=model.config.pad_token_id)
        new = gen[0, 1:] if _is_encdec(model) else gen[0, ids.shape[1]:]  # drop decoder start / prompt
        new = new.tolist()
        if eos in new:
            new = new[:new.index(eos) + 1]
        out.append(Continuation(ids[0].tolist(), new))
    return out


@torch.no_grad()
def teacher_forced_matches(model, cont: Continuation) -> np.ndarray:
    """Boolean array m with m[t] = (the model's argmax after prompt + y[:t]) == y[t]."""
    dev = _device(model)
    y = torch.tensor([cont.output_ids], device=dev)                     # (1, T)
    x = torch.tensor([cont.prompt_ids], device=dev)                     # (1, S)
    if _is_encdec(model):
        dec = torch.cat([torch.full((1, 1), _start_id(model), device=dev), y[:, :-1]], dim=1)
        logits = model(input_ids=x, decoder_input_ids=dec).logits          # (1, T, V)
    else:
        full = torch.cat([x, y], dim=1)                                   # (1, S+T)
        logits = model(input_ids=full).logits[:, x.shape[1] - 1:-1]        # (1, T, V)
    return (logits.argmax(-1) == y)[0].cpu().numpy()


def run_lengths(matches: np.ndarray) -> np.ndarray:
    """r[s] = number of consecutive True values starting at s."""
    r = np.zeros(len(matches) + 1, dtype=np.int64)
    for t in range(len(matches) - 1, -1, -1):
        r[t] = r[t + 1] + 1 if matches[t] else 0
    return r[:-1]


def curve_from_matches(match_lists: list[np.ndarray], max_pos: int = 30) -> dict:
    """Unconditional/conditional acceptance per position from teacher-forced match arrays."""
    acc = np.zeros(max_pos + 1)     # acc[i]: starts whose first i tokens are accepted (eligible for i)
    prev = np.zeros(max_pos + 1)    # prev[i]: starts whose first i-1 tokens are accepted (eligible for i)
    cnt = np.zeros(max_pos + 1)     # cnt[i]: starts with at least i tokens left
    for m in match_lists:
        T = len(m)
        r = run_lengths(np.asarray(m, dtype=bool))
        for i in range(1, max_pos + 1):
            ok = r[:max(T - i + 1, 0)]  # starts s with s + i <= T
            cnt[i] += len(ok)
            acc[i] += int((ok >= i).sum())
            prev[i] += int((ok >= i - 1).sum())
    nan = float("nan")
    return {
        "unconditional": [acc[i] / cnt[i] if cnt[i] else nan for i in range(1, max_pos + 1)],
        "conditional": [acc[i] / prev[i] if prev[i] else nan for i in range(1, max_pos + 1)],
        "counts": [int(c) for c in cnt[1:]],
    }


def acceptance_curve(drafter_model, reviewer_model, tokenizer, prompts: list[str],
                     max_new_tokens: int = 128, max_pos: int = 30,
                     continuations: list[Continuation] | None = None, prompt_style: str = "plain") -> dict:
    """Per-position acceptance of ``drafter_model`` under greedy review by ``reviewer_model``.

    Args:
        prompts: prompt texts (ignored when ``continuations`` is given).
        continuations: the reviewer's greedy outputs, to reuse across drafters.
        prompt_style: the family's prompt style (see ``greedy_continuations``).
    Returns:
        dict with ``unconditional`` (P(first i accepted)), ``conditional``
        (P(i accepted | first i-1 accepted)), ``counts`` (starts counted at position i),
        each a list for i = 1..max_pos, and ``alpha`` (geometric fit).
    """
    if continuations is None:
        continuations = greedy_continuations(reviewer_model, tokenizer, prompts, max_new_tokens, prompt_style)
    matches = [teacher_forced_matches(drafter_model, c) for c in continuations if c.output_ids]
    curve = curve_from_matches(matches, max_pos)
    curve["alpha"] = fit_geometric(curve["unconditional"])
    curve["n_prompts"] = len(matches)
    curve["n_tokens"] = int(sum(len(m) for m in matches))
    return curve


def family_curves(models: list, tokenizer, prompts: list[str], names: list[str] | None = None,
                  max_new_tokens: int = 128, max_pos: int = 30, prompt_style: str = "plain") -> dict[str, dict]:
    """Curves for every drafter vs the target and vs the next larger model.

    Args:
        models: target first, then drafters largest first.
        names: labels of the models (default m0, m1, ...).
        prompt_style: the family's prompt style (see ``greedy_continuations``).
    Returns:
        ``{"drafter->reviewer": curve}``.
    """
    names = names or [f"m{i}" for i in range(len(models))]
    conts = {0: greedy_continuations(models[0], tokenizer, prompts, max_new_tokens, prompt_style)}
    out = {}
    for d in range(1, len(models)):
        for r in sorted({0, d - 1}):
            if r not in conts:
                conts[r] = greedy_continuations(models[r], tokenizer, prompts, max_new_tokens, prompt_style)
            out[f"{names[d]}->{names[r]}"] = acceptance_curve(models[d], models[r], tokenizer, prompts,
                                                              max_pos=max_pos, continuations=conts[r])
    return out


def fit_geometric(unconditional) -> float:
    """The alpha of P(first i accepted) = alpha**i, least squares in log space through the origin.

    Positions with a zero or undefined value are left out; returns nan if none is left.
    """
    num = den = 0.0
    for i, p in enumerate(unconditional, start=1):
        if p is None or not (p > 0) or math.isnan(p):
            continue
        num += i * math.log(min(p, 1.0))
        den += i * i
    return math.exp(num / den) if den else float("nan")
