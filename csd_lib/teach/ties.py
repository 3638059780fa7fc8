"""A 'check your answer' cell whose right answer may be a tie: every tied optimum passes.

:func:`tied_check` compares the answer with each accepted value as :func:`csd_lib.teach.exercises.check`
does; a wrong answer is told how many values tie, not which. Pure: no model, no I/O.
"""
from __future__ import annotations

from .exercises import Verdict, check


def tied_check(answer, accepted, *, rel: float = 0.05, abs_tol: float = 0.0, what: str = "your answer") -> Verdict:
    """``answer`` against every value of ``accepted`` (the tied optima); it passes when it matches one."""
    accepted = list(accepted)
    if not accepted:
        raise ValueError("tied_check needs at least one accepted answer")
    if answer is None:
        return check(None, accepted[0], rel=rel, abs_tol=abs_tol, what=what)
    for value in accepted:
        if check(answer, value, rel=rel, abs_tol=abs_tol, what=what).ok:
            tie = f" (one of {len(accepted)} that tie exactly)" if len(accepted) > 1 else ""
            return Verdict(True, f"{what}: {answer!r} matches the run{tie}")
    many = f"any of the {len(accepted)} values that tie" if len(accepted) > 1 else "the run's value"
    return Verdict(False, f"{what}: {answer!r} does not match {many}; look at the table again")
