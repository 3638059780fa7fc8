"""What a generation counted: forward calls and their time per model, acceptance per position, and SWI.

:func:`swi` is the one definition of the standardized walltime improvement (the paper's metric): AR's
cost over a method's, every forward call priced by a per-call cost table.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


def call_cost(calls: dict[str, int], call_costs: dict[str, float]) -> float:
    """What ``calls`` ({model: forward calls}) cost, each call priced by ``costs`` ({model: cost per call};
    a model missing from it, such as MaG, costs 0)."""
    return sum(n * call_costs.get(name, 0.0) for name, n in calls.items())


def swi(n_tokens: float, calls: dict[str, int], call_costs: dict[str, float], target: str = "target") -> float:
    """Standardized walltime improvement: AR's cost for ``n_tokens`` (one ``target`` call each) over the cost
    of ``calls`` (:func:`call_cost`). Pooled generations: their summed tokens and calls."""
    spent = call_cost(calls, call_costs)
    return n_tokens * call_costs[target] / spent if spent > 0 else float("nan")


def pooled_swi(tokens, spent) -> float:
    """SWI of generations given as per-generation output tokens and :func:`call_cost` in target calls (costs
    relative to the target's): all their tokens over all their cost (NaN if nothing was spent)."""
    total = sum(spent)
    return sum(tokens) / total if total > 0 else float("nan")


def model_size_costs(params: dict[str, int], target: str = "target") -> dict[str, float]:
    """Cost per call proportional to parameter count (the paper's model-size metric), relative to ``target``."""
    return {k: v / params[target] for k, v in params.items()}


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
    nodes: dict[str, int] = field(default_factory=dict)  # model -> drafted tokens it scored (chains) or tree nodes

    @property
    def nodes_per_target_call(self) -> float:
        """Drafted tokens (a chain) or tree nodes the target verified per call."""
        return self.nodes.get(self.target, 0) / max(1, self.calls.get(self.target, 0))

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

    def swi(self, call_costs: dict[str, float]) -> float:
        """Standardized walltime improvement of this generation (:func:`swi`)."""
        return swi(self.n_tokens, self.calls, call_costs, self.target)

    def model_size_costs(self) -> dict[str, float]:
        """Cost per call proportional to parameter count (:func:`model_size_costs`)."""
        return model_size_costs(self.params, self.target)

    @property
    def swi_model_size(self) -> float:
        return self.swi(self.model_size_costs())

    @property
    def swi_previous_work(self) -> float:
        return self.swi(self.previous_work_costs) if self.previous_work_costs else float("nan")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["acceptance"] = {k: asdict(v) for k, v in self.acceptance.items()}
        d.update(tokens_per_target_call=self.tokens_per_target_call, nodes_per_target_call=self.nodes_per_target_call,
                 outside_forward_time=self.outside_forward_time, outside_share=self.outside_share,
                 swi_model_size=self.swi_model_size, swi_previous_work=self.swi_previous_work)
        return d
