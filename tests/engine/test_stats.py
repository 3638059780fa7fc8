"""csd_lib.engine.stats: the one SWI formula, model-size costs, per-position acceptance, a generation's counts."""
import math

import pytest

from csd_lib.engine.cascade import generate
from csd_lib.engine.stats import PairStats, Stats, model_size_costs, swi
from csd_lib.families.toy import random_family

COSTS = {"target": 1.0, "base": 0.25, "small": 0.1}


def test_swi_by_hand():
    # AR: 12 tokens x 1.0 = 12; the method: 4 x 1.0 + 8 x 0.25 + 10 x 0.1 = 7 (MaG is missing: free)
    assert swi(12, {"target": 4, "base": 8, "small": 10, "mag": 30}, COSTS) == pytest.approx(12 / 7)
    assert swi(12, {"target": 12}, COSTS) == 1.0  # AR itself
    assert swi(6, {"target": 3}, {"target": 2.0}) == pytest.approx(2.0)  # the target's own cost cancels


def test_swi_other_target_name_and_nothing_spent():
    assert swi(10, {"big": 5, "tiny": 10}, {"big": 1.0, "tiny": 0.5}, target="big") == pytest.approx(1.0)
    assert math.isnan(swi(10, {"mag": 4}, COSTS))  # no priced call at all


def test_model_size_costs_by_hand():
    assert model_size_costs({"target": 200, "base": 50, "small": 10, "mag": 0}) == \
        {"target": 1.0, "base": 0.25, "small": 0.05, "mag": 0.0}
    assert model_size_costs({"big": 4, "tiny": 1}, target="big") == {"big": 1.0, "tiny": 0.25}


def test_pair_stats_counts_reached_and_accepted_per_position():
    ps = PairStats()
    for pos, ok in [(0, True), (1, True), (2, False), (0, True), (1, False), (0, False)]:
        ps.add(pos, ok)
    assert ps.reached == [3, 2, 1] and ps.accepted == [2, 1, 0]
    assert ps.conditional() == pytest.approx([2 / 3, 1 / 2, 0.0])
    gap = PairStats()
    gap.add(2, True)  # positions never reached read as NaN
    assert gap.reached == [0, 0, 1]
    c = gap.conditional()
    assert math.isnan(c[0]) and math.isnan(c[1]) and c[2] == 1.0


def _stats(**kw):
    base = dict(n_tokens=12, wall_time=2.0, calls={"target": 4, "base": 8, "small": 10, "mag": 30},
                forward_time={"target": 0.8, "base": 0.4, "small": 0.3},
                params={"target": 400, "base": 100, "small": 40, "mag": 0}, acceptance={})
    return Stats(**{**base, **kw})


def test_stats_derived_numbers_by_hand():
    s = _stats()
    assert s.tokens_per_target_call == 3.0
    assert s.outside_forward_time == pytest.approx(0.5) and s.outside_share == pytest.approx(0.25)
    assert s.swi(COSTS) == swi(12, s.calls, COSTS) == pytest.approx(12 / 7)
    assert s.model_size_costs() == {"target": 1.0, "base": 0.25, "small": 0.1, "mag": 0.0}
    assert s.swi_model_size == pytest.approx(12 / 7)  # the same prices as COSTS
    assert math.isnan(s.swi_previous_work)  # no table given
    assert _stats(previous_work_costs={"target": 1.0, "base": 0.04, "small": 0.02}).swi_previous_work == \
        pytest.approx(12 / (4 + 8 * 0.04 + 10 * 0.02))


def test_stats_edge_cases():
    s = _stats(wall_time=0.5, calls={"target": 0})
    assert s.outside_forward_time == 0.0  # forwards longer than the wall clock: clamped, not negative
    assert s.tokens_per_target_call == 12.0  # no target call: divided by 1, not by 0
    assert _stats(wall_time=0.0).outside_share == 0.0


def test_stats_to_dict_holds_fields_and_derived_numbers():
    ps = PairStats()
    ps.add(0, True)
    d = _stats(acceptance={"target<-base": ps}).to_dict()
    assert d["acceptance"] == {"target<-base": {"reached": [1], "accepted": [1]}}
    assert d["tokens_per_target_call"] == 3.0 and d["swi_model_size"] == pytest.approx(12 / 7)
    assert math.isnan(d["swi_previous_work"]) and d["calls"]["mag"] == 30


@pytest.fixture(scope="module")
def gens():
    fam = random_family("t5", vocab_size=32, n_drafters=2, seed=3, eos=None)
    return {m: [generate(fam, p, m, max_new_tokens=16) for p in ([5, 6, 7, 5, 6], [9, 4, 9, 4])]
            for m in ("ar", "csd")}


def test_generation_stats_use_the_one_formula(gens):
    for g in gens["ar"]:
        assert g.stats.calls == {"target": g.stats.n_tokens}  # AR: one target call per token
        assert g.stats.swi(COSTS) == 1.0 and g.stats.swi_model_size == 1.0
    for g in gens["csd"]:
        st = g.stats
        assert st.swi(COSTS) == swi(st.n_tokens, st.calls, COSTS)
        by_hand = st.n_tokens / sum(n * st.params[m] / st.params["target"] for m, n in st.calls.items())
        assert st.swi_model_size == pytest.approx(by_hand)


def test_pooled_generations_are_priced_on_summed_tokens_and_calls(gens):
    a, b = (g.stats for g in gens["csd"])
    calls = {m: a.calls.get(m, 0) + b.calls.get(m, 0) for m in {*a.calls, *b.calls}}
    pooled = swi(a.n_tokens + b.n_tokens, calls, COSTS)
    spent = lambda s: sum(n * COSTS.get(m, 0.0) for m, n in s.calls.items())  # noqa: E731
    assert pooled == pytest.approx((a.n_tokens + b.n_tokens) / (spent(a) + spent(b)))
    # total cost over total cost, not a mean of ratios: it lies between the two generations' SWI
    assert min(a.swi(COSTS), b.swi(COSTS)) <= pooled <= max(a.swi(COSTS), b.swi(COSTS))
