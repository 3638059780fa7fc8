"""The levels of Algorithm 1 behind one drafter interface (``csd_lib.engine.cascade`` builds and runs them).

Every drafter answers ``propose(ctx, prefix, cap, depth) -> Block``:

- ``MaGLevel``: the statistical bottom, proposes ``n`` tokens with one-hot ``q``;
- ``Level``: a model that reviews what its sub-drafters propose, then returns the
  accepted prefix plus one token of its own. A ``Level`` with no sub-drafters decodes one
  token autoregressively.

K holds increments (docs/REFERENCE.md): the level reviewed with row ``K[i]`` lets sub-drafter
``j`` propose until the draft holds at least ``K[i][i] + ... + K[i][j]`` tokens.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from .generation import TARGET_BONUS, TARGET_CORRECTION, Event
from .mag import MaG
from .models import LM
from .plan import MAG, MAG_LENIENCE
from .policy import DraftLength
from .review import Lenience, effective_q, is_lenient, probs, review, review_greedy
from .stats import PairStats

__all__ = ["Ctx", "Block", "Drafter", "MaGLevel", "Level"]


@dataclass
class Ctx:
    """Per-generation state shared by all levels."""
    prompt: list[int]
    greedy: bool
    temperature: float
    generator: torch.Generator | None
    eos: int | None
    naive: bool = False
    events: list[Event] = field(default_factory=list)
    acceptance: dict[str, PairStats] = field(default_factory=dict)
    mag_calls: int = 0
    branch_below: float = 0.0  # csd-tree: drafters under the target name a second choice below this (0: never)


@dataclass
class Block:
    """Tokens a drafter hands up, with the distribution each was drawn from.

    Sampling reviews need ``q`` (m, V); greedy reviews need only ``qx`` (m,), q at the tokens
    themselves. ``None`` means one-hot (MaG) in both, never materialized.
    """
    tokens: list[int]
    q: torch.Tensor | None       # (m, V) proposal distribution per token (sampling); None: one-hot
    provenance: list[str]
    eos: bool = False            # the block ends with EOS: nothing may be drafted after it
    qx: list[float] | None = None  # q(token) per token (greedy); None: one-hot (all 1)
    branch: list[int] | None = None  # tree methods: each token's choice rank (0: first); None: all 0
    alts: list[int | None] | None = None  # csd-tree: per token, the drafter's second choice there (None: sure)


class Drafter(Protocol):
    """Anything that drafts for the level above: MaG or a model level."""
    name: str

    def propose(self, ctx: Ctx, prefix: list[int], cap: int, depth: int) -> Block: ...


class MaGLevel:
    """MaG as a drafter."""

    def __init__(self, mag: MaG, vocab_size: int):
        mag.check_vocab(vocab_size)
        self.mag, self.name, self.vocab_size = mag, MAG, vocab_size

    def propose(self, ctx: Ctx, prefix: list[int], cap: int, depth: int) -> Block:
        hay = np.asarray(ctx.prompt + prefix, dtype=np.int64)
        prop = self.mag.lookup(hay, min(self.mag.n, cap))
        ctx.mag_calls += 1
        toks, prov = prop.tokens, prop.provenance
        eos = ctx.eos is not None and ctx.eos in toks
        if eos:
            cut = toks.index(ctx.eos) + 1
            toks, prov = toks[:cut], prov[:cut]
        return Block(toks, None, prov, eos)  # q one-hot: None


class Level:
    """A model that reviews its sub-drafters' proposals (Algorithm 1, one level)."""

    def __init__(self, lm: LM, subs: list[Drafter], budgets: list[int], lenience: float = 1.0, top: bool = False,
                 mag_lenience: bool = MAG_LENIENCE, policy: DraftLength | None = None):
        self.lm, self.subs, self.budgets = lm, subs, list(budgets)
        self.lenience = 1.0 if top else float(lenience)  # the target's review is always strict
        self.mag_lenience = bool(mag_lenience)  # False: MaG's tokens are reviewed strictly (the paper)
        self.top, self.name = top, lm.name
        self.thresholds = np.cumsum(self.budgets).tolist() if self.budgets else []
        # how far each round drafts (csd_lib.engine.policy; default: K as given)
        self.policy = policy if policy is not None else DraftLength(thresholds=self.thresholds)
        self.base: list[int] = []  # decoder sequence before any output token, set per prompt by start()

    def start(self, prompt: list[int]) -> None:
        """Begin a generation: a fresh meter and policy, and the model's sequence before any output token."""
        self.lm.meter.reset()
        self.policy.start()
        self.base = self.lm.start(prompt)

    def _draft(self, ctx: Ctx, prefix: list[int], limit: int, depth: int):
        tokens: list[int] = []
        blocks: list[Block] = []
        prov: list[str] = []
        who: list[str] = []
        eos = stop = False
        keys = [f"{self.name}<-{sub.name}" for sub in self.subs]
        limit = self.policy.limit(limit, ctx.acceptance, keys)  # this round's length (fixed: as K says)
        for sub, thr in zip(self.subs, self.thresholds):
            thr = min(thr, limit)
            while len(tokens) < thr and not (eos or stop):
                blk = sub.propose(ctx, prefix + tokens, limit - len(tokens), depth + 1)
                tokens += blk.tokens
                blocks.append(blk)
                prov += blk.provenance
                who += [sub.name] * len(blk.tokens)
                eos, stop = blk.eos, self.policy.stops(blk)
            if eos or stop:
                break
        return tokens, blocks, prov, who, eos

    def propose(self, ctx: Ctx, prefix: list[int], cap: int, depth: int = 0) -> Block:
        """Draft with the sub-drafters, review once, return accepted tokens + one more."""
        tokens, blocks, prov, who, eos = self._draft(ctx, prefix, cap - 1, depth)
        m = len(tokens)
        logits = self.lm.logits(self.base + prefix + tokens, m)  # (m+1, V) on the model's device
        lam = self._lenience_at(who)
        if ctx.greedy:  # no softmax over the vocabulary, no dense q
            qx = [v for b in blocks for v in ([1.0] * len(b.tokens) if b.qx is None else b.qx)]
            r, p_out = review_greedy(logits, tokens, qx, lam)
        else:
            x = torch.tensor(tokens, dtype=torch.long, device=logits.device)  # (m,)
            p = probs(logits, ctx.temperature)                   # (m+1, V)
            q = _stack_q(blocks, p)                              # (m, V) or None (all one-hot)
            if isinstance(lam, list):
                lam = torch.tensor(lam, dtype=p.dtype, device=p.device)  # (m,)
            r = review(p, x, q, lam, False, ctx.generator)
        a = r.n_accepted
        self.policy.update(m, a)
        self._log(ctx, depth, prefix, tokens, prov, who, r, qx if ctx.greedy else None)
        if a == m and eos:  # the draft ended with an accepted EOS: nothing follows it
            out, own = tokens, []
        else:
            out = tokens[:a] + [r.next_token]
            own = [(TARGET_BONUS if r.bonus else TARGET_CORRECTION) if self.top else self.name]
        if self.top:
            return Block(out, None, prov[:a] + own, out[-1] == ctx.eos)
        alts = _second_choices(logits, out, ctx.branch_below) if ctx.branch_below > 0 and depth == 1 else None
        if ctx.greedy:  # the level above reads q at these tokens only: this reviewer's p there
            return Block(out, None, prov[:a] + own, out[-1] == ctx.eos, qx=p_out[:len(out)], alts=alts)
        return Block(out, self._q_up(ctx, p, q, x, lam, len(out)), prov[:a] + own, out[-1] == ctx.eos, alts=alts)

    def _lenience_at(self, who: list[str]) -> float | list[float]:
        """This review's lenience: one number, or one per drafted position when MaG's are strict."""
        if self.lenience == 1 or self.mag_lenience or MAG not in who:
            return self.lenience
        return [1.0 if w == MAG else self.lenience for w in who]

    def _q_up(self, ctx: Ctx, p: torch.Tensor, q, x: torch.Tensor, lam: Lenience, n_out: int) -> torch.Tensor:
        """Distribution of each emitted token given the history, for the level above (n_out, V).

        Greedy decoding passes the reviewer's own p up (as the official code does; only at the
        emitted tokens, see ``propose``); so does the deliberately wrong ``naive`` variant under
        sampling. Exact sampling needs ``effective_q`` for drafted positions (each with its own
        lenience); a bonus token was drawn from ``p`` itself.
        """
        n = min(n_out, x.numel())  # emitted positions that had a draft
        if ctx.naive or n == 0 or not is_lenient(lam):
            return p[:n_out]
        per_row = isinstance(lam, torch.Tensor)
        rows = effective_q(p[:n], None if q is None else q[:n], x[:n], lam[:n] if per_row else lam)
        return torch.cat([rows, p[n:n_out]]) if n_out > n else rows

    def _log(self, ctx: Ctx, depth, prefix, tokens, prov, who, r, qx=None) -> None:
        """Count the review per pair and log it; a greedy review (``qx`` given) also logs, per drafted
        token, whether it is the argmax and p(x), q(x): what a replay under another lenience needs
        (the numbers the review decided with, carried by ``r``: no second pass over the logits)."""
        a, m = r.n_accepted, len(tokens)
        for i in range(min(a + 1, m)):
            key = f"{self.name}<-{who[i]}"
            st = ctx.acceptance.get(key)
            if st is None:
                st = ctx.acceptance[key] = PairStats()
            st.add(i, i < a)
        best, px = [], []
        if qx is not None and m:  # the same numbers review_greedy decided with
            best, px = r.best, r.px
        ctx.events.append(Event(len(ctx.events), depth, self.name, len(prefix), tokens, prov, who,
                                r.accept_prob.tolist(), a, r.next_token, r.bonus, self.lenience,
                                [t == b for t, b in zip(tokens, best)], px, list(qx or []),
                                draft_length=self.policy.last))


