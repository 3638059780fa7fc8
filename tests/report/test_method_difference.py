"""report.compare.method_difference: two methods of one bench, pooled as the summary pools them."""
import math

import pytest

from csd_lib.report.compare import method_difference
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


def test_rates_pool_to_the_summary():
    recs = _records()
    s = summarize(recs)
    ar = {(m, per): method_difference(recs, m, "ar", per) for m in ("sd", "csd") for per in ("target call", "model size")}
    for m in ("sd", "csd"):  # AR's rate is 1 either way: the difference plus 1 is the method's pooled rate
        assert math.isclose(ar[m, "target call"].estimate + 1, s[m]["mean_tokens_per_target_call"])
        assert math.isclose(ar[m, "model size"].estimate + 1, s[m]["speedup_swi_ms"])


def test_difference_direction_and_small_n():
    recs = _records()
    d = method_difference(recs, "csd", "sd")             # csd needs fewer target calls on every example
    assert d.estimate > 0 and d.n == 4 and d.verdict == "higher"
    few = [r for r in recs if r["example"] < 2]
    assert method_difference(few, "csd", "sd").verdict == "too few"


def test_bad_inputs():
    with pytest.raises(ValueError, match="per must be"):
        method_difference(_records(), "csd", "sd", per="walltime")
    with pytest.raises(ValueError, match="no successful record"):
        method_difference(_records(), "staged", "sd")
