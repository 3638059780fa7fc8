"""Max-Gram (MaG): the free statistical drafter at the bottom of every cascade.

MaG matches the longest suffix of the current sequence against everything seen so far
(prompt plus generated text; for T5 the encoder input plus the decoder tokens) and
copies the tokens that followed the match. Slots it cannot fill by copying are filled by
chaining a greedy bigram table ``next_token[v]``.

Tie rule: among the longest matches we take the **most recent** one by default. Text that
is being generated tends to repeat its own latest pattern (a list, a running sum, "The
answer is"), so the latest occurrence predicts the continuation better than the first
one; ``rule="leftmost"`` gives the official code's behaviour for comparison.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .plan import MAG, MAG_BLOCK

MATCH, BIGRAM = "mag-match", "mag-bigram"


def longest_suffix_match(hay: np.ndarray, rule: str = "recent", max_len: int = 64) -> tuple[int, int]:
    """Find the longest earlier occurrence of a suffix of ``hay``.

    Returns ``(end, length)``: ``hay[end - length:end]`` equals the last ``length``
    tokens, with ``end < len(hay)`` so at least one token follows the match; ``(-1, 0)``
    when the last token never occurred before. The loop runs over match lengths (at most
    ``max_len``), never over haystack positions.
    """
    n = len(hay)
    if n < 2:
        return -1, 0
    if rule not in ("recent", "leftmost"):
        raise ValueError(f"unknown MaG rule {rule!r}; use 'recent' or 'leftmost'")
    ends = np.flatnonzero(hay[:-1] == hay[-1]) + 1  # candidate match ends (exclusive)
    if ends.size == 0:
        return -1, 0
    length = 1
    while length < max_len:
        starts = ends - length - 1  # the token before each candidate's current match
        ok = starts >= 0
        ok[ok] = hay[starts[ok]] == hay[n - length - 1] if n - length - 1 >= 0 else False
        if not ok.any():
            break
        ends = ends[ok]
        length += 1
    end = int(ends[-1] if rule == "recent" else ends[0])
    return end, length


def continuations(hay: np.ndarray, max_len: int = 64) -> list[int]:
    """The distinct tokens that followed earlier matches of a suffix of ``hay``: longest match first,
    then the most recent (so the first is what ``longest_suffix_match``'s recent rule copies)."""
    n = len(hay)
    ends = np.flatnonzero(hay[:-1] == hay[-1]) + 1 if n >= 2 else np.zeros(0, dtype=np.int64)  # match ends
    lengths = np.ones(len(ends), dtype=np.int64)
    live = np.ones(len(ends), dtype=bool)
    for length in range(1, min(max_len, n - 1)):
        starts = ends - length - 1  # the token before each live match
        live &= starts >= 0
        live[live] = hay[starts[live]] == hay[n - length - 1]
        if not live.any():
            break
        lengths += live
    out: list[int] = []
    for i in np.lexsort((-ends, -lengths)):  # by length, then recency, both descending
        if int(hay[ends[i]]) not in out:
            out.append(int(hay[ends[i]]))
    return out


def slow_longest_suffix_match(hay: list[int], rule: str = "recent", max_len: int = 64) -> tuple[int, int]:
    """Reference implementation of :func:`longest_suffix_match` (quadratic, for tests)."""
    n = len(hay)
    best_end, best_len = -1, 0
    for end in range(1, n):
        length = 0
        while (length < max_len and end - length - 1 >= 0 and n - length - 1 >= 0
               and hay[end - length - 1] == hay[n - length - 1]):
            length += 1
        if length == 0:
            continue
        if length > best_len or (length == best_len and rule == "recent"):
            best_end, best_len = end, length
    return best_end, best_len


def build_bigram(sequences: Iterable[Iterable[int]], vocab_size: int) -> np.ndarray:
    """Greedy bigram table: the most frequent successor of every token (int32, (V,)).

    Tokens never seen with a successor map to the corpus's most frequent token.
    """
    counts = np.zeros((vocab_size, vocab_size), dtype=np.int64) if vocab_size <= 8192 else None
    unigram = np.zeros(vocab_size, dtype=np.int64)
    pairs: dict[tuple[int, int], int] = {}
    for seq in sequences:
        a = np.asarray(list(seq), dtype=np.int64)
        if a.size == 0:
            continue
        if a.max() >= vocab_size or a.min() < 0:
            raise ValueError(f"token id out of range for a bigram table of size {vocab_size}")
        np.add.at(unigram, a, 1)
        if a.size < 2:
            continue
        if counts is not None:
            np.add.at(counts, (a[:-1], a[1:]), 1)
        else:
            for x, y in zip(a[:-1].tolist(), a[1:].tolist()):
                pairs[(x, y)] = pairs.get((x, y), 0) + 1
    fallback = int(unigram.argmax())
    table = np.full(vocab_size, fallback, dtype=np.int32)
    if counts is not None:
        seen = counts.sum(1) > 0
        table[seen] = counts[seen].argmax(1)
    else:
        best: dict[int, tuple[int, int]] = {}
        for (x, y), c in pairs.items():
            if c > best.get(x, (0, -1))[0]:
                best[x] = (c, y)
        for x, (_, y) in best.items():
            table[x] = y
    return table


def load_bigram(path: str | Path) -> np.ndarray:
    """Load a bigram table written by ``np.save``."""
    return np.load(path).astype(np.int32)


@dataclass
class Proposal:
    """Tokens proposed by a drafter, with per-token provenance."""
    tokens: list[int]
    provenance: list[str]


class MaG:
    """Max-Gram drafter: longest suffix match, then bigram fill; proposes ``n`` tokens."""
    name = MAG

    def __init__(self, bigram: np.ndarray, n: int = MAG_BLOCK, rule: str = "recent", max_match: int = 64):
        if n < 1:
            raise ValueError(f"MaG must propose at least 1 token per call, got n={n}")
        if rule not in ("recent", "leftmost"):
            raise ValueError(f"unknown MaG rule {rule!r}; use 'recent' or 'leftmost'")
        self.bigram = np.asarray(bigram, dtype=np.int32)
        self.n, self.rule, self.max_match = n, rule, max_match

    def check_vocab(self, vocab_size: int) -> None:
        """The bigram table must cover every logit of the models it drafts for."""
        if len(self.bigram) != vocab_size:
            raise ValueError(f"the MaG bigram table has {len(self.bigram)} entries but the models "
                             f"have {vocab_size} logits; rebuild it with vocab_size={vocab_size}")

    def lookup(self, hay: np.ndarray, n: int | None = None) -> Proposal:
        """``n`` tokens continuing ``hay`` (1-D int array: context + generated): the longest suffix match, then
        bigram fill. Not the drafter protocol's ``propose``: the MaG level (:mod:`csd_lib.engine.levels`) wraps it."""
        n = self.n if n is None else n
        end, length = longest_suffix_match(hay, self.rule, self.max_match)
        tokens: list[int] = hay[end:end + n].tolist() if length > 0 else []
        prov = [MATCH] * len(tokens)
        last = tokens[-1] if tokens else int(hay[-1])
        while len(tokens) < n:
            last = int(self.bigram[last])
            tokens.append(last)
            prov.append(BIGRAM)
        return Proposal(tokens, prov)
