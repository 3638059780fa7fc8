"""'Check your answer' cells: a student's answer against the value the library computes.

An exercise cell ends with ``check(my_answer, expected)``; the returned :class:`Verdict` shows
itself in the notebook (no print): not answered yet, matches, or how far off it is. Pure: no
model, no I/O.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real


@dataclass(frozen=True)
class Verdict:
    """``ok`` is None while the answer is missing, else whether it matches."""
    ok: bool | None
    message: str

    def __repr__(self) -> str:
        return self.message

    def _repr_markdown_(self) -> str:
        mark = {None: "**?**", True: "**correct**", False: "**not yet**"}[self.ok]
        return f"{mark} {self.message}"


def _close(a, b, rel: float, abs_tol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if not (isinstance(a, Real) and isinstance(b, Real)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)


def check(answer, expected, *, rel: float = 0.05, abs_tol: float = 0.0, what: str = "your answer") -> Verdict:
    """Compare ``answer`` with ``expected``.

    Numbers match within ``rel`` (relative) or ``abs_tol``; sequences match element by element
    with the same tolerance and length; anything else (strings, bools, names) by equality.
    ``answer=None`` means not answered yet.
    """
    if rel < 0 or abs_tol < 0:
        raise ValueError(f"tolerances must be >= 0, got rel={rel}, abs_tol={abs_tol}")
    if answer is None:
        return Verdict(None, f"{what}: not answered yet; set it in this cell and run it again")
    seq = isinstance(expected, (list, tuple))
    if seq:
        if not isinstance(answer, (list, tuple)) or len(answer) != len(expected):
            return Verdict(False, f"{what}: expected {len(expected)} values, got {answer!r}")
        bad = [i for i, (a, b) in enumerate(zip(answer, expected)) if not _close(a, b, rel, abs_tol)]
        if not bad:
            return Verdict(True, f"{what}: all {len(expected)} values match")
        i = bad[0]
        return Verdict(False, f"{what}: {len(bad)} of {len(expected)} values differ (first at index {i}: "
                              f"{answer[i]!r}, the run gives {expected[i]!r})")
    if _close(answer, expected, rel, abs_tol):
        return Verdict(True, f"{what}: {answer!r} matches the run ({expected!r})")
    return Verdict(False, f"{what}: {answer!r}, the run gives {expected!r}")
