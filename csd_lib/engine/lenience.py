"""Which drafted tokens a review judges leniently, and the words for it, from a plan's settings.

One rule (the engine's, ``cascade.Level``): the target always reviews strictly; a drafter
reviews with the plan's ``lenience``, except MaG's tokens when ``mag_lenience`` is False (the
paper's rule, Appendix B). Figures and sentences that say which review is lenient read it here.
"""
from __future__ import annotations

from .plan import Plan

MAG = "mag"  # the proposer name of Max-Gram's tokens


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
    if plan.method != "csd" or plan.lenience == 1:
        return "strict"
    if MAG not in plan.drafters:
        return lenience_word(plan.lenience)
    return f"{lenience_word(plan.lenience)}{' on mag too' if plan.mag_lenience else ', strict on mag'}"
