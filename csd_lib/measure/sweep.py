"""A sweep over K and lenience: each configuration generated on the same prompts, checked against AR.

Notebook 04's grid over ``(k11, k12, lenience)``: :func:`run_config` generates one configuration on every
prompt; :func:`grid_sweep` does it for a grid of top-row entries. A :class:`Point` keeps the generations
(for per-prompt comparisons, :func:`csd_lib.report.compare.gen_run`) and the pooled numbers of a table row.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ..engine.cascade import generate
from ..engine.kvariants import k_with
from ..engine.stats import swi


@dataclass
class Point:
    """One configuration's generations on the prompts, and AR's on the same prompts (None: not compared)."""
    k: list[list[int]]
    lenience: float
    gens: list
    reference: list | None = None

    @property
    def tokens(self) -> int:
        return sum(g.stats.n_tokens for g in self.gens)

    @property
    def wall(self) -> float:
        return sum(g.stats.wall_time for g in self.gens)

    @property
    def target_calls(self) -> int:
        return sum(g.stats.calls.get("target", 0) for g in self.gens)

    @property
    def swi_ms(self) -> float:
        """Pooled SWI under model-size costs (:func:`csd_lib.engine.stats.swi`)."""
        calls: dict[str, int] = {}
        for g in self.gens:
            for m, n in g.stats.calls.items():
                calls[m] = calls.get(m, 0) + n
        return swi(self.tokens, calls, self.gens[0].stats.model_size_costs())

    @property
    def same_as_ar(self) -> bool:
        """Every prompt's tokens equal AR's (greedy identity); True when there is no reference."""
        return self.reference is None or all(g.token_ids == r.token_ids for g, r in zip(self.gens, self.reference))

    def row(self, ar_wall: float, **labels) -> dict:
        """A table row: ``labels``, SWI (model size), walltime speedup over ``ar_wall``, tokens per target
        call and the identity with AR."""
        return dict(**labels, swi_ms=self.swi_ms, speedup_wall=ar_wall / self.wall,
                    tokens_per_target_call=self.tokens / max(1, self.target_calls), same_as_ar=self.same_as_ar)


def run_config(family, prompts, k, lenience: float, max_new_tokens: int, reference=None) -> Point:
    """CSD with ``k`` and ``lenience`` on every prompt; ``reference``: AR's generations on the same prompts."""
    if reference is not None and len(reference) != len(prompts):
        raise ValueError(f"need one AR generation per prompt, got {len(reference)} for {len(prompts)} prompts")
    gens = [generate(family, p, "csd", k=k, lenience=lenience, max_new_tokens=max_new_tokens) for p in prompts]
    return Point([list(r) for r in k], float(lenience), gens, reference)


def grid_sweep(family, prompts, grid: dict, max_new_tokens: int, reference=None, k=None) -> dict[tuple, Point]:
    """{(k11, k12, lenience): Point} over ``grid`` (lists under "k11", "k12" and "lenience"), lenience
    outermost; the other entries of K are ``k``'s (default: the family's)."""
    missing = {"k11", "k12", "lenience"} - set(grid)
    if missing:
        raise ValueError(f"grid needs lists under 'k11', 'k12' and 'lenience'; missing {sorted(missing)}")
    base = family.default_k if k is None else k
    return {(a, b, lam): run_config(family, prompts, k_with(base, k11=a, k12=b), lam, max_new_tokens, reference)
            for lam, a, b in product(grid["lenience"], grid["k11"], grid["k12"])}
