"""The tree methods: a target reviews a token tree in one call (engine/tree.py) built by a drafter.

- ``tree-sd``: one drafter builds the tree depth by depth, one call per depth (the tree so far
  scored with tree attention): under every node its first choice, and its second where the
  first has probability below ``branch_below``.
- ``medusa``: the target's own Medusa heads propose a rank tree (Medusa's standard tree, cut to
  the tree budget) under the target's next token; the target's tree call also gives the hidden
  state the heads read for the next round.
- ``csd-tree``: the cascade (drafters + MaG) drafts the main chain as ``csd`` does; beside a chain
  token hang the drafter's second choice (where its choice had probability below ``branch_below``)
  and the tokens that followed MaG's other matches of the suffix there.

Every node is kept within the tree budget (most nodes per depth). Which nodes a tree holds
depends only on the nodes above them and on earlier siblings, never on a node's own token
(candidates are ranked by (choice rank, parent order)), so the tree review stays exact under
sampling; second choices and Medusa's candidates are deterministic given what precedes them
(one-hot ``q``), tree-sd's sampled nodes carry the law they were drawn from.
"""
from __future__ import annotations

import numpy as np
import torch

from .generation import TARGET_BONUS, TARGET_CORRECTION, Event
from .levels import Block, Ctx, Level
from .mag import MATCH, MaG, continuations
from .review import probs
from .stats import PairStats
from .tree import children, review_tree, review_tree_greedy, tree_candidates


class TreeTop(Level):
    """The target reviewing a token tree per call; each tree method's ``propose`` builds its tree."""

    def __init__(self, lm, subs, budget: tuple[int, ...], branch_below: float = 1.0, budgets=()):
        super().__init__(lm, subs, list(budgets), top=True)
        self.budget, self.branch_below = tuple(budget), float(branch_below)

    def _review(self, ctx: Ctx, seq, tokens, parents, q, hidden: bool = False):
        out = self.lm.tree_logits(seq, tokens, parents, hidden=hidden)
        logits = out[0] if hidden else out
        if ctx.greedy:
            r = review_tree_greedy(logits, tokens, parents)
        else:
            r = review_tree(probs(logits, ctx.temperature), tokens, parents, q, ctx.generator, ctx.naive)
        self.lm.keep_path(r.path)
        return (r, out[1]) if hidden else (r, None)

    def _emit(self, ctx: Ctx, prefix, tokens, parents, prov, who, branch, r) -> Block:
        """Log the review and hand up the accepted path plus the target's token (none after an EOS).

        ``prov`` says who drafted each node (as in a chain), ``who`` the level below the target it came
        through (the acceptance key), ``branch`` its choice rank. Each key counts per depth (a depth is
        accepted when one of its nodes is) and per node place (:meth:`PairStats.add_branch`: depth, siblings and
        rank, every sibling tried in order up to the accepted one; the siblings' node order is their choice rank)."""
        path = r.path
        out = [tokens[i] for i in path]
        own: list[str] = []
        if not (out and out[-1] == ctx.eos):
            out.append(r.next_token)
            own = [TARGET_BONUS if r.bonus else TARGET_CORRECTION]
        kids = children(parents)
        for d, u in enumerate([-1, *path]):  # the children of the root and of every accepted node, in order
            nxt = path[d] if d < len(path) else None
            for b, j in enumerate(kids[u]):
                st = ctx.acceptance.setdefault(f"{self.name}<-{who[j]}", PairStats())
                st.add_branch(d, len(kids[u]), b, j == nxt)
                if j == nxt:
                    break
        for d, i in enumerate(path):  # per depth: accepted, then the first rejected depth (if it had children)
            ctx.acceptance.setdefault(f"{self.name}<-{who[i]}", PairStats()).add(d, True)
        rejected = kids[path[-1] if path else -1]
        if rejected:  # (an accepted EOS node has none: nothing is drafted after EOS)
            ctx.acceptance.setdefault(f"{self.name}<-{who[rejected[0]]}", PairStats()).add(len(path), False)
        ctx.events.append(Event(len(ctx.events), 0, self.name, len(prefix), list(tokens), list(prov), who,
                                r.accept_prob, len(path), r.next_token, r.bonus, 1.0,
                                parents=list(parents), path=list(path), branch=list(branch)))
        return Block(out, None, [prov[i] for i in path] + own, out[-1] == ctx.eos,
                     branch=[branch[i] for i in path] + [0] * len(own))


