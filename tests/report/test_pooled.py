"""Pooled bench rates per example and the difference of two methods match the summary's pooled numbers."""
import math

import pytest

from csd_lib.report.pooled import example_counts, method_difference
from csd_lib.report.summary import summarize

PARAMS = {"target": 100, "base": 10, "small": 2}


def _rec(ex, method, tokens, calls):
    return dict(example=ex, method=method, family="tiny-t5", token_ids=list(range(tokens)),
                stats=dict(n_tokens=tokens, wall_time=1.0, calls=calls, forward_time={}, params=PARAMS, acceptance={}))


def _records():
    rows = []
    for ex, (t_sd, t_csd) in enumerate([(10, 8), (12, 9), (11, 7), (9, 8)]):
        rows.append(_rec(ex, "ar", 40, {"target": 40}))
        rows.append(_rec(ex, "sd", 40, {"target": t_sd, "base": 4 * t_sd}))
        rows.append(_rec(ex, "csd", 40, {"target": t_csd, "base": 10, "small": 30, "mag": 50}))
    return rows


def test_counts_pool_to_the_summary():
    recs = _records()
    s = summarize(recs)
    for m in ("sd", "csd"):
        for per, key in (("target call", "mean_tokens_per_target_call"), ("model size", "speedup_swi_ms")):
            c = example_counts(recs, m, per)
            assert math.isclose(sum(t for t, _ in c.values()) / sum(d for _, d in c.values()), s[m][key])


def test_difference_direction_and_small_n():
    recs = _records()
    d = method_difference(recs, "csd", "sd")             # csd needs fewer target calls on every example
    assert d.estimate > 0 and d.n == 4 and d.verdict == "higher"
    few = [r for r in recs if r["example"] < 2]
    assert method_difference(few, "csd", "sd").verdict == "too few"


def test_bad_inputs():
    with pytest.raises(ValueError, match="per must be"):
        example_counts(_records(), "sd", per="walltime")
    with pytest.raises(ValueError, match="no successful record"):
        example_counts(_records(), "staged")
