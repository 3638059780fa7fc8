"""csd_lib.teach.replay: statistical drafters replayed along a reference, on hand-made token sequences."""
import numpy as np
import pytest

from csd_lib.engine.mag import BIGRAM, MATCH, MaG
from csd_lib.report.intervals import rate_difference
from csd_lib.teach.replay import (RuleProposal, mag_proposer, prompt_lookup_proposer, replay, replay_counts,
                                 replay_difference, replay_summary)

# bigram table over 10 tokens: v -> (v + 1) % 10
BIGRAM_TABLE = np.array([(v + 1) % 10 for v in range(10)], dtype=np.int32)


def hay(*ids):
    return np.asarray(ids, dtype=np.int64)


def test_prompt_lookup_copies_after_the_first_occurrence():
    propose = prompt_lookup_proposer(n=10, max_ngram=2)
    p = propose(hay(1, 2, 3, 1, 2))  # the bigram (1, 2) occurred at 0: copy what followed it
    assert (p.tokens, p.match_len) == ([3, 1, 2], 2) and p.provenance == [MATCH] * 3
    p = propose(hay(7, 1, 5, 1, 9, 1))  # unigram 1: the leftmost occurrence wins, even if a later one exists
    assert (p.tokens, p.match_len) == ([5, 1, 9, 1], 1)
    assert prompt_lookup_proposer(n=2)(hay(1, 2, 3, 1, 2)).tokens == [3, 1]  # at most n tokens
    assert propose(hay(1, 2, 3)) == RuleProposal([], [], 0)  # no match: no fallback


def test_mag_proposer_variants():
    mag = MaG(BIGRAM_TABLE, n=4)
    h = hay(5, 8, 2, 5, 8)  # suffix (5, 8) matched at 0..2: copy 2, 5, 8, then bigram 8 -> 9
    full = mag_proposer(mag)(h)
    assert full.tokens == [2, 5, 8, 9] and full.provenance == [MATCH, MATCH, MATCH, BIGRAM] and full.match_len == 2
    copied = mag_proposer(mag, fallback=False)(h)
    assert copied.tokens == [2, 5, 8] and copied.provenance == [MATCH] * 3
    chain = mag_proposer(mag, n=3, match=False)(h)
    assert chain.tokens == [9, 0, 1] and chain.provenance == [BIGRAM] * 3 and chain.match_len == 0
    with pytest.raises(ValueError, match="needs match=True or fallback=True"):
        mag_proposer(mag, match=False, fallback=False)


def test_replay_accepts_the_longest_prefix_that_equals_the_reference():
    def propose(h):  # always proposes 4, 5, 6
        return RuleProposal([4, 5, 6], [MATCH, MATCH, BIGRAM], 1)
    rows = replay(propose, [1, 2], [4, 5, 7, 4], n=10)
    assert [r["accepted"] for r in rows] == [2, 0, 0, 1]  # t=0: 4 5 (7 != 6); t=3: 4 (then the reference ends)
    assert [r["hit"] for r in rows] == [True, False, False, True]
    assert rows[0]["accepted_match"] == 2 and rows[0]["accepted_bigram"] == 0
    assert all(r["proposed"] == 3 and r["from_match"] == 2 for r in rows)
    assert replay(propose, [1], [4, 5, 6], n=2)[0]["accepted"] == 2  # n cuts the proposal


def test_replay_haystack_is_prompt_plus_reference_so_far():
    seen = []

    def propose(h):
        seen.append(h.tolist())
        return RuleProposal([], [], 0)
    replay(propose, [1, 2], [3, 4], n=5)
    assert seen == [[1, 2], [1, 2, 3]]
    seen.clear()
    rows = replay(propose, [1, 2], [3, 4], n=5, decoder_only_hay=True)
    assert seen == [[3]] and rows[0]["proposed"] == 0  # t=0: an empty haystack proposes nothing


def test_mag_replay_on_a_repeating_reference():
    mag = MaG(BIGRAM_TABLE, n=3)
    rows = replay(mag_proposer(mag), [2, 7, 3], [2, 7, 3, 2, 7], n=3)
    # t=1: hay 2 7 3 2 matches "2" at 0, copies 7 3 2: the reference continues 7 3 2
    assert rows[1]["accepted"] == 3 and rows[1]["accepted_match"] == 3


def test_replay_summary_by_hand():
    rows = [dict(proposed=3, accepted=2, hit=True, from_match=2, accepted_bigram=1),
            dict(proposed=0, accepted=0, hit=False, from_match=0, accepted_bigram=0),
            dict(proposed=3, accepted=1, hit=True, from_match=3, accepted_bigram=0)]
    s = replay_summary(rows, "mine")
    assert s == dict(variant="mine", positions=3, hit_rate=pytest.approx(2 / 3), mean_accepted=pytest.approx(1.0),
                     match_share=pytest.approx(5 / 6), no_proposal=pytest.approx(1 / 3),
                     accepted_from_bigram=pytest.approx(1 / 3))
    empty = replay_summary([], "none")
    assert empty["positions"] == 0 and empty["hit_rate"] == 0.0 and empty["match_share"] == 0.0


def test_replay_difference_pairs_the_examples():
    a = [[dict(accepted=2, hit=True), dict(accepted=0, hit=False)], [dict(accepted=3, hit=True)],
         [dict(accepted=1, hit=True)] * 3]
    b = [[dict(accepted=1, hit=True), dict(accepted=0, hit=False)], [dict(accepted=0, hit=False)],
         [dict(accepted=0, hit=False)] * 3]
    assert replay_counts(a) == ([2, 3, 3], [2, 1, 3]) and replay_counts(b, "hit") == ([1, 0, 0], [2, 1, 3])
    d = replay_difference(a, b)
    assert d == rate_difference([2, 3, 3], [2, 1, 3], [1, 0, 0], [2, 1, 3])
    assert d.estimate == pytest.approx(8 / 6 - 1 / 6)
    with pytest.raises(ValueError, match="same examples"):
        replay_difference(a, b[:2])
    with pytest.raises(ValueError, match="what must be"):
        replay_counts(a, "tokens")
