"""Per-prompt counts of runs (one Generation per prompt): a review pair's acceptance and a model's calls
per output token, pooled over the prompts, and the difference of two runs on the same prompts.

The pooled rate is all counts over all totals (what a table of the runs shows); a difference of two
pooled rates takes the prompts as paired clusters (:func:`intervals.rate_difference`). No model is loaded here.
"""
from __future__ import annotations

from .intervals import Difference, rate, rate_difference


def pair_counts(gens, pair: str) -> tuple[list[int], list[int]]:
    """Per generation: drafted tokens of ``pair`` (``"reviewer<-proposer"``) accepted and reviewed
    (0, 0 where the pair never met)."""
    stats = [g.stats.acceptance.get(pair) for g in gens]
    return [sum(s.accepted) if s else 0 for s in stats], [sum(s.reached) if s else 0 for s in stats]


def pair_rate(gens, pair: str) -> float:
    """Acceptance of ``pair`` pooled over the generations: accepted over reviewed tokens (NaN if never reviewed)."""
    hits, totals = pair_counts(gens, pair)
    return rate(sum(hits), sum(totals))


def pair_rate_difference(a, b, pair: str) -> Difference:
    """Pooled acceptance of ``pair`` in runs ``a`` minus runs ``b`` (the same prompts, in order)."""
    _same_prompts(a, b)
    return rate_difference(*pair_counts(a, pair), *pair_counts(b, pair))


def call_counts(gens, model: str) -> tuple[list[int], list[int]]:
    """Per generation: forward calls of ``model`` and output tokens."""
    return [g.stats.calls.get(model, 0) for g in gens], [g.stats.n_tokens for g in gens]


def calls_per_token(gens, model: str) -> float:
    """Calls of ``model`` per output token, pooled over the generations (NaN without tokens)."""
    calls, tokens = call_counts(gens, model)
    return rate(sum(calls), sum(tokens))


def calls_per_token_difference(a, b, model: str) -> Difference:
    """Pooled calls of ``model`` per output token in runs ``a`` minus runs ``b`` (the same prompts, in order)."""
    _same_prompts(a, b)
    return rate_difference(*call_counts(a, model), *call_counts(b, model))


def _same_prompts(a, b) -> None:
    if len(a) != len(b):
        raise ValueError(f"need one run per prompt on both sides, the same prompts; got {len(a)} and {len(b)} runs")
