"""What a generation returns: tokens, per-token provenance, the review log, stats and commit times.

Latency, defined once: a token's commit time is when the target's review handed it to the output
(seconds on the models' clock since the generation began, the prompt's setup included). The time to
first token (TTFT) is the first commit time; the inter-token latencies (ITL) are the gaps between
consecutive commit times, one per token after the first, so the tokens of one accepted block arrive
together (gaps of 0) and the wait falls on the first token of the next block.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from .plan import Plan
from .stats import Stats

TARGET_CORRECTION, TARGET_BONUS = "target-correction", "target-bonus"


@dataclass
class Event:
    """One review: ``reviewer`` checked ``tokens`` proposed by lower levels."""
    step: int                  # running index of reviews in this generation
    depth: int                 # 0 = the target's review, 1 = a drafter's review, ...
    reviewer: str
    start: int                 # index in the output where the reviewed block begins
    tokens: list[int]          # proposed tokens
    provenance: list[str]      # who proposed each token
    proposers: list[str]       # the immediate sub-drafter of each token (stats key)
    accept_prob: list[float]   # min(1, l p(x)/q(x)) per token
    n_accepted: int
    next_token: int
    bonus: bool
    lenience: float
    # Greedy reviews only (empty under sampling): what a replay under another lenience needs
    # (csd_lib.report.lenience_replay.replay_lenience). One entry per drafted token, every one, not only those reviewed.
    is_argmax: list[bool] = field(default_factory=list)  # the token is the reviewer's argmax at its position
    px: list[float] = field(default_factory=list)        # p(x), the reviewer's probability of it (T = 1)
    qx: list[float] = field(default_factory=list)        # q(x) it was proposed with (1 for MaG)
    # Tree reviews only (empty for a chain): ``tokens`` are the tree's nodes, in node order.
    parents: list[int] = field(default_factory=list)     # each node's parent (-1: the root)
    path: list[int] = field(default_factory=list)        # the accepted nodes, root first
    branch: list[int] = field(default_factory=list)      # each node's rank among its drafter's choices (0: first)
    # Chain reviews: the length the reviewer's draft-length policy asked for (csd_lib.engine.policy; K's row total
    # under fixed); ``len(tokens)`` is what was drafted (tokens left may cut it, a block overshoot it, a stop end it).
    draft_length: int = 0


def time_to_first_token(commit_times) -> float:
    """TTFT: the first token's commit time (NaN when nothing was committed)."""
    return float(commit_times[0]) if len(commit_times) else math.nan


def inter_token_latencies(commit_times) -> list[float]:
    """ITL: the gap before each token after the first (``len - 1`` values; 0 inside a committed block)."""
    return [float(b - a) for a, b in zip(commit_times[:-1], commit_times[1:])]


@dataclass
class Generation:
    """The result of every method: text, tokens, provenance, review log, stats and commit times."""
    text: str
    token_ids: list[int]
    provenance: list[str]
    events: list[Event]
    stats: Stats
    method: str
    plan: Plan
    commit_times: list[float] = field(default_factory=list)  # per output token: seconds since the start
    branch: list[int] = field(default_factory=list)  # per token: its drafter's choice rank (0: first; chains: all 0)

    @property
    def ttft(self) -> float:
        """Time to first token (:func:`time_to_first_token`)."""
        return time_to_first_token(self.commit_times)

    @property
    def itl(self) -> list[float]:
        """Inter-token latencies (:func:`inter_token_latencies`)."""
        return inter_token_latencies(self.commit_times)

    def to_dict(self, events: bool = False) -> dict:
        d = {"method": self.method, "plan": self.plan.to_dict(), "text": self.text,
             "token_ids": self.token_ids, "provenance": self.provenance, "branch": self.branch,
             "stats": self.stats.to_dict(), "commit_times": self.commit_times}
        if events:
            d["events"] = [asdict(e) for e in self.events]
        return d

    def draft_lengths(self, depth: int = 0) -> list[int]:
        """Tokens drafted for each review at ``depth`` (0: the target's, one per round), in order: the lengths a
        draft-length policy (:mod:`csd_lib.engine.policy`) gave over this generation."""
        return [len(e.tokens) for e in self.events if e.depth == depth]

    def provenance_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.provenance:
            out[p] = out.get(p, 0) + 1
        return out
