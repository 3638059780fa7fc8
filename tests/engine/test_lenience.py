"""csd_lib.engine.lenience: the per-token lenience rule reproduces every decision the engine made, and its words."""
import pytest

from csd_lib import generate, random_family
from csd_lib.engine.lenience import lenience_note, lenience_word, plan_lenience, token_lenience
from csd_lib.engine.plan import Plan

K = [[2, 3, 4], [0, 1, 3], [0, 0, 4]]


def accepted(e, lams):
    """Greedy accepted prefix of a logged review under one lenience per token (the review's rule)."""
    ok = [e.is_argmax[i] or (lams[i] > 1 and e.px[i] > e.qx[i] / lams[i]) for i in range(len(e.tokens))]
    return ok.index(False) if False in ok else len(ok)


def rule(e, plan):
    return [token_lenience(who, e.lenience, plan.mag_lenience, by_target=e.depth == 0) for who in e.proposers]


@pytest.mark.parametrize("mag_lenience", [False, True])
def test_the_rule_reproduces_every_review_of_a_run(mag_lenience):
    fam = random_family("llama", vocab_size=32, n_drafters=2, seed=3)
    g = generate(fam, [5, 6, 7, 5, 6], "csd", k=K, lenience=1000.0, mag_lenience=mag_lenience, max_new_tokens=30)
    mag_reviews = [e for e in g.events if e.depth > 0 and "mag" in e.proposers]
    assert mag_reviews and all(accepted(e, rule(e, g.plan)) == e.n_accepted for e in g.events)
    # the other MaG rule would have decided some review differently: the check can tell the two apart
    other = Plan.csd(g.plan.drafters, g.plan.k, g.plan.lenience, mag_lenience=not mag_lenience)
    assert any(accepted(e, rule(e, other)) != e.n_accepted for e in mag_reviews)


def test_token_lenience_by_hand():
    assert token_lenience("small", 5.0, False) == 5.0
    assert token_lenience("mag", 5.0, False) == 1.0 and token_lenience("mag", 5.0, True) == 5.0
    assert token_lenience("small", 5.0, True, by_target=True) == 1.0


def test_words():
    assert lenience_word(1.0) == "strict" and lenience_word(2.5) == "l = 2.5"
    assert lenience_note({"small": 5.0, "mag": 1.0}) == "l = 5 on small; strict on mag"
    assert lenience_note({"base": 3.0, "small": 3.0}) == "l = 3" and lenience_note({}) == "strict"
    csd = Plan.csd(("base", "small", "mag"), K, 5.0)
    assert plan_lenience(csd) == "l = 5, strict on mag"
    assert plan_lenience(Plan.csd(("base", "small", "mag"), K, 5.0, mag_lenience=True)) == "l = 5 on mag too"
    assert plan_lenience(Plan.csd(("base", "small", "mag"), K, 1.0, mag_lenience=True)) == "strict"
    assert plan_lenience(Plan.sd(5)) == "strict"
