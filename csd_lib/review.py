"""The review step in paper notation: one pure function decides acceptance.

A reviewer with distributions ``p`` (one row per drafted position, plus one for the
bonus) checks drafted tokens ``x`` that were drawn from ``q``.

- Sampling: accept ``x_i`` with probability ``min(1, l * p_i(x_i) / q_i(x_i))``; at the
  first rejection draw from the residual ``norm(max(0, p_i - q_i))``; if all are
  accepted draw the bonus from ``p_{m+1}``.
- Greedy: accept ``x_i`` if it is ``argmax p_i`` or, when ``l > 1``, if
  ``p_i(x_i) > q_i(x_i) / l``; the next token is ``argmax p``.

With ``l > 1`` the emitted tokens are not distributed as ``p``. Per position, given the
whole history, the emitted token follows

    q_eff = min(q, l p) + (1 - sum min(q, l p)) * norm(max(0, p - q))

so the level above must review against ``q_eff`` (and a bonus token has ``q_eff = p``).
At ``l = 1``, ``q_eff = p``. See ``effective_q``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Review:
    """Outcome of one review."""
    n_accepted: int            # a: drafted tokens kept
    next_token: int            # correction at position a+1 (rejection) or bonus (all kept)
    bonus: bool                # True when every drafted token was accepted
    accept_prob: torch.Tensor  # (m,) min(1, l p(x)/q(x)) for every drafted token


def probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Softmax at a temperature; greedy (T=0) uses T=1 probabilities for lenience.

    The row max is subtracted before dividing by T: the same softmax, but a tiny T gives
    ``-inf`` (probability 0) instead of ``inf - inf = nan``, so it tends to the argmax (ties share).
    """
    t = temperature if temperature > 0 else 1.0
    z = logits - logits.amax(dim=-1, keepdim=True)  # (..., V), every entry <= 0
    return torch.softmax(torch.where(z == 0, z, z / t), dim=-1)  # the max stays 0 even where T underflows


def token_q(q: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor:
    """q_i(x_i) for every position; ``q=None`` means one-hot proposals (MaG)."""
    if q is None:
        return torch.ones(x.shape[0], dtype=torch.float32)
    return q.gather(1, x[:, None])[:, 0]


def review(p: torch.Tensor, x: torch.Tensor, q: torch.Tensor | None, lenience: float = 1.0,
           greedy: bool = True, generator: torch.Generator | None = None) -> Review:
    """Review drafted tokens ``x`` (m,) drawn from ``q`` (m, V) against ``p`` (m+1, V)."""
    m = x.shape[0]
    px = p[:m].gather(1, x[:, None])[:, 0]                          # (m,)
    qx = token_q(q, x)                                              # (m,)
    ratio = torch.clamp(lenience * px / qx.clamp_min(1e-30), max=1.0)  # (m,)
    if greedy:
        ok = x == p[:m].argmax(-1)
        if lenience > 1:
            ok |= px > qx / lenience
    else:
        u = torch.rand(m, generator=generator)
        ok = u < ratio
    bad = torch.nonzero(~ok)
    a = int(bad[0, 0]) if bad.numel() else m
    if a == m:
        nxt = int(p[m].argmax()) if greedy else int(torch.multinomial(p[m], 1, generator=generator))
        return Review(a, nxt, True, ratio)
    if greedy:
        return Review(a, int(p[a].argmax()), False, ratio)
    return Review(a, int(torch.multinomial(residual(p[a], None if q is None else q[a], int(x[a])), 1,
                                           generator=generator)), False, ratio)


def residual(p: torch.Tensor, q: torch.Tensor | None, x: int) -> torch.Tensor:
    """norm(max(0, p - q)) for one position; q=None is one-hot at x. Falls back to p."""
    if q is None:
        r = p.clone()
        r[x] = torch.clamp(r[x] - 1.0, min=0.0)
    else:
        r = torch.clamp(p - q, min=0.0)
    s = r.sum()
    return r / s if s > 0 else p


def effective_q(p: torch.Tensor, q: torch.Tensor | None, x: torch.Tensor, lenience: float) -> torch.Tensor:
    """Per-position distribution of the token a lenient review emits, (m, V).

    ``p`` (m, V) are the reviewer's rows for the drafted positions, ``q`` (m, V) the
    proposal rows (None: one-hot at ``x``). At ``lenience == 1`` this is ``p``.
    """
    if lenience == 1:
        return p
    if q is None:
        q = torch.zeros_like(p).scatter_(1, x[:, None], 1.0)
    kept = torch.minimum(q, lenience * p)                          # (m, V)
    reject = (1.0 - kept.sum(-1, keepdim=True)).clamp_min(0.0)     # (m, 1)
    r = torch.clamp(p - q, min=0.0)
    rs = r.sum(-1, keepdim=True)
    r = torch.where(rs > 0, r / rs.clamp_min(1e-30), p)
    return kept + reject * r
