"""What a generation returns: tokens, per-token provenance, the review log and stats."""
from __future__ import annotations

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
    # (csd_lib.report.claims.replay_lenience). One entry per drafted token, every one, not only those reviewed.
    is_argmax: list[bool] = field(default_factory=list)  # the token is the reviewer's argmax at its position
    px: list[float] = field(default_factory=list)        # p(x), the reviewer's probability of it (T = 1)
    qx: list[float] = field(default_factory=list)        # q(x) it was proposed with (1 for MaG)
    # Tree reviews only (empty for a chain): ``tokens`` are the tree's nodes, in node order.
    parents: list[int] = field(default_factory=list)     # each node's parent (-1: the root)
    path: list[int] = field(default_factory=list)        # the accepted nodes, root first
    branch: list[int] = field(default_factory=list)      # each node's rank among its drafter's choices (0: first)


@dataclass
class Generation:
    """The result of every method: text, tokens, provenance, review log and stats."""
    text: str
    token_ids: list[int]
    provenance: list[str]
    events: list[Event]
    stats: Stats
    method: str
    plan: Plan
    branch: list[int] = field(default_factory=list)  # per token: its drafter's choice rank (0: first; chains: all 0)

    def to_dict(self, events: bool = False) -> dict:
        d = {"method": self.method, "plan": self.plan.to_dict(), "text": self.text,
             "token_ids": self.token_ids, "provenance": self.provenance, "branch": self.branch,
             "stats": self.stats.to_dict()}
        if events:
            d["events"] = [asdict(e) for e in self.events]
        return d

    def provenance_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.provenance:
            out[p] = out.get(p, 0) + 1
        return out
