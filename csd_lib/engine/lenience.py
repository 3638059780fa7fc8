"""Which drafted tokens a review judges leniently, and the words for it, from a plan's settings.

One rule (the engine's, ``cascade.Level``): the target always reviews strictly; a drafter
reviews with the plan's ``lenience``, except MaG's tokens when ``mag_lenience`` is False (the
paper's rule, Appendix B). Figures and sentences that say which review is lenient read it here.
"""
from __future__ import annotations

from .methods import get
from .plan import MAG, Plan


def token_lenience(proposer: str, lenience: float, mag_lenience: bool, by_target: bool = False) -> float:
    """The lenience a review applies to one token drafted by ``proposer`` (1 = strict)."""
    if by_target or (proposer == MAG and not mag_lenience):
        return 1.0
    return float(lenience)


def lenience_word(lam: float) -> str:
    """``strict`` for 1, else ``l = 5``."""
    return "strict" if lam == 1 else f"l = {lam:g}"


def lenience_note(leniences: dict[str, float]) -> str:
    """One review's lenience by proposer in words: ``strict``, ``l = 5``, or ``l = 5 on small; strict on mag``."""
    words = {who: lenience_word(lam) for who, lam in leniences.items()}
    if len(set(words.values())) <= 1:
        return next(iter(words.values()), "strict")
    groups = {w: "+".join(who for who in words if words[who] == w) for w in dict.fromkeys(words.values())}
    return "; ".join(f"{w} on {who}" for w, who in groups.items())


def plan_lenience(plan: Plan) -> str:
    """A plan's draft-to-draft lenience in words: ``strict``, ``l = 5, strict on mag`` (the paper's rule:
    lenience between neural drafters only) or ``l = 5 on mag too``."""
    if not get(plan.method).lenient or plan.lenience == 1:
        return "strict"
    if MAG not in plan.drafters:
        return lenience_word(plan.lenience)
    return f"{lenience_word(plan.lenience)}{' on mag too' if plan.mag_lenience else ', strict on mag'}"


# -- reviews named by their pair "reviewer<-proposer" (the keys of Stats.acceptance) --------------

def _split(pair: str) -> tuple[str, str]:
    reviewer, sep, proposer = pair.partition("<-")
    if not sep or not reviewer or not proposer:
        raise ValueError(f"a pair is 'reviewer<-proposer' (e.g. 'base<-small'), got {pair!r}")
    return reviewer, proposer


def pair_lenience(plan: Plan, pair: str) -> float:
    """The lenience the review ``pair`` (``"reviewer<-proposer"``) uses under ``plan`` (1.0: strict)."""
    reviewer, proposer = _split(pair)
    if not get(plan.method).lenient:
        return 1.0
    return token_lenience(proposer, plan.lenience, plan.mag_lenience, by_target=reviewer == "target")


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


def lenient_reviews_says(plan: Plan) -> str:
    """One sentence: which reviews of ``plan`` are lenient and why the others are strict."""
    lenient = lenient_pairs(plan)
    strict_mag = [p for p in plan_pairs(plan) if p.endswith("<-mag") and not p.startswith("target<-")]
    why_mag = (f"MaG's tokens ({', '.join(f'`{p}`' for p in strict_mag)}) are reviewed strictly since the plan has "
               f"mag_lenience=False" if strict_mag and not plan.mag_lenience else "")
    if not get(plan.method).lenient:
        return f"method {plan.method} has no lenient review"
    if plan.lenience == 1:
        return "the lenience is 1: every review is strict"
    if not lenient:
        return (f"no review of this plan is lenient (l = {plan.lenience:g} acts on none): the target's reviews are strict"
                + (f" and {why_mag}" if why_mag else "") + "; lenience needs a neural drafter reviewing another's tokens")
    return (f"lenient (l = {plan.lenience:g}): {', '.join(f'`{p}`' for p in lenient)}; strict: the target's reviews"
            + (f", and {why_mag}" if why_mag else ""))
