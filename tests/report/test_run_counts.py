"""csd_lib.report.run_counts: per-prompt counts, pooled rates and paired differences, on hand-made runs."""
import math
from types import SimpleNamespace

import pytest

from csd_lib.engine.stats import PairStats
from csd_lib.report.intervals import rate_difference
from csd_lib.report.run_counts import (call_counts, calls_per_token, calls_per_token_difference, pair_counts,
                                       pair_rate, pair_rate_difference)


def run(reached, accepted, calls, tokens):
    acc = {} if reached is None else {"base<-mag": PairStats(list(reached), list(accepted))}
    return SimpleNamespace(stats=SimpleNamespace(acceptance=acc, calls=calls, n_tokens=tokens))


A = [run([4, 2], [2, 1], {"base": 3, "target": 2}, 10), run(None, None, {"target": 5}, 6),
     run([5, 3, 1], [3, 1, 0], {"base": 6, "target": 3}, 12)]
B = [run([4, 1], [1, 0], {"base": 5, "target": 4}, 10), run([2], [2], {"base": 1, "target": 2}, 6),
     run([6, 2], [2, 1], {"base": 8, "target": 5}, 12)]


def test_pair_counts_and_the_pooled_rate():
    assert pair_counts(A, "base<-mag") == ([3, 0, 4], [6, 0, 9])   # a prompt where the pair never met: 0 of 0
    assert pair_rate(A, "base<-mag") == 7 / 15
    assert math.isnan(pair_rate(A, "target<-mag"))               # never reviewed: NaN, not 0
    d = pair_rate_difference(A, B, "base<-mag")
    assert d == rate_difference([3, 0, 4], [6, 0, 9], [1, 2, 3], [5, 2, 8])
    assert d.estimate == pytest.approx(7 / 15 - 6 / 15)


def test_calls_per_token():
    assert call_counts(A, "base") == ([3, 0, 6], [10, 6, 12])
    assert calls_per_token(A, "base") == 9 / 28 and calls_per_token(B, "target") == 11 / 28
    d = calls_per_token_difference(A, B, "base")
    assert d.estimate == pytest.approx(9 / 28 - 14 / 28) and d.n == 3
    with pytest.raises(ValueError, match="one run per prompt on both sides"):
        calls_per_token_difference(A, B[:2], "base")
