"""Max-Gram: longest match, tie rule, bigram fill, vectorized matcher against a slow reference."""
import numpy as np
import pytest

from csd_lib.engine.mag import BIGRAM, MATCH, MaG, build_bigram, longest_suffix_match, slow_longest_suffix_match


def test_longest_match_wins_over_shorter_recent_one():
    #         0  1  2  3  4  5  6  7  8  9
    hay = np.array([7, 1, 2, 3, 9, 5, 3, 8, 2, 3])     # suffix [2,3]: at end 4 (len 2), [3] at 7 (len 1)
    end, length = longest_suffix_match(hay)
    assert (end, length) == (4, 2)


def test_tie_rule_recent_vs_leftmost():
    hay = np.array([1, 2, 5, 1, 2, 6, 1, 2])          # [1,2] ends at 2 and at 5
    assert longest_suffix_match(hay, "recent") == (5, 2)
    assert longest_suffix_match(hay, "leftmost") == (2, 2)


def test_no_match():
    assert longest_suffix_match(np.array([1, 2, 3])) == (-1, 0)
    assert longest_suffix_match(np.array([4])) == (-1, 0)


def test_propose_copies_then_fills_with_bigram():
    bigram = np.arange(20, dtype=np.int32)[::-1].copy()   # next(v) = 19 - v
    mag = MaG(bigram, n=5)
    hay = np.array([4, 5, 6, 9, 4, 5])                     # match [4,5] -> copies 6, 9, 4, 5 (4 tokens)
    prop = mag.lookup(hay)
    assert prop.tokens == [6, 9, 4, 5, 14]
    assert prop.provenance == [MATCH] * 4 + [BIGRAM]


def test_propose_without_match_is_all_bigram():
    bigram = np.array([1, 2, 3, 0], dtype=np.int32)
    prop = MaG(bigram, n=4).lookup(np.array([3]))
    assert prop.tokens == [0, 1, 2, 3] and prop.provenance == [BIGRAM] * 4


def test_vectorized_matches_slow_reference_on_random_inputs():
    rng = np.random.default_rng(0)
    for trial in range(500):
        n = int(rng.integers(1, 80))
        vocab = int(rng.integers(2, 8))
        hay = rng.integers(0, vocab, size=n)
        if trial % 3 == 0:  # long repeats
            hay = np.tile(hay[: max(1, n // 4)], 4)
        for rule in ("recent", "leftmost"):
            for max_len in (3, 64):
                assert longest_suffix_match(hay, rule, max_len) == slow_longest_suffix_match(
                    hay.tolist(), rule, max_len), (hay.tolist(), rule, max_len)


def test_build_bigram_most_frequent_successor_and_fallback():
    t = build_bigram([[1, 2, 1, 2, 1, 3], [4]], vocab_size=6)
    assert t[1] == 2 and t[2] == 1 and t.dtype == np.int32 and len(t) == 6
    assert t[0] == 1 and t[5] == 1   # unseen tokens fall back to the most frequent token (1)
    with pytest.raises(ValueError, match="out of range"):
        build_bigram([[9]], vocab_size=6)


def test_bigram_must_cover_logits():
    with pytest.raises(ValueError, match="rebuild"):
        MaG(np.zeros(100, dtype=np.int32)).check_vocab(128)
