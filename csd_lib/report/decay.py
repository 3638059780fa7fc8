"""Claims about acceptance by draft position (paper Fig. 2), each with an interval over prompts.

Every function takes one teacher-forced match array per prompt
(:func:`csd_lib.measure.curves.teacher_forced_matches`) and counts as
:func:`csd_lib.measure.curves.curve_from_matches` does (position ``i`` counts the starts with ``i``
tokens left), so the pooled numbers are the curve's. The conditional change treats prompts as paired
clusters (:func:`csd_lib.report.intervals.rate_difference`); the half-rate check compares each prompt's
own rates (:func:`half_difference`) at one position every output reaches with enough starts
(:func:`judge_position`). Too few prompts say so instead of a direction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..measure.curves import run_lengths
from .intervals import Difference, paired_difference, rate_difference

# Paper Fig. 2 (FLAN-T5 drafters for FLAN-T5-XXL on GSM8K and MMLU): position-1 range, late position and its ceiling
FIG2_POS1 = (0.7, 0.8)
FIG2_LATE_POS, FIG2_LATE_MAX = 30, 0.1
JUDGE_POS = 10     # where the half-rate check is judged, unless an output is too short for it
MIN_STARTS = 10    # starts every prompt must have at the judged position


def _counts(match_lists, pos: int) -> tuple[list[int], list[int], list[int]]:
    """Per prompt at position ``pos`` (1-based): starts with run >= pos, starts with run >= pos - 1, starts eligible."""
    if pos < 1:
        raise ValueError(f"positions start at 1, got {pos}")
    acc, prev, elig = [], [], []
    for m in match_lists:
        r = run_lengths(np.asarray(m, dtype=bool))
        ok = r[:max(len(r) - pos + 1, 0)]  # starts s with s + pos <= T
        acc.append(int((ok >= pos).sum()))
        prev.append(int((ok >= pos - 1).sum()))
        elig.append(len(ok))
    return acc, prev, elig


def reach(match_lists, max_pos: int) -> list[int]:
    """Prompts whose output is long enough for position i, for i = 1..max_pos."""
    return [sum(len(m) >= i for m in match_lists) for i in range(1, max_pos + 1)]


def last_reached(match_lists, max_pos: int, min_reach: int) -> int:
    """The last position (1-based, at most ``max_pos``) that ``min_reach`` prompts reach (all prompts when fewer)."""
    r = reach(match_lists, max_pos)
    if not r or r[0] == 0:
        raise ValueError("no prompt has an output to score; generate longer continuations")
    need = min(min_reach, r[0])
    return max(i for i in range(1, max_pos + 1) if r[i - 1] >= need)


def judge_position(match_lists, at: int = JUDGE_POS, min_starts: int = MIN_STARTS) -> int | None:
    """The position (1-based) where every prompt's output gives at least ``min_starts`` starts, at most
    ``at``: ``min(at, shortest - min_starts + 1)``; None when that is below 2 (or no prompt scored)."""
    if at < 2 or min_starts < 1:
        raise ValueError(f"need at >= 2 and min_starts >= 1, got at={at}, min_starts={min_starts}")
    lengths = [len(m) for m in match_lists]
    pos = min(at, min(lengths) - min_starts + 1) if lengths else 0
    return pos if pos >= 2 else None


def half_difference(match_lists, pos: int | None) -> Difference:
    """Per prompt, over its starts with ``pos`` tokens left: the share whose first ``pos`` drafted tokens
    are accepted minus half the share whose first one is; averaged over prompts, with the interval of a
    mean of values in [-1/2, 1/2] (``paired_difference(..., bounds=...)``, which holds where a few prompts
    carry every hit).

    Positive: position ``pos`` keeps more than half of position 1's rate on a typical prompt. Prompts
    with no start at ``pos`` are left out; ``pos`` None (no position to judge at): undefined.
    """
    if pos is None:
        return Difference(math.nan, math.nan, math.nan, len(match_lists))
    if pos < 1:
        raise ValueError(f"positions start at 1, got {pos}")
    first, all_ = [], []
    for m in match_lists:
        r = run_lengths(np.asarray(m, dtype=bool))
        ok = r[:max(len(r) - pos + 1, 0)]  # starts s with s + pos <= T, the same for both rates
        all_.append(float(np.mean(ok >= pos)) if ok.size else math.nan)
        first.append(float(np.mean(ok >= 1)) if ok.size else math.nan)
    return paired_difference(all_, np.array(first) / 2, bounds=(-0.5, 0.5))


def conditional_change(match_lists, last: int = 10) -> Difference:
    """Conditional acceptance pooled over positions 2..``last`` minus conditional acceptance at position 1.

    Pooled: every start that reached position i - 1 counts once at i (accepted there or not), over
    i = 2..last. Positive: the conditional curve rises after the first token; negative: it falls.
    """
    if last < 2:
        raise ValueError(f"last must be >= 2 (positions 2..last against position 1), got {last}")
    h1, _, t1 = _counts(match_lists, 1)
    hits, trials = [0] * len(h1), [0] * len(h1)
    for i in range(2, last + 1):
        a, p, _ = _counts(match_lists, i)
        hits = [x + y for x, y in zip(hits, a)]
        trials = [x + y for x, y in zip(trials, p)]
    return rate_difference(hits, trials, h1, t1)


@dataclass(frozen=True)
class Fig2Match:
    """What of paper Fig. 2 one unconditional curve matches."""
    pos1: float
    pos1_in_range: bool          # inside FIG2_POS1
    first_below: int | None      # first position (1-based) below FIG2_LATE_MAX; None: never within the curve
    late: float                  # the value at FIG2_LATE_POS (NaN: not reached or not measured)

    def says(self) -> str:
        """'position 1: 0.74, inside Fig. 2's 0.7-0.8; below 0.1 from position 6 (Fig. 2: near 30)'."""
        lo, hi = FIG2_POS1
        where = "inside" if self.pos1_in_range else "outside"
        drop = (f"below {FIG2_LATE_MAX:g} from position {self.first_below}" if self.first_below is not None
                else f"never below {FIG2_LATE_MAX:g} up to the last position measured")
        return (f"position 1: {self.pos1:.2f}, {where} Fig. 2's {lo:g}-{hi:g}; {drop} "
                f"(Fig. 2: {FIG2_LATE_MAX:g} or less only near position {FIG2_LATE_POS})")


def fig2_match(unconditional) -> Fig2Match:
    """Compare one unconditional curve (P(first i accepted), i = 1..) with paper Fig. 2."""
    u = np.asarray(unconditional, dtype=float)
    if u.size == 0 or math.isnan(u[0]):
        raise ValueError("the curve has no value at position 1; score at least one prompt")
    below = np.flatnonzero(u < FIG2_LATE_MAX)
    late = float(u[FIG2_LATE_POS - 1]) if u.size >= FIG2_LATE_POS else math.nan
    return Fig2Match(float(u[0]), bool(FIG2_POS1[0] <= u[0] <= FIG2_POS1[1]),
                     int(below[0] + 1) if below.size else None, late)
