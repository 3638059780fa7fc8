"""Notebook 00's hand-written speculative decoding: what its rounds wrote, and the round worth working by hand.

The notebook's ``sd_by_hand`` returns the output and one ``(start, draft, n_kept)`` per target call:
the round started at output position ``start``, the drafter proposed ``draft`` and the target kept
its first ``n_kept`` tokens, then added one of its own. The output is cut at EOS (or the token
budget), so the last round's tokens past the cut are not in it: :func:`round_tokens` counts only what
the output holds. :func:`pick_review_round` chooses the round whose review teaches something: a
rejection before EOS where $p(x)$ and $q(x)$ of the rejected token are neither 0 nor 1, else the
rejection whose numbers come closest to that (:attr:`WorkedRound.margin`), and says which it took.
:func:`greedy_keeps` and :func:`probs_tolerance` fill and check the notebook's table of one review.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

TRIVIAL = 5e-4  # p(x) or q(x) within this of 0 or 1 reads as 0.000 or 1.000 in a 3-digit table


def _check_rounds(rounds, n_out: int) -> None:
    for r in rounds:
        if len(r) != 3 or not 0 <= r[2] <= len(r[1]):
            raise ValueError(f"each round must be (start, draft, n_kept) with 0 <= n_kept <= len(draft), got {r!r}")
        if not 0 <= r[0] < n_out:
            raise ValueError(f"round {r!r} starts outside the output of {n_out} tokens; pass sd_by_hand's own output")


def round_tokens(rounds, n_out: int) -> tuple[int, int]:
    """(drafted tokens kept, tokens written by the target) among the ``n_out`` output tokens.

    Round ``(s, draft, n)`` wrote positions ``s .. s + n - 1`` with drafted tokens and ``s + n`` with the
    target's; positions at or past ``n_out`` (after EOS or the budget) were cut, so they count for
    neither. The two counts add up to ``n_out``.
    """
    _check_rounds(rounds, n_out)
    kept = sum(min(n, n_out - s) for s, _, n in rounds)
    written = sum(s + n < n_out for s, _, n in rounds)
    if kept + written != n_out:
        raise ValueError(f"the rounds cover {kept + written} of {n_out} output tokens; they must tile the output "
                         f"(each round starts where the previous one ended)")
    return kept, written


@dataclass(frozen=True)
class WorkedRound:
    """One round of a hand-written SD run with its numbers at temperature 1.

    ``p`` (k+1, V): the target's distributions over each drafted position and the one after;
    ``q`` (k, V): the drafter's over each drafted position. ``why`` says which rule picked it.
    """
    index: int
    start: int
    draft: tuple[int, ...]
    n_kept: int
    p: torch.Tensor
    q: torch.Tensor
    rejects_before_eos: bool  # a drafted token was rejected where the output holds the target's token
    nontrivial: bool          # the rejected token's p(x) and q(x) are neither ~0 nor ~1
    why: str
    margin: float = 0.0                  # the rejected token's min(p, 1 - p, q, 1 - q): how far from 0 or 1
    prompt: int = 0                      # which of find_review_round's prompts (0: the first)
    prompt_ids: tuple[int, ...] = ()
    out: tuple[int, ...] = ()            # that prompt's output, as the hand-written loop wrote it

    @property
    def worked(self) -> bool:
        """A rejection before EOS with p(x) and q(x) neither 0 nor 1: the review worth working by hand."""
        return self.rejects_before_eos and self.nontrivial


@torch.no_grad()
def round_probs(family, drafter, prompt_ids: list[int], prefix: list[int], draft: list[int]):
    """(p, q) of one round at temperature 1: the target's (k+1, V) and ``drafter``'s (k, V) distributions
    after ``prompt_ids`` + ``prefix`` + each drafted prefix (two forwards, on each model's device)."""
    k = len(draft)
    if k == 0:
        raise ValueError("a round needs at least one drafted token")
    out = []
    for lm, seq_tail, m in ((family.target, list(prefix) + list(draft), k), (drafter, list(prefix) + list(draft[:-1]), k - 1)):
        try:
            out.append(torch.softmax(lm.logits(lm.start(list(prompt_ids)) + seq_tail, m).float(), -1))
        finally:
            lm.release()
    return out[0], out[1]


def pick_review_round(family, drafter, prompt_ids: list[int], out: list[int], rounds) -> WorkedRound:
    """The first round of ``rounds`` (``sd_by_hand``'s) with a rejection before EOS whose rejected token has
    a p(x) and q(x) strictly between 0 and 1 (to 3 digits); else the first round with a rejection before
    EOS; else the first round. ``drafter`` is the ``LM`` that drafted (``family.drafters[0]``)."""
    _check_rounds(rounds, len(out))
    if not rounds:
        raise ValueError("no rounds to pick from; run sd_by_hand first")
    run = dict(prompt_ids=tuple(prompt_ids), out=tuple(out))
    eos = family.target.eos_token_id
    end = out.index(eos) if eos in out else len(out) - 1   # the last position the output holds
    rejecting = [i for i, (s, d, n) in enumerate(rounds) if n < len(d) and s + n <= end]
    fallback = None
    for i in rejecting:
        s, d, n = rounds[i]
        p, q = round_probs(family, drafter, prompt_ids, out[:s], d)
        px, qx = float(p[n, d[n]]), float(q[n, d[n]])
        margin = min(px, 1 - px, qx, 1 - qx)
        if margin >= TRIVIAL:
            return WorkedRound(i, s, tuple(d), n, p, q, True, True,
                               f"the first round with a rejection before EOS where the rejected token's p(x) = {px:.3f} "
                               f"and q(x) = {qx:.3f} are neither 0 nor 1", margin, **run)
        if fallback is None or margin > fallback.margin:
            fallback = WorkedRound(i, s, tuple(d), n, p, q, True, False,
                                   f"the rejection before EOS whose rejected token's p(x) = {px:.2g} and q(x) = {qx:.2g} "
                                   f"come closest to neither 0 nor 1: no rejected token here has both between "
                                   f"{TRIVIAL:g} and {1 - TRIVIAL:g}, because both models are nearly certain of "
                                   f"these tokens", margin, **run)
    if fallback is not None:
        return fallback
    s, d, n = rounds[0]
    p, q = round_probs(family, drafter, prompt_ids, out[:s], d)
    return WorkedRound(0, s, tuple(d), n, p, q, False, False,
                       "the first round: the target rejected no drafted token before EOS", **run)


def find_review_round(family, drafter, prompts, run, first_run=None) -> WorkedRound:
    """The first prompt of ``prompts`` (token id lists) whose hand-written run ``run(prompt_ids) -> (out, rounds)``
    has a round worth working (:attr:`WorkedRound.worked`), that round; else the rejection before EOS with
    the largest :attr:`~WorkedRound.margin` found, else the first prompt's first round. Prompts after the first are run only while none was found,
    and never on a family with random weights (its near-uniform p and q have nothing to find).
    ``first_run``: the first prompt's ``(out, rounds)`` when already computed."""
    prompts = [list(p) for p in prompts]
    if not prompts:
        raise ValueError("pass at least one prompt's token ids")
    best = None
    for i, ids in enumerate(prompts):
        out, rounds = first_run if i == 0 and first_run is not None else run(ids)
        w = replace(pick_review_round(family, drafter, ids, out, rounds), prompt=i)
        if w.worked or family.random_weights:
            return w
        if best is None or (w.rejects_before_eos and (not best.rejects_before_eos or w.margin > best.margin)):
            best = w
    return best


def greedy_keeps(n_kept: int, k: int) -> list[str]:
    """What greedy review did with each of ``k`` drafted tokens of which it kept ``n_kept``: ``'yes'`` for
    the kept ones, ``'no'`` at the first token that is not the target's argmax, ``'not reviewed'`` after
    it (a token past a rejection is thrown away, whatever the target thinks of it)."""
    if not 0 <= n_kept <= k:
        raise ValueError(f"need 0 <= n_kept <= k, got n_kept={n_kept}, k={k}")
    return ["yes" if i < n_kept else "no" if i == n_kept else "not reviewed" for i in range(k)]


def probs_tolerance(*dtypes: torch.dtype) -> float:
    """How far two computations of one softmax may differ (absolute, per probability) when the logits come
    from models in ``dtypes`` through different kernels (k separate forwards against one batched forward):
    1e-4 in fp32 and fp64, four units of rounding of the coarsest dtype otherwise (about 4e-3 in fp16,
    3e-2 in bf16)."""
    if not dtypes:
        raise ValueError("pass the dtype of each model that computed the probabilities")
    return max(1e-4, 4 * max(torch.finfo(d).eps for d in dtypes))
