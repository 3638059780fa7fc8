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
from typing import Union

import torch


@dataclass
class Review:
    """Outcome of one review."""
    n_accepted: int            # a: drafted tokens kept
    next_token: int            # correction at position a+1 (rejection) or bonus (all kept)
    bonus: bool                # True when every drafted token was accepted
    accept_prob: torch.Tensor  # (m,) min(1, l p(x)/q(x)) for every drafted token, on the reviewer's device


Lenience = Union[float, torch.Tensor]  # one l for the review, or one per drafted position (m,)


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
        return torch.ones(x.shape[0], dtype=torch.float32, device=x.device)
    return q.gather(1, x[:, None])[:, 0]


def _lenient(lenience: Lenience) -> bool:
    return bool((lenience > 1).any()) if isinstance(lenience, torch.Tensor) else lenience > 1


def _accept_greedy(x, best, px, qx, lenience: Lenience) -> torch.Tensor:
    """Greedy acceptance per drafted token: the argmax, or (where l > 1) ``p(x) > q(x) / l``."""
    ok = x == best
    if isinstance(lenience, torch.Tensor):
        ok |= (lenience > 1) & (px > qx / lenience)
    elif lenience > 1:
        ok |= px > qx / lenience
    return ok


def _first_rejected(ok: torch.Tensor) -> torch.Tensor:
    """Index of the first False in ``ok`` (m,), or m: a 0-d tensor on ok's device (no sync)."""
    stop = torch.cat([~ok, torch.ones(1, dtype=torch.bool, device=ok.device)])  # (m+1,)
    return stop.int().argmax()  # argmax returns the first maximal index


def review(p: torch.Tensor, x: torch.Tensor, q: torch.Tensor | None, lenience: Lenience = 1.0,
           greedy: bool = True, generator: torch.Generator | None = None) -> Review:
    """Review drafted tokens ``x`` (m,) drawn from ``q`` (m, V) against ``p`` (m+1, V).

    ``lenience`` is one number or one per drafted position (m,). Sampling draws with
    ``generator`` on the CPU (a CPU generator cannot draw on another device): the uniforms
    are drawn there, and a rejection or bonus row is copied there before its draw.
    """
    m = x.shape[0]
    px = p[:m].gather(1, x[:, None])[:, 0]                          # (m,)
    qx = token_q(q, x).to(px.dtype)                                 # (m,)
    ratio = torch.clamp(lenience * px / qx.clamp_min(1e-30), max=1.0)  # (m,)
    if greedy:
        ok = _accept_greedy(x, p[:m].argmax(-1), px, qx, lenience)
    else:
        u = torch.rand(m, generator=generator)                      # (m,) on the CPU
        ok = u.to(ratio.device) < ratio
    a = int(_first_rejected(ok))
    if a == m:
        nxt = int(p[m].argmax()) if greedy else int(torch.multinomial(p[m].cpu(), 1, generator=generator))
        return Review(a, nxt, True, ratio)
    if greedy:
        return Review(a, int(p[a].argmax()), False, ratio)
    res = residual(p[a], None if q is None else q[a], int(x[a]))
    return Review(a, int(torch.multinomial(res.cpu(), 1, generator=generator)), False, ratio)


def review_greedy(logits: torch.Tensor, x: torch.Tensor, qx: torch.Tensor, lenience: Lenience = 1.0,
                  ) -> tuple[Review, torch.Tensor]:
    """Greedy review straight from the reviewer's logits (m+1, V): no softmax over the vocabulary.

    ``qx`` (m,) is q(x) at the drafted tokens (1 for MaG). Acceptance compares ``x`` with the
    row argmax; ``p(x)`` (T = 1, for lenience and ``accept_prob``) is a log-softmax at the
    drafted tokens only. Returns the review and ``p`` at each emitted token (n_out,), the
    ``q(x)`` the level above needs. Only the accepted count and the next token leave the device.
    """
    m = x.shape[0]
    lse = torch.logsumexp(logits, dim=-1)                             # (m+1,)
    best = logits.argmax(-1)                                          # (m+1,)
    px = torch.exp(logits[:m].gather(1, x[:, None])[:, 0] - lse[:m])  # (m,)
    qx = qx.to(px.dtype)
    ratio = torch.clamp(lenience * px / qx.clamp_min(1e-30), max=1.0)  # (m,)
    a_t = _first_rejected(_accept_greedy(x, best[:m], px, qx, lenience))
    a, nxt = torch.stack([a_t, best[a_t]]).tolist()                   # the one transfer
    p_next = torch.exp(logits[a, nxt] - lse[a])                       # ()
    return Review(a, nxt, a == m, ratio), torch.cat([px[:a], p_next[None]])


def residual(p: torch.Tensor, q: torch.Tensor | None, x: int) -> torch.Tensor:
    """norm(max(0, p - q)) for one position; q=None is one-hot at x. Falls back to p."""
    if q is None:
        r = p.clone()
        r[x] = torch.clamp(r[x] - 1.0, min=0.0)
    else:
        r = torch.clamp(p - q, min=0.0)
    s = r.sum()
    return r / s if s > 0 else p


def effective_q(p: torch.Tensor, q: torch.Tensor | None, x: torch.Tensor, lenience: Lenience) -> torch.Tensor:
    """Per-position distribution of the token a lenient review emits, (m, V).

    ``p`` (m, V) are the reviewer's rows for the drafted positions, ``q`` (m, V) the
    proposal rows (None: one-hot at ``x``, never materialized). ``lenience`` is one number or
    one per position (m,); where it is 1 the row is ``p``.
    """
    per_row = isinstance(lenience, torch.Tensor)
    if not _lenient(lenience):
        return p
    lam = lenience[:, None] if per_row else lenience                  # (m, 1) or a number
    if q is None:  # kept = l p(x) capped at 1, at x only; the residual is p without x
        idx = x[:, None]
        kept_x = torch.minimum(torch.ones_like(idx, dtype=p.dtype), lam * p.gather(1, idx))  # (m, 1)
        reject = (1.0 - kept_x).clamp_min(0.0)                         # (m, 1)
        r = p.clone().scatter_(1, idx, torch.clamp(p.gather(1, idx) - 1.0, min=0.0))
    else:
        kept = torch.minimum(q, lam * p)                               # (m, V)
        reject = (1.0 - kept.sum(-1, keepdim=True)).clamp_min(0.0)     # (m, 1)
        r = torch.clamp(p - q, min=0.0)
    rs = r.sum(-1, keepdim=True)
    r = torch.where(rs > 0, r / rs.clamp_min(1e-30), p)
    out = reject * r if q is None else kept + reject * r
    if q is None:
        out = out.scatter_add_(1, idx, kept_x)
    return torch.where(lenience[:, None] == 1, p, out) if per_row else out
