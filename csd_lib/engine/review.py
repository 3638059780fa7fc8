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
At ``l = 1``, ``q_eff = p``. See ``effective_q``. A review may give each drafted position its
own ``l`` (the paper reviews MaG's tokens with ``l = 1`` beside lenient neural ones).

Everything runs on the reviewer's device. Greedy reviews (``review_greedy``) work from the
logits: the argmax, and ``p(x)`` only at the drafted tokens; ``review`` (the sampling path)
draws its uniforms and its one categorical row on the CPU, with a CPU generator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

import numpy as np
import torch


@dataclass
class Review:
    """Outcome of one review."""
    n_accepted: int            # a: drafted tokens kept
    next_token: int            # correction at position a+1 (rejection) or bonus (all kept)
    bonus: bool                # True when every drafted token was accepted
    accept_prob: torch.Tensor  # (m,) min(1, l p(x)/q(x)) for every drafted token, on the reviewer's device
    best: list[int] | None = None  # greedy (review_greedy): each drafted position's argmax, (m,)
    px: list[float] | None = None  # greedy (review_greedy): p(x) (T = 1) at each drafted token, (m,)


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


def is_lenient(lenience: Lenience) -> bool:
    """Whether any position of a review has l > 1."""
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
        u = torch.rand(m, generator=generator, device="cpu")        # (m,) on the CPU
        ok = u.to(ratio.device) < ratio
    a = int(_first_rejected(ok))
    if a == m:
        nxt = int(p[m].argmax()) if greedy else int(torch.multinomial(p[m].cpu(), 1, generator=generator))
        return Review(a, nxt, True, ratio)
    if greedy:
        return Review(a, int(p[a].argmax()), False, ratio)
    res = residual(p[a], None if q is None else q[a], int(x[a]))
    return Review(a, int(torch.multinomial(res.cpu(), 1, generator=generator)), False, ratio)


def greedy_logps(logits: torch.Tensor, tokens: list[int]) -> tuple[list[int], list[float], list[float]]:
    """Per row of ``logits`` (m+1, V): the argmax, its log-probability, and ``log p(x)`` at the m
    drafted ``tokens`` (T = 1), as Python numbers: the 3m + 2 values a greedy review needs.

    On the CPU numpy does it (a handful of array calls, several times faster than torch's
    per-call overhead on a few rows); elsewhere torch does it on the device, with one transfer.
    """
    m = len(tokens)
    if logits.device.type == "cpu":
        a = logits.detach().numpy()                                     # (m+1, V), no copy
        best = a.argmax(-1)                                             # (m+1,) first maximal index
        z = a - a[np.arange(m + 1), best][:, None]                      # (m+1, V), max 0
        lse = np.log(np.exp(z).sum(-1))                                 # (m+1,) log-sum-exp minus the max
        return best.tolist(), (-lse).tolist(), (z[np.arange(m), tokens] - lse[:m]).tolist()
    return _greedy_logps_torch(logits, tokens)


def _greedy_logps_torch(logits: torch.Tensor, tokens: list[int]) -> tuple[list[int], list[float], list[float]]:
    """:func:`greedy_logps` with torch ops on the logits' device."""
    m = len(tokens)
    mx, best = logits.max(dim=-1)                                       # (m+1,), (m+1,)
    z = logits - mx[:, None]                                            # (m+1, V)
    lse = z.exp().sum(-1).log()                                         # (m+1,)
    x = torch.tensor(tokens, dtype=torch.long, device=logits.device)    # (m,)
    lpx = z[:m].gather(1, x[:, None])[:, 0] - lse[:m]                   # (m,)
    vals = torch.cat([best.double(), -lse.double(), lpx.double()]).tolist()  # the one transfer
    return [int(v) for v in vals[:m + 1]], vals[m + 1:2 * m + 2], vals[2 * m + 2:]


def review_greedy(logits: torch.Tensor, tokens: list[int], qx: list[float],
                  lenience: float | list[float] = 1.0) -> tuple[Review, list[float]]:
    """Greedy review straight from the reviewer's logits (m+1, V): no softmax over the vocabulary.

    ``qx`` is q(x) at the drafted ``tokens`` (1 for MaG), ``lenience`` one number or one per
    position. A token passes if it is its row's argmax or (where l > 1) ``p(x) > q(x) / l``, with
    ``p(x)`` (T = 1) a log-softmax at the drafted tokens only (:func:`greedy_logps`). Returns the
    review (with the argmax and ``p(x)`` per drafted token, for the event log) and ``p`` at each
    emitted token, the ``q(x)`` the level above needs.
    """
    m = len(tokens)
    best, lp_best, lpx = greedy_logps(logits, tokens)
    px = [math.exp(v) for v in lpx]
    lams = lenience if isinstance(lenience, list) else [float(lenience)] * m
    ratio = [min(1.0, lam * p / max(q, 1e-30)) for lam, p, q in zip(lams, px, qx)]
    a = next((i for i in range(m) if tokens[i] != best[i] and not (lams[i] > 1 and px[i] > qx[i] / lams[i])), m)
    return (Review(a, best[a], a == m, torch.tensor(ratio, dtype=torch.float64, device="cpu"),  # host-side record
                   best[:m], px), px[:a] + [math.exp(lp_best[a])])


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
    if not is_lenient(lenience):
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
