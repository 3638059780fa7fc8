"""Draft-length policies: how far a level drafts in each round (the plan's ``draft_policy``, one per K row).

Row ``r`` of K is read by one reviewing level (row 0: the target; row ``i``: drafter ``i - 1`` reviewing
``drafters[i:]``); its running sums ``t_1 <= ... <= t_J`` say where each sub-drafter stops (docs/REFERENCE.md).
A policy picks, per round, the draft length ``n``: sub-drafter ``j`` proposes while the draft holds fewer than
``min(t_j, n)`` tokens, and no block goes past ``n`` (blocks are cut to the room left). So under every adaptive
policy **K's row total** ``t_J`` **is both the starting length and the upper bound** of that level's draft, and a
shorter round cuts the horizontal cascade's tail (its cheapest drafters) first. Only ``fixed`` lets a block
overshoot ``t_J`` (MaG proposes its whole block past its threshold, as the paper's code does).

- ``fixed``: ``n = t_J`` every round: K as given (the default; generations are exactly today's).
- ``schedule``: transformers' assisted-generation rule: ``n`` starts at ``t_J``; after a round in which every
  drafted token was accepted it grows by 2, after any other round it shrinks by 1, within ``[1, t_J]``.
- ``confidence``: ``n = t_J``, but the draft ends after a neural sub-drafter's block whose last token came from a
  distribution with top-1 probability below the plan's ``confidence`` (transformers' confidence threshold). MaG
  proposes without probabilities (one-hot ``q``): it never ends a draft, so what MaG drafts follows K as fixed.
- ``ewif``: ``n`` maximises the expected tokens per unit cost (:func:`tokens_per_cost`, Thm 4.5's horizontal
  EWIF) given each sub-drafter's acceptance seen so far in this generation at this level (a running estimate
  with a Beta prior, :data:`PRIOR`) and its call's cost relative to this level's (the plan's ``draft_costs``).

Every policy decides ``n`` and a stop from what came before the tokens it cuts (earlier rounds, the drafted
prefix), never from the review to come, so the reviews stay exact: greedy output is the target's, sampling
follows its law (tests/engine/test_policy_lossless.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

POLICIES = ("fixed", "schedule", "confidence", "ewif")
FIXED = POLICIES[0]
CONFIDENCE = 0.4          # the confidence policy's default threshold (top-1 probability)
SCHEDULE_UP, SCHEDULE_DOWN = 2, 1  # transformers' schedule: +2 after a full accept, -1 otherwise
PRIOR = (1.0, 1.0)        # ewif: Beta(accepted, rejected) pseudo-counts of each sub-drafter's acceptance


def expected_tokens(alphas) -> np.ndarray:
    """Expected tokens of one review per draft length ``n = 0..N`` (N + 1,): ``1 + sum_{i<=n} prod_{j<=i} alpha_j``
    (``alphas[i]``: acceptance of drafted position ``i + 1`` given the ones before it)."""
    a = np.asarray(alphas, dtype=float).ravel()
    return 1.0 + np.concatenate([[0.0], np.cumsum(np.cumprod(a))])


def tokens_per_cost(alphas, costs) -> float:
    """Thm 4.5's horizontal EWIF: expected tokens of a review over its cost, ``(1 + sum_i prod_{j<=i} alpha_j) /
    (1 + sum_i c_i)``; ``costs[i]``: what drafting position ``i + 1`` costs, one reviewer call being 1."""
    c = np.asarray(costs, dtype=float).ravel()
    return float(expected_tokens(alphas)[-1] / (1.0 + c.sum()))


def best_length(alphas, costs) -> int:
    """The draft length ``n`` in ``1..N`` with the most expected tokens per cost (:func:`tokens_per_cost` of the
    first ``n`` positions); the shortest of equals."""
    c = np.asarray(costs, dtype=float).ravel()
    ratio = expected_tokens(alphas)[1:] / (1.0 + np.cumsum(c))  # (N,)
    return int(np.argmax(ratio)) + 1


@dataclass
class DraftLength:
    """One level's draft-length policy and its state over one generation.

    ``thresholds``: the level's running K sums per sub-drafter (``t_j``); ``costs``: per sub-drafter, one of its
    calls relative to one call of this level (ewif only). :attr:`last` is the length the latest round asked for.
    """
    kind: str = FIXED
    thresholds: list[int] = field(default_factory=list)
    confidence: float = CONFIDENCE
    costs: list[float] = field(default_factory=list)
    n: int = 0
    last: int = 0

    def __post_init__(self):
        if self.kind not in POLICIES:
            raise ValueError(f"unknown draft policy {self.kind!r}; use one of {', '.join(POLICIES)}")
        self.top = int(self.thresholds[-1]) if self.thresholds else 0
        lows = [0, *self.thresholds[:-1]]
        self.owner = [j for j, (lo, hi) in enumerate(zip(lows, self.thresholds)) for _ in range(max(0, hi - lo))]
        self.start()

    def start(self) -> None:
        """A new generation: the schedule starts again at K's row total."""
        self.n = self.last = self.top

    def limit(self, limit: int, acceptance: dict, keys: list[str]) -> int:
        """The most tokens this round drafts, given ``limit`` (the room left): under fixed ``limit`` itself (K's
        thresholds stop each sub-drafter; a block may overshoot them), else also at most this round's length.
        ``acceptance[keys[j]]`` (a :class:`~csd_lib.engine.stats.PairStats`, if any) counts the reviews of
        sub-drafter ``j`` at this level so far (ewif reads it)."""
        if self.kind == "ewif" and self.top > 0:
            rates = [_rate(acceptance.get(key)) for key in keys]
            self.n = best_length([rates[j] for j in self.owner], [self.costs[j] for j in self.owner])
        self.last = self.n
        return limit if self.kind == FIXED else min(limit, self.n)

    def stops(self, block) -> bool:
        """Whether the draft ends after ``block`` (confidence only: its last token's law had top-1 below the
        threshold; MaG's one-hot blocks never stop it)."""
        if self.kind != "confidence" or not block.tokens:
            return False
        if block.q is not None:
            return float(block.q[-1].max()) < self.confidence
        return block.qx is not None and block.qx[-1] < self.confidence

    def update(self, drafted: int, accepted: int) -> None:
        """After a review of ``drafted`` tokens that accepted ``accepted``: the schedule's step."""
        if self.kind == "schedule" and drafted > 0:
            step = SCHEDULE_UP if accepted == drafted else -SCHEDULE_DOWN
            self.n = min(self.top, max(1, self.n + step))


def _rate(stats) -> float:
    """A sub-drafter's acceptance so far (accepted over reviewed positions) with the :data:`PRIOR` added."""
    acc, rej = PRIOR
    if stats is not None:
        acc += sum(stats.accepted)
        rej += sum(stats.reached) - sum(stats.accepted)
    return acc / (acc + rej)
