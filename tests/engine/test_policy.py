"""Draft-length policies (csd_lib.engine.policy): their rules, the plan's checks, and what a generation logs.

Losslessness under every policy is tested in test_policy_lossless.py.
"""
import functools

import numpy as np
import pytest
import torch

from csd_lib import generate, random_family
from csd_lib.engine.levels import Block
from csd_lib.engine.plan import Plan, check_draft_policy, check_policy_args, make_plan
from csd_lib.engine.policy import CONFIDENCE, POLICIES, DraftLength, best_length, expected_tokens, tokens_per_cost
from csd_lib.engine.stats import PairStats
from csd_lib.price.ewif import best_k_sd, ewif_horizontal, ewif_sd, expected_tokens_horizontal


@functools.lru_cache(maxsize=None)
def family(arch="llama", nd=2, same=False):
    return random_family(arch, vocab_size=48, n_drafters=nd, seed=0, drafter_is_target=same, eos=None)


PROMPT = np.random.default_rng(1).integers(3, 48, size=12).tolist()


# -- the formula the ewif policy maximises, one home shared with price/ewif.py ----------------------------

@pytest.mark.parametrize("alphas,costs", [([0.9, 0.8, 0.3], [0.1, 0.1, 0.0]), ([0.5] * 6, [0.02] * 6),
                                          ([1.0, 0.0, 0.7], [0.3, 0.2, 0.1])])
def test_formula_agrees_with_price(alphas, costs):
    assert tokens_per_cost(alphas, costs) == pytest.approx(ewif_horizontal(alphas, costs))
    assert expected_tokens(alphas)[-1] == pytest.approx(expected_tokens_horizontal(alphas))
    assert expected_tokens(alphas)[0] == 1  # no draft: the reviewer's own token


@pytest.mark.parametrize("alpha,c", [(0.5, 0.02), (0.8, 0.05), (0.95, 0.1), (0.3, 0.5), (0.99, 0.01)])
def test_best_length_is_sd_best_k(alpha, c):
    k_max = 40
    k, best = best_k_sd(alpha, c, k_max)
    assert best_length([alpha] * k_max, [c] * k_max) == k
    assert tokens_per_cost([alpha] * k, [c] * k) == pytest.approx(ewif_sd(alpha, k, c)) == pytest.approx(best)


# -- the rules ------------------------------------------------------------------------------------------

def test_schedule_follows_transformers_rule_within_k():
    pol = DraftLength("schedule", [3, 5])  # K row total 5: the start and the bound
    assert pol.limit(99, {}, []) == 5
    seen = []
    for drafted, accepted in [(5, 5), (5, 2), (4, 0), (3, 1), (2, 2), (4, 4), (5, 0), (4, 1), (3, 0), (2, 0), (1, 0)]:
        pol.update(drafted, accepted)
        seen.append(pol.limit(99, {}, []))
    assert seen == [5, 4, 3, 2, 4, 5, 4, 3, 2, 1, 1]
    assert pol.limit(2, {}, []) == 1 and DraftLength("schedule", [4]).limit(2, {}, []) == 2  # room left caps it
    pol.start()
    assert pol.limit(99, {}, []) == 5  # a new generation starts again at K


def test_fixed_leaves_the_room_to_k():
    pol = DraftLength("fixed", [2, 2, 12])
    assert pol.limit(40, {}, []) == 40 and pol.last == 12  # K's thresholds stop the sub-drafters, not the limit
    pol.update(12, 0)
    assert pol.limit(40, {}, []) == 40


def test_confidence_stops_after_an_unsure_block():
    pol = DraftLength("confidence", [5], confidence=0.4)
    assert pol.stops(Block([7, 8], None, ["small"] * 2, qx=[0.9, 0.3]))
    assert not pol.stops(Block([7, 8], None, ["small"] * 2, qx=[0.1, 0.6]))  # only the last token's law counts
    assert not pol.stops(Block([7, 8, 9], None, ["mag"] * 3))                # MaG: one-hot, never unsure
    q = torch.tensor([[0.5, 0.3, 0.2], [0.35, 0.33, 0.32]])
    assert pol.stops(Block([0, 2], q, ["small"] * 2))                        # top-1 0.35, not q(x) = 0.32 only
    assert not pol.stops(Block([0], q[:1], ["small"]))
    assert not DraftLength("fixed", [5]).stops(Block([7], None, ["small"], qx=[0.01]))


def test_ewif_lengthens_with_acceptance_and_cheap_drafts():
    def rates(acc, n):
        st = PairStats()
        for i in range(n):
            st.add(0, i < acc)
        return {"target<-small": st}
    pol = DraftLength("ewif", [12], costs=[0.05])
    short = pol.limit(99, rates(2, 40), ["target<-small"])
    long = pol.limit(99, rates(39, 40), ["target<-small"])
    assert short < long <= 12
    alpha = (39 + 1) / (40 + 2)  # the prior: one accepted, one rejected
    assert long == min(12, best_k_sd(alpha, 0.05, 12)[0])
    dear = DraftLength("ewif", [12], costs=[0.9]).limit(99, rates(39, 40), ["target<-small"])
    assert dear < long
    # a horizontal row: positions past the neural drafter's share are MaG's, free: ewif keeps them
    hz = DraftLength("ewif", [2, 12], costs=[0.05, 0.0])
    assert hz.limit(99, {}, ["target<-base", "target<-mag"]) == 12


# -- the plan ---------------------------------------------------------------------------------------------

