"""Model-free analyses for the notebooks: replaying Max-Gram and prompt lookup on reference texts,
and comparing two replayed variants over the examples.

A *replay* walks along a reference continuation ``y`` of a prompt ``x``. At every position
``t`` a proposer sees ``x + y[:t]`` and proposes up to ``n`` tokens; a greedy reviewer that
would write ``y`` accepts the longest prefix of the proposal that equals ``y[t:t+n]``. This
measures a statistical drafter without any neural model (teacher forcing on the reference).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.mag import BIGRAM, MATCH, MaG, longest_suffix_match
from ..report.intervals import Difference, rate_difference


@dataclass
class RuleProposal:
    """What a statistical drafter proposed at one position, and how it matched."""
    tokens: list[int]
    provenance: list[str]   # MATCH or BIGRAM per token
    match_len: int          # length of the matched suffix (0 = no match)


def mag_proposer(mag: MaG, n: int | None = None, match: bool = True, fallback: bool = True):
    """A proposer function ``hay -> RuleProposal`` from a :class:`MaG` (its rule and bigram table).

    Args:
        match: copy after the longest suffix match (False: a pure bigram chain).
        fallback: fill the remaining slots with the bigram chain (False: copied tokens only).
    """
    if not (match or fallback):
        raise ValueError("a MaG proposer needs match=True or fallback=True")
    k = n or mag.n

    def propose(hay: np.ndarray) -> RuleProposal:
        length = longest_suffix_match(hay, mag.rule, mag.max_match)[1] if match else 0
        if not match:
            toks, last = [], int(hay[-1])
            for _ in range(k):
                last = int(mag.bigram[last])
                toks.append(last)
            return RuleProposal(toks, [BIGRAM] * k, 0)
        p = mag.lookup(hay, k)
        if not fallback:
            keep = [i for i, q in enumerate(p.provenance) if q == MATCH]
            return RuleProposal([p.tokens[i] for i in keep], [MATCH] * len(keep), length)
        return RuleProposal(p.tokens, p.provenance, length)
    return propose


def prompt_lookup_proposer(n: int = 10, max_ngram: int = 2):
    """HF transformers' prompt lookup decoding, re-implemented on a haystack.

    It tries n-gram sizes from ``max_ngram`` down to 1, takes the **first** (leftmost)
    occurrence of the last n-gram that has a continuation, copies at most ``n`` tokens
    (fewer near the end) and has **no fallback**: with no match it proposes nothing.
    """
    def propose(hay: np.ndarray) -> RuleProposal:
        L = len(hay)
        for size in range(min(max_ngram, L - 1), 0, -1):
            gram = hay[L - size:]
            for i in range(0, L - size):  # windows that end before the suffix itself
                if np.array_equal(hay[i:i + size], gram):
                    start = i + size
                    toks = hay[start:min(start + n, L)].tolist()
                    if toks:
                        return RuleProposal(toks, [MATCH] * len(toks), size)
        return RuleProposal([], [], 0)
    return propose


def replay(propose, prompt_ids: list[int], ref_ids: list[int], n: int = 10,
           decoder_only_hay: bool = False) -> list[dict]:
    """Replay a proposer along ``ref_ids``; one dict per position.

    Args:
        propose: ``hay (1-D int array) -> RuleProposal``.
        decoder_only_hay: the haystack is ``ref[:t]`` only (what HF prompt lookup sees
            for an encoder-decoder model), not ``prompt + ref[:t]``.
    Returns:
        dicts with ``t``, ``accepted`` (greedy accepted prefix length), ``hit`` (first
        token right), ``match_len``, ``proposed``, ``from_match``, ``accepted_match``,
        ``accepted_bigram``.
    """
    x = list(prompt_ids)
    out = []
    for t in range(len(ref_ids)):
        hay = np.asarray(ref_ids[:t] if decoder_only_hay else x + ref_ids[:t], dtype=np.int64)
        p = propose(hay) if len(hay) else RuleProposal([], [], 0)
        toks, prov = p.tokens[:n], p.provenance[:n]
        truth = ref_ids[t:t + n]
        a = 0
        while a < min(len(toks), len(truth)) and toks[a] == truth[a]:
            a += 1
        out.append(dict(t=t, accepted=a, hit=a > 0, match_len=p.match_len, proposed=len(toks),
                        from_match=sum(1 for q in prov if q == MATCH),
                        accepted_match=sum(1 for q in prov[:a] if q == MATCH),
                        accepted_bigram=sum(1 for q in prov[:a] if q == BIGRAM)))
    return out


def replay_summary(rows: list[dict], variant: str) -> dict:
    """Aggregate replay rows: hit rate, mean accepted per call, share of match tokens."""
    n = max(1, len(rows))
    proposed = sum(r["proposed"] for r in rows)
    acc = sum(r["accepted"] for r in rows)
    return dict(variant=variant, positions=len(rows), hit_rate=sum(r["hit"] for r in rows) / n,
                mean_accepted=acc / n, match_share=sum(r["from_match"] for r in rows) / max(1, proposed),
                no_proposal=sum(r["proposed"] == 0 for r in rows) / n,
                accepted_from_bigram=sum(r["accepted_bigram"] for r in rows) / max(1, acc))


def replay_counts(per_example: list[list[dict]], what: str = "accepted") -> tuple[list[int], list[int]]:
    """Per example (one list of :func:`replay` rows each): the summed ``what`` (``"accepted"`` tokens or
    first-token ``"hit"``) and the positions replayed."""
    if what not in ("accepted", "hit"):
        raise ValueError(f"what must be 'accepted' (tokens per call) or 'hit' (first token right), got {what!r}")
    return [sum(r[what] for r in rows) for rows in per_example], [len(rows) for rows in per_example]


def replay_difference(a: list[list[dict]], b: list[list[dict]], what: str = "accepted") -> Difference:
    """Per-call rate of ``what`` pooled over examples, variant ``a`` minus ``b`` replayed on the same
    examples (in order), the examples as paired clusters (:func:`intervals.rate_difference`)."""
    if len(a) != len(b):
        raise ValueError(f"need both variants replayed on the same examples, got {len(a)} and {len(b)}")
    return rate_difference(*replay_counts(a, what), *replay_counts(b, what))

