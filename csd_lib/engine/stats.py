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
class BranchStats:
    """Acceptance at tree reviews per node place: its depth (0: the root's children), how many siblings share its
    parent (itself included) and its rank among them (0: tried first). A node is reached when its parent was
    accepted and every earlier sibling rejected, so the rates are the tree EWIF's conditional ones
    (:func:`csd_lib.price.ewif.expected_accepted_tree`; :func:`branch_rates`)."""
    counts: dict[str, list[int]] = field(default_factory=dict)  # "depth/siblings/rank" -> [reached, accepted]

    def add(self, depth: int, siblings: int, rank: int, ok: bool) -> None:
        c = self.counts.setdefault(f"{depth}/{siblings}/{rank}", [0, 0])
        c[0] += 1
        c[1] += int(ok)

    def merge(self, other) -> None:
        """Add ``other``'s counts (a BranchStats or its dict) to these."""
        for key, (r, a) in (other.counts if isinstance(other, BranchStats) else other["counts"]).items():
            c = self.counts.setdefault(key, [0, 0])
            c[0] += r
            c[1] += a

    def places(self) -> dict[tuple[int, int, int], tuple[int, int]]:
        """{(depth, siblings, rank): (reached, accepted)}."""
        return {tuple(int(v) for v in k.split("/")): (r, a) for k, (r, a) in self.counts.items()}


@dataclass
class PairStats:
    """Per-position acceptance of one (reviewer, proposer) pair; position 0 = block start. A tree review also
    counts its nodes per place (depth, siblings, rank) in ``branches`` (:class:`Stats` keeps those apart)."""
    reached: list[int] = field(default_factory=list)   # the position was reviewed
    accepted: list[int] = field(default_factory=list)  # ... and accepted
    branches: BranchStats | None = None

    def add(self, pos: int, ok: bool) -> None:
        while len(self.reached) <= pos:
            self.reached.append(0)
            self.accepted.append(0)
        self.reached[pos] += 1
        self.accepted[pos] += int(ok)

    def add_branch(self, depth: int, siblings: int, rank: int, ok: bool) -> None:
        """Count one reached tree node of this pair (:meth:`BranchStats.add`), accepted or not."""
        if self.branches is None:
            self.branches = BranchStats()
        self.branches.add(depth, siblings, rank, ok)

    def conditional(self) -> list[float]:
        """P(accept at position i | positions before it accepted)."""
        return [a / r if r else float("nan") for a, r in zip(self.accepted, self.reached)]


def branch_rates(stats, reviewer: str = "target", by_siblings: bool = False):
    """The tree EWIF's rates of ``reviewer``'s tree reviews, pooled over proposers and generations.

    ``stats``: :class:`Stats` or their dicts (a bench record's ``stats``). Returns ``rates[d][b]`` (depth ``d + 1``,
    rank ``b``: :func:`csd_lib.price.ewif.expected_accepted_tree`), or with ``by_siblings`` ``{s: rates}`` for nodes
    with ``s`` siblings (themselves included), each place never seen with ``s`` siblings filled from the pooled
    rates. Only reached places get a rate (a rank is reached only after the ranks before it); [] or {} when no
    tree review was counted."""
    pooled = BranchStats()
    for st in stats:
        branches = st.branches if isinstance(st, Stats) else st.get("branches", {})
        for key, b in branches.items():
            if key.split("<-")[0] == reviewer:
                pooled.merge(b)
    places = pooled.places()
    flat = _rate_rows([((d, b), ra) for (d, _, b), ra in places.items()])
    if not by_siblings:
        return flat
    out = {}
    for s in sorted({s for _, s, _ in places}):
        seen = {(d, b): a / r for (d, n, b), (r, a) in places.items() if n == s and r > 0}
        out[s] = [[seen.get((d, b), v) for b, v in enumerate(row[:s])] for d, row in enumerate(flat)]
    return out


def _rate_rows(counts) -> list[list[float]]:
    """Rows of accepted / reached per depth and rank from ((depth, rank), (reached, accepted)) pairs, pooled, each
    row cut at its first rank never reached, the rows at the first depth never reached."""
    tot: dict[tuple[int, int], list[int]] = {}
    for key, (r, a) in counts:
        c = tot.setdefault(key, [0, 0])
        c[0] += r
        c[1] += a
    rows = []
    for d in range(1 + max((k[0] for k in tot), default=-1)):
        row = []
        while tot.get((d, len(row)), [0])[0] > 0:
            r, a = tot[(d, len(row))]
            row.append(a / r)
        if not row:
            break  # a depth never reached: none below it was either
        rows.append(row)
    return rows


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
    branches: dict[str, BranchStats] = field(default_factory=dict)  # tree reviews per node place, keys as acceptance

    def __post_init__(self):
        """A tree review's per-branch counts ride on its pair meters (:attr:`PairStats.branches`): they move to
        ``branches``, and ``acceptance`` keeps the pairs with per-position counts."""
        pairs = {}
        for key, st in self.acceptance.items():
            if isinstance(st, PairStats) and st.branches is not None:
                self.branches.setdefault(key, BranchStats()).merge(st.branches)
                st = PairStats(st.reached, st.accepted)
            if not isinstance(st, PairStats) or st.reached:
                pairs[key] = st
        self.acceptance = pairs

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
        d["acceptance"] = {k: {"reached": v.reached, "accepted": v.accepted} for k, v in self.acceptance.items()}
        d.update(tokens_per_target_call=self.tokens_per_target_call, nodes_per_target_call=self.nodes_per_target_call,
                 outside_forward_time=self.outside_forward_time, outside_share=self.outside_share,
                 swi_model_size=self.swi_model_size, swi_previous_work=self.swi_previous_work)
        return d