class CSDTree(TreeTop):
    """``csd-tree``: the cascade below the target (``subs``, ``budgets`` = K's first row) drafts the main
    chain; beside a chain token hang, as leaves and within the budget at that depth (depths past the
    budget keep the chain only), the drafter's second choice (:attr:`Block.alts`), then the tokens that
    followed MaG's other matches of the suffix there (:func:`csd_lib.engine.mag.continuations`)."""

    def __init__(self, lm, subs, budget, branch_below: float = 1.0, budgets=(), mag: MaG | None = None):
        super().__init__(lm, subs, budget, branch_below, budgets)
        self.mag = mag

    def propose(self, ctx: Ctx, prefix: list[int], cap: int, depth: int = 0) -> Block:
        chain, blocks, prov, who, _ = self._draft(ctx, prefix, cap - 1, depth)
        alts = [a for b in blocks for a in (b.alts or [None] * len(b.tokens))]
        tokens, parents, branch = list(chain), list(range(-1, len(chain) - 1)), [0] * len(chain)
        nprov, nwho = list(prov), list(who)
        src = list(range(len(chain)))  # the chain token whose row of q each node reuses
        for d in range(min(len(chain), len(self.budget))):
            beside = [(alts[d], who[d], who[d])] if alts[d] is not None else []
            if self.mag is not None and self.budget[d] > 1 + len(beside):
                ctx.mag_calls += 1
                hay = np.asarray(ctx.prompt + prefix + chain[:d], dtype=np.int64)
                beside += [(t, MATCH, "mag") for t in continuations(hay, self.mag.max_match)]
            seen = {chain[d]}
            for t, p, w in beside:
                if t in seen or len(seen) >= self.budget[d]:
                    continue
                seen.add(t)
                tokens.append(t)
                parents.append(d - 1)
                nprov.append(p)
                nwho.append(w)
                branch.append(len(seen) - 1)
                src.append(-1)
        order = sorted(range(len(tokens)), key=lambda i: (_depth_of(parents, i), branch[i]))  # parents first
        tokens, parents, nprov, nwho, branch, src = _reorder(order, tokens, parents, nprov, nwho, branch, src)
        q = None
        if not ctx.greedy and tokens:
            rows = [None if b.q is None else b.q[i] for b in blocks for i in range(len(b.tokens))]
            q = _node_q(rows, tokens, src, self.lm.vocab_size)
        r, _ = self._review(ctx, self.base + prefix, tokens, parents, q)
        return self._emit(ctx, prefix, tokens, parents, nprov, nwho, branch, r)


def _depth_of(parents: list[int], i: int) -> int:
    d = 0
    while i >= 0:
        i, d = parents[i], d + 1
    return d


def _reorder(order: list[int], tokens, parents, *per_node):
    """The nodes in ``order`` (a parent before its children), parents renumbered, and each per-node list."""
    new = {old: i for i, old in enumerate(order)}
    return ([tokens[i] for i in order], [-1 if parents[i] < 0 else new[parents[i]] for i in order],
            *([col[i] for i in order] for col in per_node))


def _node_q(chain_q: list, tokens: list[int], src: list[int], vocab: int) -> torch.Tensor:
    """Each node's proposal law (N, V): its chain token's row (None: one-hot), or one-hot (second choices)."""
    q = torch.zeros(len(tokens), vocab, dtype=torch.float64, device="cpu")  # (N, V) where the tree review runs
    for i, (t, j) in enumerate(zip(tokens, src)):
        if j >= 0 and chain_q[j] is not None:
            q[i] = chain_q[j].to("cpu", torch.float64)
        else:
            q[i, t] = 1.0
    return q


def _keep(cands: list[tuple], budget: int) -> list[tuple]:
    """The first ``budget`` candidates by (choice rank, parent order): never by their own token."""
    return sorted(cands, key=lambda c: (c[0], c[1]))[:budget]


class TreeSD(TreeTop):
    """``tree-sd``: the one drafter (``subs[0]``, a plain level) builds the tree, one call per depth."""

    def propose(self, ctx: Ctx, prefix: list[int], cap: int, depth: int = 0) -> Block:
        """Grow a tree of depth < ``cap``, review it in one target call, return the path + one token."""
        tokens, parents, q, prov, branch = self.grow(ctx, prefix, cap - 1)
        r, _ = self._review(ctx, self.base + prefix, tokens, parents, q)
        return self._emit(ctx, prefix, tokens, parents, prov, prov, branch, r)

    def grow(self, ctx: Ctx, prefix, depth_cap):
        """(tokens, parents, q (N, V) or None, provenance, branch) of the drafter's tree, at most ``depth_cap`` deep."""
        d_lv = self.subs[0]
        tokens, parents, rows, branch = [], [], [], []
        frontier = [-1]
        for width in self.budget[:max(0, depth_cap)]:
            logits = d_lv.lm.tree_logits(d_lv.base + prefix, tokens, parents)  # (N + 1, V)
            cands = []
            for order, u in enumerate(frontier):
                if u >= 0 and tokens[u] == ctx.eos:
                    continue  # nothing follows an EOS
                pr = probs(logits[u + 1], ctx.temperature if not ctx.greedy else 1.0)  # (V,)
                for rank, (x, qrow) in enumerate(_choices(pr, ctx, self.branch_below)):
                    cands.append((rank, order, u, x, qrow))
            kept = _keep(cands, width)
            if not kept:
                break
            frontier = []
            for rank, _, u, x, qrow in kept:
                frontier.append(len(tokens))
                tokens.append(x)
                parents.append(u)
                rows.append(qrow)
                branch.append(rank)
        q = None if ctx.greedy or not rows else torch.stack(rows)  # (N, V)
        return tokens, parents, q, [d_lv.name] * len(tokens), branch


