"""Token trees: the mask and positions that score one in a forward call, and the one tree review.

A tree is its nodes' ``tokens`` and ``parents``: node ``i`` continues the root path of node
``parents[i]`` (-1: the root, the last committed token); parents come before their children.
The reviewer scores it in one call (``LM.tree_logits``): row 0 of its output is the distribution
after the root, row ``i + 1`` the one after node ``i``.

- Greedy: the longest root path whose every token is its parent row's argmax, plus the argmax
  after its last node.
- Sampling (SpecInfer's recursive rejection sampling over siblings): at node ``u`` with
  residual ``r = p_u``, child ``j`` (token ``x_j`` drawn from ``q_j``) is accepted with probability
  ``min(1, r(x_j) / q_j(x_j))``; on rejection ``r <- norm(max(0, r - q_j))`` and the next sibling
  is tried; if every child is rejected the next token is drawn from ``r``. Each stage is one
  speculative-sampling step with target ``r``, so the emitted token follows ``p_u`` whatever
  the siblings' proposals are (drawn without replacement, one-hot, or depending on earlier siblings).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .review import residual


def check_parents(parents: list[int]) -> list[int]:
    """Node depths (1 under the root); a ValueError unless every parent is -1 or an earlier node."""
    depth: list[int] = []
    for i, u in enumerate(parents):
        if not -1 <= u < i:
            raise ValueError(f"node {i} has parent {u}: a parent must be -1 (the root) or an earlier node")
        depth.append(1 if u < 0 else depth[u] + 1)
    return depth


def children(parents: list[int]) -> dict[int, list[int]]:
    """Node index -> its children in node order (-1: the root's)."""
    out: dict[int, list[int]] = {-1: []}
    for i, u in enumerate(parents):
        out.setdefault(u, []).append(i)
        out.setdefault(i, [])
    return out


def ancestors(parents: list[int]) -> np.ndarray:
    """(N, N) bool: ``[i, j]`` true when node ``j`` is node ``i`` or one of its ancestors (what ``i`` attends to)."""
    check_parents(parents)
    n = len(parents)
    anc = np.zeros((n, n), dtype=bool)                                   # (N, N) ancestor-or-self
    for i, u in enumerate(parents):
        if u >= 0:
            anc[i] = anc[u]
        anc[i, i] = True
    return anc


def tree_mask(parents: list[int], n_lin: int, n_cached: int, dtype: torch.dtype,
              device) -> tuple[torch.Tensor, torch.Tensor]:
    """Additive attention mask and position ids to feed ``n_lin`` sequence tokens then a tree.

    The ``n_lin`` tokens continue ``n_cached`` cached ones causally; each node sees the cache, the
    ``n_lin`` tokens and its own ancestors (itself included), at position ``n_cached + n_lin - 1 +
    depth``. Returns the mask (1, 1, T, n_cached + T), 0 where allowed and the dtype's minimum
    elsewhere, and the positions (1, T), with T = n_lin + len(parents).
    """
    depth = check_parents(parents)
    n = len(parents)
    anc = ancestors(parents)                                             # (N, N)
    t = n_lin + n
    ok = np.zeros((t, n_cached + t), dtype=bool)                         # (T, n_cached + T)
    ok[:, :n_cached] = True
    ok[:n_lin, n_cached:n_cached + n_lin] = np.tril(np.ones((n_lin, n_lin), dtype=bool))
    ok[n_lin:, n_cached:n_cached + n_lin] = True
    ok[n_lin:, n_cached + n_lin:] = anc
    allowed = torch.from_numpy(ok).to(device)
    mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill_(~allowed, torch.finfo(dtype).min)
    pos = list(range(n_cached, n_cached + n_lin)) + [n_cached + n_lin - 1 + d for d in depth]
    return mask[None, None], torch.tensor([pos], dtype=torch.long, device=device)


@dataclass
class TreeReview:
    """Outcome of one tree review."""
    path: list[int]            # accepted nodes, root first
    next_token: int            # correction after the path (some child rejected) or bonus (a leaf reached)
    bonus: bool                # True when the path ends at a leaf
    accept_prob: list[float]   # per node, min(1, r(x)/q(x)) where it was reviewed (NaN: not reviewed)


def review_tree_greedy(logits: torch.Tensor, tokens: list[int], parents: list[int]) -> TreeReview:
    """Greedy tree review from the reviewer's logits (N + 1, V): the argmax path and the argmax after it."""
    best = logits.argmax(-1).tolist()                                    # (N + 1,)
    kids = children(parents)
    acc = [float("nan")] * len(tokens)
    u, path = -1, []
    while True:
        nxt = best[u + 1]
        for j in kids[u]:
            acc[j] = float(tokens[j] == nxt)
        hit = next((j for j in kids[u] if tokens[j] == nxt), None)
        if hit is None:
            return TreeReview(path, nxt, not kids[u], acc)
        path.append(hit)
        u = hit


def review_tree(p: torch.Tensor, tokens: list[int], parents: list[int], q: torch.Tensor | None,
                generator: torch.Generator | None = None, naive: bool = False) -> TreeReview:
    """Sampling tree review: ``p`` (N + 1, V) the reviewer's rows, ``q`` (N, V) the law each node's token
    was drawn from (None: all one-hot). Uniforms and draws use ``generator`` on the CPU.

    ``naive=True`` is the deliberately wrong sibling rule (every sibling judged against the
    unchanged ``p_u``, the final draw from the residual against the last sibling only): a negative
    control, biased as soon as a node has two children.
    """
    p = p.detach().to("cpu", torch.float64)
    q = None if q is None else q.detach().to("cpu", torch.float64)
    kids = children(parents)
    acc = [float("nan")] * len(tokens)
    u, path = -1, []
    while True:
        r = last = p[u + 1]
        for j in kids[u]:
            x = tokens[j]
            qx = 1.0 if q is None else float(q[j, x])
            acc[j] = min(1.0, float(r[x]) / max(qx, 1e-300))
            if float(torch.rand(1, generator=generator, dtype=torch.float64, device=p.device)) < acc[j]:
                path.append(j)
                break
            last = residual(r, None if q is None else q[j], x)   # norm(max(0, r - q_j))
            r = r if naive else last
        else:
            draw = last if naive else r
            return TreeReview(path, int(torch.multinomial(draw, 1, generator=generator)), not kids[u], acc)
        u = path[-1]

def tree_candidates(head_logits: torch.Tensor, tree: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Token paths of a rank tree for one position: node ``(r_0, .., r_d)`` -> (top_{r_0}(head 0), ..).

    ``head_logits`` (H, V) are Medusa heads' logits at the last accepted row (squeezed): head ``i``
    ranks the token ``2 + i`` positions after it, so the paths continue after the target's own next
    token (the argmax of its logits at that row), which the caller puts first; same order as ``tree``.
    """
    if head_logits.dim() == 3 and head_logits.shape[1] == 1:
        head_logits = head_logits[:, 0]                                  # (H, V)
    if head_logits.dim() != 2:
        raise ValueError(f"head_logits must be (H, V) for one position, got {tuple(head_logits.shape)}")
    depth = max((len(p) for p in tree), default=0)
    if depth > head_logits.shape[0]:
        raise ValueError(f"the tree is {depth} deep but there are only {head_logits.shape[0]} heads")
    k = max((r for p in tree for r in p), default=-1) + 1
    top = torch.topk(head_logits[:depth], k, dim=-1).indices.tolist()  # (depth, k)
    return [tuple(top[i][r] for i, r in enumerate(p)) for p in tree]
