"""'Check your answer' cells: a student's answer against the value the library computes.

An exercise cell ends with ``check(my_answer, expected)``; the returned :class:`Verdict` shows
itself in the notebook (no print): not answered yet, matches, or a hint (too high, too low, which
value differs). The run's value is shown only after ``reveal_after`` wrong tries of the same
exercise (counted per ``what`` in this kernel), so a first wrong guess does not give the answer
away. :func:`check_one_of` accepts any of several tied answers. No model, no I/O.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

REVEAL_AFTER = 3              # wrong tries of one exercise before the run's value is shown
_wrong_tries: dict[str, int] = {}  # per exercise (``what``): wrong tries so far in this kernel


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


def _number(x) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


def _close(a, b, rel: float, abs_tol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if not (_number(a) and _number(b)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)


def _hint(a, b) -> str:
    """How a wrong value is off, without the right one: 'too high', 'too low' or 'not the run's value'."""
    if _number(a) and _number(b) and not (math.isnan(a) or math.isnan(b)):
        return "too high" if a > b else "too low"
    return "not the run's value"


def _check_args(rel: float, abs_tol: float, reveal_after: int) -> None:
    if rel < 0 or abs_tol < 0:
        raise ValueError(f"tolerances must be >= 0, got rel={rel}, abs_tol={abs_tol}")
    if isinstance(reveal_after, bool) or not isinstance(reveal_after, int) or reveal_after < 1:
        raise ValueError(f"reveal_after must be an integer >= 1 (wrong tries before the answer shows), "
                         f"got {reveal_after!r}")


def _wrong(what: str, reveal_after: int, hint: str, answer_text: str) -> Verdict:
    """A wrong try: the hint, and the run's value once ``reveal_after`` wrong tries were made."""
    n = _wrong_tries[what] = _wrong_tries.get(what, 0) + 1
    if n >= reveal_after:
        return Verdict(False, f"{what}: {hint}; {answer_text}")
    left = reveal_after - n
    return Verdict(False, f"{what}: {hint} (wrong try {n}; the run's value shows after "
                          f"{left} more wrong {'try' if left == 1 else 'tries'})")


def check(answer, expected, *, rel: float = 0.05, abs_tol: float = 0.0, what: str = "your answer",
          reveal_after: int = REVEAL_AFTER) -> Verdict:
    """Compare ``answer`` with ``expected``.

    Numbers match within ``rel`` (relative) or ``abs_tol``; sequences match element by element
    with the same tolerance and length; anything else (strings, bools, names) by equality.
    ``answer=None`` means not answered yet. A wrong answer gets a hint; the run's value is shown
    from the ``reveal_after``-th wrong try of the exercise ``what`` on.
    """
    _check_args(rel, abs_tol, reveal_after)
    if answer is None:
        return Verdict(None, f"{what}: not answered yet; set it in this cell and run it again")
    if isinstance(expected, (list, tuple)):
        if not isinstance(answer, (list, tuple)) or len(answer) != len(expected):
            return _wrong(what, reveal_after, f"expected {len(expected)} values, got {answer!r}",
                          f"the run gives {list(expected)!r}")
        bad = [i for i, (a, b) in enumerate(zip(answer, expected)) if not _close(a, b, rel, abs_tol)]
        if not bad:
            return Verdict(True, f"{what}: all {len(expected)} values match")
        i = bad[0]
        return _wrong(what, reveal_after, f"{len(bad)} of {len(expected)} values differ (first at index {i}: "
                                          f"{answer[i]!r} is {_hint(answer[i], expected[i])})",
                      f"the run gives {list(expected)!r}")
    if _close(answer, expected, rel, abs_tol):
        return Verdict(True, f"{what}: {answer!r} matches the run ({expected!r})")
    return _wrong(what, reveal_after, f"{answer!r} is {_hint(answer, expected)}", f"the run gives {expected!r}")


def check_one_of(answer, options, *, rel: float = 0.05, abs_tol: float = 0.0, what: str = "your answer",
                 reveal_after: int = REVEAL_AFTER) -> Verdict:
    """Like :func:`check` where several answers are equally right (tied optima): ``answer`` matches
    when it matches any of ``options`` (each compared as :func:`check` compares)."""
    _check_args(rel, abs_tol, reveal_after)
    options = list(options)
    if not options:
        raise ValueError(f"{what}: options must hold at least one right answer")
    if answer is None:
        return Verdict(None, f"{what}: not answered yet; set it in this cell and run it again")

    def same(a, b) -> bool:
        if isinstance(b, (list, tuple)):
            return isinstance(a, (list, tuple)) and len(a) == len(b) and all(
                _close(x, y, rel, abs_tol) for x, y in zip(a, b))
        return _close(a, b, rel, abs_tol)

    if any(same(answer, o) for o in options):
        tied = "" if len(options) == 1 else f" (one of {len(options)} tied answers)"
        return Verdict(True, f"{what}: {answer!r} matches the run{tied}")
    n = len(options)
    if n == 1:
        return _wrong(what, reveal_after, f"{answer!r} is {_hint(answer, options[0])}", f"the run gives {options[0]!r}")
    return _wrong(what, reveal_after, f"{answer!r} is none of the run's {n} tied answers",
                  f"the run's tied answers are {options!r}")
