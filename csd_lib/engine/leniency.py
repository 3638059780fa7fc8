"""Which reviews of a plan are lenient: the one rule every table, figure and sentence reads.

A review is named by its pair ``"reviewer<-proposer"`` (the keys of ``Stats.acceptance``). The target's
reviews are always strict; MaG's tokens are strict unless the plan sets ``mag_lenience``; every other
draft-to-draft review of a ``csd`` plan uses the plan's lenience. Other methods have no lenient review.
"""
from __future__ import annotations

from .plan import Plan


def _split(pair: str) -> tuple[str, str]:
    reviewer, sep, proposer = pair.partition("<-")
    if not sep or not reviewer or not proposer:
        raise ValueError(f"a pair is 'reviewer<-proposer' (e.g. 'base<-small'), got {pair!r}")
    return reviewer, proposer


def pair_lenience(plan: Plan, pair: str) -> float:
    """The lenience the review ``pair`` (``"reviewer<-proposer"``) uses under ``plan`` (1.0: strict)."""
    reviewer, proposer = _split(pair)
    if plan.method != "csd" or reviewer == "target" or (proposer == "mag" and not plan.mag_lenience):
        return 1.0
    return plan.lenience


def plan_pairs(plan: Plan) -> list[str]:
    """Every pair whose review the plan's K runs: row i's reviewer (the target, then each neural drafter)
    with each drafter that row gives a budget, in K's order."""
    if not plan.drafters:
        return []
    reviewers = ["target"] + list(plan.drafters[:-1])
    return [f"{reviewers[i]}<-{plan.drafters[j]}" for i in range(len(plan.k)) for j in range(i, len(plan.k))
            if plan.k[i][j] > 0]


def lenient_pairs(plan: Plan) -> list[str]:
    """The pairs of :func:`plan_pairs` that review with a lenience above 1."""
    return [p for p in plan_pairs(plan) if pair_lenience(plan, p) > 1]


def leniency_says(plan: Plan) -> str:
    """One sentence: which reviews of ``plan`` are lenient and why the others are strict."""
    lenient = lenient_pairs(plan)
    strict_mag = [p for p in plan_pairs(plan) if p.endswith("<-mag") and not p.startswith("target<-")]
    why_mag = (f"MaG's tokens ({', '.join(f'`{p}`' for p in strict_mag)}) are reviewed strictly since the plan has "
               f"mag_lenience=False" if strict_mag and not plan.mag_lenience else "")
    if plan.method != "csd":
        return f"method {plan.method} has no lenient review"
    if plan.lenience == 1:
        return "the lenience is 1: every review is strict"
    if not lenient:
        return (f"no review of this plan is lenient (l = {plan.lenience:g} acts on none): the target's reviews are strict"
                + (f" and {why_mag}" if why_mag else "") + "; lenience needs a neural drafter reviewing another's tokens")
    return (f"lenient (l = {plan.lenience:g}): {', '.join(f'`{p}`' for p in lenient)}; strict: the target's reviews"
            + (f", and {why_mag}" if why_mag else ""))