def test_plan_holds_one_policy_per_k_row_and_round_trips():
    fam = family()
    plan = make_plan(fam, "csd", draft_policy="schedule")
    assert plan.draft_policy == ("schedule",) * 3 and plan.draft_costs == ()
    mixed = make_plan(fam, "csd", draft_policy=["ewif", "schedule", "confidence"], confidence=0.3)
    assert mixed.draft_policy == ("ewif", "schedule", "confidence") and mixed.confidence == 0.3
    assert len(mixed.draft_costs) == 3 and mixed.draft_costs[-1] == 0.0 and all(c > 0 for c in mixed.draft_costs[:2])
    for p in (plan, mixed, make_plan(fam, "ar"), make_plan(fam, "sd", k=4)):
        assert Plan.from_dict(p.to_dict()) == p
    old = {k: v for k, v in make_plan(fam, "csd").to_dict().items()
           if k not in ("draft_policy", "confidence", "draft_costs")}
    assert Plan.from_dict(old) == make_plan(fam, "csd")  # records from before the policies read as fixed
    assert make_plan(fam, "ar").draft_policy == () and make_plan(fam, "sd").draft_policy == ("fixed",)


@pytest.mark.parametrize("kwargs,match", [
    (dict(method="csd", draft_policy="fast"), "bad draft policy"),
    (dict(method="csd", draft_policy=["fixed", "schedule"]), "needs 3 names"),
    (dict(method="csd", draft_policy=[]), "bad draft policy"),
    (dict(method="ar", draft_policy="schedule"), "drafts nothing"),
    (dict(method="mag", draft_policy="confidence"), "no probabilities"),
    (dict(method="csd", draft_policy="confidence", confidence=1.5), "confidence must be a probability"),
    (dict(method="csd", draft_policy="schedule", confidence=0.5), "uses none"),
    (dict(method="sd", draft_policy="fixed", draft_costs=[0.1]), "no ewif level"),
])
def test_bad_policy_settings_say_what_to_do(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_plan(family(), **kwargs)


def test_policy_checks_before_a_family():
    check_policy_args("csd", "ewif")
    with pytest.raises(ValueError, match="token tree"):
        check_policy_args("tree-sd", "schedule")
    with pytest.raises(ValueError, match="uses none"):
        check_policy_args("sd", None, 0.3)
    assert check_draft_policy("ewif", "sd") == ("ewif",) and set(POLICIES) == {"fixed", "schedule", "confidence",
                                                                               "ewif"}
    with pytest.raises(ValueError, match="draft_costs"):
        Plan.sd(3, draft_policy="ewif")  # no family, no default costs: give them
    assert Plan.sd(3, draft_policy="ewif", draft_costs=[0.1]).draft_costs == (0.1,)
    with pytest.raises(ValueError, match="draft_costs"):
        Plan.sd(3, draft_policy="ewif", draft_costs=[0.0])
    assert Plan.sd(3).confidence == CONFIDENCE


# -- what a generation logs -------------------------------------------------------------------------------

def test_events_log_the_schedule_round_by_round():
    g = generate(family(), PROMPT, "sd", k=5, max_new_tokens=40, draft_policy="schedule")
    tops = [e for e in g.events if e.depth == 0]
    assert tops[0].draft_length == 5
    for prev, cur in zip(tops, tops[1:]):
        step = 2 if prev.n_accepted == len(prev.tokens) else -1
        assert cur.draft_length == min(5, max(1, prev.draft_length + step))
        assert len(cur.tokens) <= cur.draft_length
    assert g.draft_lengths() == [len(e.tokens) for e in tops] and len(set(g.draft_lengths())) > 1
    assert g.plan.to_dict()["draft_policy"] == ["schedule"]


def test_every_level_of_a_cascade_adapts():
    k = [[3, 2, 10], [0, 2, 5], [0, 0, 5]]
    g = generate(family(), PROMPT, "csd", k=k, max_new_tokens=40, draft_policy="schedule")
    for depth, total in ((0, 15), (1, 7)):
        asked = [e.draft_length for e in g.events if e.depth == depth]
        assert asked[0] == total and min(asked) < total, depth


def test_fixed_is_the_default_and_logs_k():
    fam = family()
    a = generate(fam, PROMPT, "csd", max_new_tokens=30)
    b = generate(fam, PROMPT, "csd", max_new_tokens=30, draft_policy="fixed")
    assert a.token_ids == b.token_ids and a.events == b.events and a.plan == b.plan
    row0 = int(np.sum(a.plan.k[0]))
    assert {e.draft_length for e in a.events if e.depth == 0} == {row0}
    mag = generate(fam, PROMPT, "mag", k=3, max_new_tokens=30)  # fixed: MaG's block overshoots its threshold
    assert max(mag.draft_lengths()) > 3
    assert max(generate(fam, PROMPT, "mag", k=3, max_new_tokens=30, draft_policy="schedule").draft_lengths()) <= 3


def test_confidence_and_ewif_shorten_drafts_of_an_unsure_drafter():
    fam = family()  # random drafters: their top-1 is far below 0.4, their acceptance low
    fixed = generate(fam, PROMPT, "sd", k=5, max_new_tokens=30)
    for policy in ("confidence", "ewif"):
        g = generate(fam, PROMPT, "sd", k=5, max_new_tokens=30, draft_policy=policy)
        assert np.mean(g.draft_lengths()) < np.mean(fixed.draft_lengths()), policy
        d = g.plan.drafters[0]
        assert g.stats.calls[d] < fixed.stats.calls[d], policy