def _second_choices(logits: torch.Tensor, out: list[int], branch_below: float) -> list[int | None]:
    """Per emitted token (row i of ``logits``, (>= n, V)): this reviewer's best other token where its
    probability of the emitted one (T = 1) is below ``branch_below``; None where it is sure."""
    n = len(out)
    lp = torch.log_softmax(logits[:n].float(), dim=-1)                       # (n, V)
    top2 = torch.topk(lp, 2, dim=-1).indices.tolist()                         # (n, 2)
    pe = lp.gather(1, torch.tensor(out, device=lp.device)[:, None])[:, 0].exp().tolist()  # (n,)
    return [None if pe[i] >= branch_below else (top2[i][0] if top2[i][0] != out[i] else top2[i][1])
            for i in range(n)]


def _stack_q(blocks: list[Block], p: torch.Tensor) -> torch.Tensor | None:
    """The blocks' proposal rows (m, V) on p's device; None when every block is MaG's (one-hot).

    A mix of MaG and model blocks (only under sampling) gets MaG's one-hot rows written out.
    """
    if all(b.q is None for b in blocks):
        return None
    rows = []
    for b in blocks:
        if b.q is None:
            oh = torch.zeros(len(b.tokens), p.shape[-1], dtype=p.dtype, device=p.device)  # (n, V)
            rows.append(oh.scatter_(1, torch.tensor(b.tokens, device=p.device)[:, None], 1.0))
        else:
            rows.append(b.q.to(p.device))
    return torch.cat(rows)
