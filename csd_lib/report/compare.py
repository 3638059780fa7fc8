"""Per-example comparisons of configurations: runs priced by one cost table, their pooled SWI, differences
beyond the noise over examples, labels read from the plan, and exact ties.

A :class:`Run` holds one configuration's output tokens and forward calls per example, from bench records
(:func:`bench_run`, the fastest repeat of each example) or from generations (:func:`gen_run`). Its SWI is
:func:`csd_lib.engine.stats.swi` of the pooled counts; :func:`versus` compares two runs on the examples both
ran (:func:`csd_lib.report.intervals.rate_difference`). No model is loaded here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..engine.methods import get
from ..engine.plan import Plan
from ..engine.stats import call_cost, model_size_costs, swi
from ..measure.records import ALL_METHODS, fastest
from .intervals import Difference, rate_difference
from .regimes import METRICS


@dataclass(frozen=True)
class Run:
    """One configuration on some examples: ``tokens`` and ``calls`` per example, every call priced by ``costs``."""
    label: str
    tokens: dict[int, int]
    calls: dict[int, dict[str, int]]
    costs: dict[str, float]
    plan: Plan | None = None

    @property
    def n(self) -> int:
        """Examples in the run."""
        return len(self.tokens)

    @property
    def swi(self) -> float:
        """Pooled SWI: all tokens over all calls, priced by ``costs`` (:func:`csd_lib.engine.stats.swi`)."""
        pooled: dict[str, int] = {}
        for c in self.calls.values():
            for m, n in c.items():
                pooled[m] = pooled.get(m, 0) + n
        return swi(sum(self.tokens.values()), pooled, self.costs) if self.tokens else math.nan

    def counts(self, examples) -> tuple[list[int], list[float]]:
        """Output tokens and their cost in target calls, one per example of ``examples``, in order."""
        return [self.tokens[i] for i in examples], [call_cost(self.calls[i], self.costs) for i in examples]

    def on(self, examples) -> "Run":
        """The same run restricted to ``examples``."""
        keep = [i for i in examples if i in self.tokens]
        return Run(self.label, {i: self.tokens[i] for i in keep}, {i: self.calls[i] for i in keep}, self.costs,
                   self.plan)


def _check_costs(costs: str) -> None:
    if costs not in METRICS:
        raise ValueError(f"costs must be one of {METRICS}, got {costs!r}")


def plan_label(plan: Plan | None) -> str:
    """A configuration's name from its plan: 'sd, k = 16', 'csd, K = [[4, 5, 10], ...], l = 5', 'mag', 'ar'."""
    if plan is None:
        return "no plan"
    m = get(plan.method)
    if len(plan.drafters) == 1 and not m.is_tree:   # one drafter: its draft length
        return f"{plan.method}, k = {plan.k[0][0]}"
    if m.ar_like:
        return plan.method
    k = [list(r) for r in plan.k]
    return f"{plan.method}, K = {k}" + (f", l = {plan.lenience:g}" if m.lenient and not m.is_tree else "")


def bench_run(records, method: str, costs: str = "model size", label: str | None = None) -> Run | None:
    """The run of ``method`` in bench records (the fastest repeat of each example), priced by ``costs``
    ("model size": parameter ratios; "previous work": the records' previous-work table); None if absent."""
    _check_costs(costs)
    best = fastest(records).get(method)
    if not best:
        return None
    first = next(iter(best.values()))
    st = first.stats
    prices = model_size_costs(st["params"]) if costs == "model size" else dict(st["previous_work_costs"])
    return Run(label or plan_label(first.plan), {i: r.stats["n_tokens"] for i, r in best.items()},
               {i: dict(r.stats["calls"]) for i, r in best.items()}, prices, first.plan)


def gen_run(gens, costs: str = "model size", label: str | None = None, examples=None) -> Run:
    """The run of generations (one per example; ``examples`` their indices, default 0, 1, ...)."""
    _check_costs(costs)
    gens = list(gens)
    if not gens:
        raise ValueError("gen_run needs at least one generation")
    idx = list(range(len(gens))) if examples is None else list(examples)
    if len(idx) != len(gens):
        raise ValueError(f"got {len(gens)} generations and {len(idx)} example indices; give one index per generation")
    st = gens[0].stats
    prices = st.model_size_costs() if costs == "model size" else dict(st.previous_work_costs)
    return Run(label or plan_label(gens[0].plan), {i: g.stats.n_tokens for i, g in zip(idx, gens)},
               {i: dict(g.stats.calls) for i, g in zip(idx, gens)}, prices, gens[0].plan)


def versus(a: Run, b: Run) -> Difference:
    """Pooled SWI of run ``a`` minus run ``b`` over the examples both ran, examples as paired clusters."""
    common = sorted(set(a.tokens) & set(b.tokens))
    return rate_difference(*a.counts(common), *b.counts(common))


PER_TARGET_CALL = "target call"  # a run priced one per target call: its pooled "SWI" is tokens per target call


def method_difference(records, a: str, b: str, per: str = PER_TARGET_CALL) -> Difference:
    """Pooled rate of method ``a`` minus method ``b`` in one bench's records, over the examples both ran
    (:func:`versus`): tokens per target call (``per="target call"``, the summary's
    ``mean_tokens_per_target_call``) or SWI priced by a cost table of ``METRICS``."""
    if per not in (PER_TARGET_CALL, *METRICS):
        raise ValueError(f"per must be one of {(PER_TARGET_CALL, *METRICS)}, got {per!r}")
    runs = []
    for m in (a, b):
        run = bench_run(records, m, "model size" if per == PER_TARGET_CALL else per)
        if run is None:
            raise ValueError(f"no successful record of method {m!r} in these records")
        runs.append(Run(run.label, run.tokens, run.calls, {"target": 1.0}, run.plan) if per == PER_TARGET_CALL
                    else run)
    if not set(runs[0].tokens) & set(runs[1].tokens):
        raise ValueError(f"methods {a!r} and {b!r} share no example; compare runs of the same prompts")
    return versus(*runs)


def best_of(runs: dict[str, Run]) -> str:
    """The name of the run with the highest pooled SWI."""
    if not runs:
        raise ValueError("best_of needs at least one run")
    return max(runs, key=lambda name: runs[name].swi)


def tied_best(values: dict, rel: float = 1e-12) -> list:
    """The keys whose value equals the largest (within ``rel``), in the order given: several when the
    optimum is a tie."""
    finite = {k: v for k, v in values.items() if not math.isnan(v)}
    if not finite:
        raise ValueError("tied_best needs at least one value that is not NaN")
    top = max(finite.values())
    return [k for k, v in finite.items() if math.isclose(v, top, rel_tol=rel, abs_tol=0.0)]


def summary_columns(summaries: dict[str, dict], key: str, label: str, order=ALL_METHODS) -> dict[str, dict]:
    """{f"{label}: {task}": {method: summary value}} of per-task summaries, methods in ``order`` (those present
    in the first task's summary); a table with one column per task."""
    if not summaries:
        raise ValueError("summary_columns needs at least one task's summary")
    methods = [m for m in order if m in next(iter(summaries.values()))]
    return {f"{label}: {task}": {m: s[m][key] if m in s else None for m in methods} for task, s in summaries.items()}