def _choices(pr: torch.Tensor, ctx: Ctx, branch_below: float) -> list[tuple[int, torch.Tensor | None]]:
    """A drafter's choices under one node, each with the law it was drawn from (greedy: None).

    Greedy: the argmax, and the runner-up where the argmax has probability below ``branch_below``.
    Sampling: a draw from ``pr``, and (same condition, on ``pr`` only) a second draw without
    replacement (``pr`` without the first, renormalized).
    """
    unsure = float(pr.max()) < branch_below
    if ctx.greedy:
        top = torch.topk(pr, 2 if unsure and pr.numel() > 1 else 1).indices.tolist()
        return [(x, None) for x in top]
    x1 = int(torch.multinomial(pr.detach().cpu(), 1, generator=ctx.generator))
    out = [(x1, pr)]
    rest = pr.clone()
    rest[x1] = 0
    if unsure and float(rest.sum()) > 0:
        rest = rest / rest.sum()
        out.append((int(torch.multinomial(rest.detach().cpu(), 1, generator=ctx.generator)), rest))
    return out


class MedusaTop(TreeTop):
    """``medusa``: the heads (``(rows, D) -> (H, rows, V)``, with ``trees``) propose under the target's token.

    The round after the prompt has no heads' logits yet: it is one plain target call (an empty tree).
    """

    def __init__(self, lm, heads, budget: tuple[int, ...]):
        super().__init__(lm, [], budget)
        self.heads = heads
        self.paths = _cut(heads.trees[max(heads.trees)], budget)
        self._at: tuple[int, torch.Tensor] | None = None  # (len(prefix), heads' logits (H, V)) for the next tree

    def start(self, prompt: list[int]) -> None:
        super().start(prompt)
        self._at = None

    def propose(self, ctx: Ctx, prefix: list[int], cap: int, depth: int = 0) -> Block:
        tokens, parents, branch = [], [], []
        if self._at is not None and self._at[0] == len(prefix):
            paths = [p for p in self.paths if len(p) <= cap - 1]  # prefix-closed: a parent is never deeper
            kept = [(p, c) for p, c in zip(paths, tree_candidates(self._at[1], paths)) if ctx.eos not in c[:-1]]
            tokens, parents, branch = _rank_nodes([p for p, _ in kept], [c for _, c in kept])  # nothing under EOS
        r, hidden = self._review(ctx, self.base + prefix, tokens, parents, None, hidden=True)
        row = r.path[-1] + 1 if r.path else 0
        w = next(self.heads.parameters())
        with torch.inference_mode():
            head_logits = self.heads(hidden[row:row + 1].to(device=w.device, dtype=w.dtype))[:, 0].float()  # (H, V)
        n_out = len(r.path) + (0 if r.path and tokens[r.path[-1]] == ctx.eos else 1)
        self._at = (len(prefix) + n_out, head_logits)
        return self._emit(ctx, prefix, tokens, parents, ["medusa"] * len(tokens), ["medusa"] * len(tokens), branch, r)


def _rank_nodes(paths, cands) -> tuple[list[int], list[int], list[int]]:
    """Tokens, parents and branch (the head's rank) of a rank tree's nodes (``paths`` prefix-closed,
    ``cands`` their token paths)."""
    node_of: dict[tuple[int, ...], int] = {}
    tokens, parents, branch = [], [], []
    for path, toks in zip(paths, cands):
        node_of[path] = len(tokens)
        tokens.append(toks[-1])
        parents.append(-1 if len(path) == 1 else node_of[path[:-1]])
        branch.append(path[-1])
    return tokens, parents, branch


def _cut(paths, budget: tuple[int, ...]) -> list[tuple[int, ...]]:
    """A rank tree cut to a budget: per depth the first ``budget[d]`` paths (the tree's own order) whose
    parent is kept."""
    kept: list[tuple[int, ...]] = []
    used = [0] * len(budget)
    for p in paths:
        d = len(p) - 1
        if d < len(budget) and used[d] < budget[d] and (d == 0 or p[:-1] in kept):
            kept.append(tuple(p))
            used[d] += 1
    return kept

