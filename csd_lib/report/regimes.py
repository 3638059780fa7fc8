"""Two regimes side by side: a family's measurement next to the paper-regime family.

tiny-t5's drafters agree with the target far more than the paper's FLAN-T5 drafters (Fig. 2);
``tiny-t5-paper`` has the same target with weaker drafters, in the paper's regime. Notebooks 01,
03, 04 and 06 run one measurement on both and state each direction only beyond the noise over
prompts: these helpers turn runs into the per-prompt counts that :mod:`csd_lib.report.intervals` takes.
A real family has no tiny counterpart (its drafters, tokenizer and tasks are its own), so
:func:`side_family` gives none for it and :func:`no_side_reason` says why.
Pure functions of match arrays and generations; no model is loaded here.
"""
from __future__ import annotations

import numpy as np

from ..engine.stats import call_cost, pooled_swi
from ..measure.curves import run_lengths
from .intervals import Difference, paired_difference, rate_difference

PAPER_REGIME = "tiny-t5-paper"  # the second family of every side-by-side
METRICS = ("model size", "previous work")  # the SWI cost tables a comparison prices with
EMBEDDED = ("tiny-t5", "tiny-llama", PAPER_REGIME)  # the families with a side: the embedded ones


def first_accepted_counts(match_lists, pos: int) -> tuple[list[int], list[int]]:
    """Per prompt: starts whose first ``pos`` drafted tokens are accepted, and starts with ``pos`` tokens left.

    ``match_lists`` holds one teacher-forced match array per prompt
    (:func:`csd_lib.measure.curves.teacher_forced_matches`); pooled, the counts give the unconditional
    acceptance at ``pos`` of :func:`csd_lib.measure.curves.curve_from_matches`.
    """
    if pos < 1:
        raise ValueError(f"positions start at 1, got {pos}")
    hits, totals = [], []
    for m in match_lists:
        r = run_lengths(np.asarray(m, dtype=bool))
        ok = r[:max(len(r) - pos + 1, 0)]  # starts s with s + pos <= T
        hits.append(int((ok >= pos).sum()))
        totals.append(len(ok))
    return hits, totals


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")


def _costs(stats, metric: str) -> dict[str, float]:
    _check_metric(metric)
    return stats.model_size_costs() if metric == "model size" else stats.previous_work_costs


def swi_counts(gens, metric: str = "model size") -> tuple[list[int], list[float]]:
    """Per generation: output tokens and their cost in target calls, priced by ``metric`` (one of :data:`METRICS`).

    The pooled SWI of the runs is ``sum(tokens) / sum(cost)``; two lists of runs on the same
    prompts compare with :func:`swi_difference`.
    """
    tokens, cost = [], []
    for g in gens:
        tokens.append(g.stats.n_tokens)
        cost.append(call_cost(g.stats.calls, _costs(g.stats, metric)))
    return tokens, cost


def runs_swi(gens, metric: str = "model size") -> float:
    """Pooled SWI of a list of runs, priced by ``metric`` (:func:`csd_lib.engine.stats.pooled_swi` of
    :func:`swi_counts`); one generation's SWI is :func:`csd_lib.engine.stats.swi`."""
    return pooled_swi(*swi_counts(gens, metric))


def swi_difference(a, b, metric: str = "model size") -> Difference:
    """Pooled SWI of runs ``a`` minus runs ``b`` (the same prompts, in order), prompts as paired clusters
    (:func:`intervals.rate_difference`: t interval at 3 to 5 prompts, sign-flip from 6, too few below 3)."""
    if len(a) != len(b):
        raise ValueError(f"need the same prompts on both sides, got {len(a)} and {len(b)} runs")
    return rate_difference(*swi_counts(a, metric), *swi_counts(b, metric))


def relative_gain(a, b, metric: str = "model size") -> list[float]:
    """Per prompt: SWI of run ``a`` over SWI of run ``b``, minus 1 (``a``'s gain over ``b``)."""
    if len(a) != len(b):
        raise ValueError(f"need the same prompts on both sides, got {len(a)} and {len(b)} runs")
    (ta, ca), (tb, cb) = swi_counts(a, metric), swi_counts(b, metric)
    return [pooled_swi([x], [y]) / pooled_swi([u], [v]) - 1 if y > 0 and v > 0 and u > 0 else float("nan")
            for x, y, u, v in zip(ta, ca, tb, cb)]


def gain_difference(a1, b1, a2, b2, metric: str = "model size") -> Difference:
    """How much more ``a2`` gains over ``b2`` than ``a1`` over ``b1`` (relative SWI gains, same prompts).

    Positive: the gain is larger in the second regime, beyond the noise when the interval
    excludes 0. All four lists hold one run per prompt, the same prompts in the same order.
    """
    return paired_difference(relative_gain(a2, b2, metric), relative_gain(a1, b1, metric))


def side_family(name: str) -> str | None:
    """The family shown beside the embedded family ``name``: the paper regime, or tiny-t5 beside the paper
    regime itself; None for any other family (:func:`no_side_reason`)."""
    if name not in EMBEDDED:
        return None
    return "tiny-t5" if name == PAPER_REGIME else PAPER_REGIME


def no_side_reason(name: str) -> str:
    """Why a family has no side-by-side ('' when it has one), as a sentence for a notebook."""
    if side_family(name) is not None:
        return ""
    return (f"{name} has no side family: the embedded tiny families share neither its tokenizer nor its tasks, so "
            f"their numbers would not be comparable; its own drafters, smallest to largest, are the regimes to compare.")
