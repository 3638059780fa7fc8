"""What a generation returns: tokens, per-token provenance, the review log and stats."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .plan import Plan

TARGET_CORRECTION, TARGET_BONUS = "target-correction", "target-bonus"


@dataclass(frozen=True)
class CostTable:
    """Cost per forward call of each cascade role relative to the target, and where it comes from."""
    costs: dict[str, float]
    source: str


# The paper's "Speedup (PW)" metric prices each call with the T5 time costs reported by
# Leviathan et al. (2023), relative to T5-XXL: small 0.02, base 0.04, large 0.11, xxl 1.
# Each preset's table names its source; MaG costs 0 everywhere.
_T5_COST = {"small": 0.02, "base": 0.04, "large": 0.11, "xxl": 1.0}
PREVIOUS_WORK = {
    "flan-t5": CostTable({"target": 1.0, "base": 0.04, "small": 0.02, "mag": 0.0},
                         "Leviathan et al. (2023) T5 costs relative to T5-XXL, as quoted by the CSD paper"),
    "flan-t5-colab": CostTable({"target": 1.0, "base": _T5_COST["base"] / _T5_COST["large"],
                                "small": _T5_COST["small"] / _T5_COST["large"], "mag": 0.0},
                               "Leviathan et al. (2023) T5 costs rescaled to a T5-large target "
                               "(base 0.04/0.11, small 0.02/0.11)"),
    "vicuna": CostTable({"target": 1.0, "small": 68 / 7000, "mag": 0.0},
                        "no published per-call cost for a Llama drafter: the parameter ratio 68M/7B "
                        "(the paper's model-size table)"),
    "tiny-t5": CostTable({"target": 1.0, "base": 0.04, "small": 0.02, "mag": 0.0},
                         "the FLAN-T5-XXL table (Leviathan et al.) applied by role: what the paper's "
                         "costs would make of this cascade's calls, not the tiny models' own costs"),
    "tiny-llama": CostTable({"target": 1.0, "small": 0.02, "mag": 0.0},
                            "the FLAN-T5-XXL table's small-drafter cost (0.02) applied by role, not the "
                            "tiny models' own costs"),
}


def previous_work_costs(family: str, params: dict[str, int] | None = None) -> CostTable:
    """The previous-work cost table of a preset; other families get parameter-count ratios."""
    if family in PREVIOUS_WORK:
        return PREVIOUS_WORK[family]
    if not params or not params.get("target"):
        raise ValueError(f"family {family!r} has no previous-work cost table; pass its parameter counts "
                         f"(role -> params, with 'target') to use parameter ratios")
    costs = {k: v / params["target"] for k, v in params.items() if k != "mag"}
    return CostTable({**costs, "mag": 0.0}, "no published per-call costs: parameter-count ratios")


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
    # (csd_lib.claims.replay_lenience). One entry per drafted token, every one, not only those reviewed.
    is_argmax: list[bool] = field(default_factory=list)  # the token is the reviewer's argmax at its position
    px: list[float] = field(default_factory=list)        # p(x), the reviewer's probability of it (T = 1)
    qx: list[float] = field(default_factory=list)        # q(x) it was proposed with (1 for MaG)


@dataclass
class PairStats:
    """Per-position acceptance of one (reviewer, proposer) pair; position 0 = block start."""
    reached: list[int] = field(default_factory=list)   # the position was reviewed
    accepted: list[int] = field(default_factory=list)  # ... and accepted

    def add(self, pos: int, ok: bool) -> None:
        while len(self.reached) <= pos:
            self.reached.append(0)
            self.accepted.append(0)
        self.reached[pos] += 1
        self.accepted[pos] += int(ok)

    def conditional(self) -> list[float]:
        """P(accept at position i | positions before it accepted)."""
        return [a / r if r else float("nan") for a, r in zip(self.accepted, self.reached)]


@dataclass
class Stats:
    """Counts and timings of one generation."""
    n_tokens: int
    wall_time: float
    calls: dict[str, int]
    forward_time: dict[str, float]
    params: dict[str, int]
    acceptance: dict[str, PairStats]   # key "reviewer<-proposer"
    target: str = "target"
    previous_work_costs: dict[str, float] = field(default_factory=dict)  # role -> cost, see PREVIOUS_WORK

    @property
    def tokens_per_target_call(self) -> float:
        return self.n_tokens / max(1, self.calls.get(self.target, 0))

    @property
    def outside_forward_time(self) -> float:
        """Wall time not spent in model forwards (Python overhead of the method)."""
        return max(0.0, self.wall_time - sum(self.forward_time.values()))

    @property
    def outside_share(self) -> float:
        return self.outside_forward_time / self.wall_time if self.wall_time > 0 else 0.0

    def swi(self, costs: dict[str, float]) -> float:
        """Standardized walltime improvement: AR cost over this run's cost, same tokens."""
        spent = sum(n * costs.get(name, 0.0) for name, n in self.calls.items())
        return self.n_tokens * costs[self.target] / spent if spent > 0 else float("nan")

    def model_size_costs(self) -> dict[str, float]:
        """Cost per call proportional to parameter count (the paper's model-size metric)."""
        return {k: v / self.params[self.target] for k, v in self.params.items()}

    @property
    def swi_model_size(self) -> float:
        return self.swi(self.model_size_costs())

    @property
    def swi_previous_work(self) -> float:
        return self.swi(self.previous_work_costs) if self.previous_work_costs else float("nan")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["acceptance"] = {k: asdict(v) for k, v in self.acceptance.items()}
        d.update(tokens_per_target_call=self.tokens_per_target_call,
                 outside_forward_time=self.outside_forward_time, outside_share=self.outside_share,
                 swi_model_size=self.swi_model_size, swi_previous_work=self.swi_previous_work)
        return d


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

    def to_dict(self, events: bool = False) -> dict:
        d = {"method": self.method, "plan": self.plan.to_dict(), "text": self.text,
             "token_ids": self.token_ids, "provenance": self.provenance,
             "stats": self.stats.to_dict()}
        if events:
            d["events"] = [asdict(e) for e in self.events]
        return d

    def provenance_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.provenance:
            out[p] = out.get(p, 0) + 1
        return out
