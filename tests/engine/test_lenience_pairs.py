"""Which reviews are lenient, read from the plan: the target never, MaG's tokens only with mag_lenience."""
import pytest

from csd_lib.engine.lenience import lenient_reviews_says, lenient_pairs, pair_lenience, plan_pairs
from csd_lib.engine.plan import Plan

T5_K = [[4, 5, 10], [0, 1, 10], [0, 0, 10]]


def test_pairs_follow_k():
    plan = Plan.csd(["base", "small", "mag"], T5_K, lenience=5.0)
    assert plan_pairs(plan) == ["target<-base", "target<-small", "target<-mag", "base<-small", "base<-mag", "small<-mag"]
    assert plan_pairs(Plan.csd(["small", "mag"], [[8, 0], [0, 10]], lenience=5.0)) == ["target<-small", "small<-mag"]


def test_strict_mag_by_default_lenient_with_mag_lenience():
    strict_mag = Plan.csd(["base", "small", "mag"], T5_K, lenience=5.0)
    assert lenient_pairs(strict_mag) == ["base<-small"]
    assert pair_lenience(strict_mag, "small<-mag") == 1.0 and pair_lenience(strict_mag, "base<-small") == 5.0
    assert pair_lenience(strict_mag, "target<-base") == 1.0
    loose_mag = Plan.csd(["base", "small", "mag"], T5_K, lenience=5.0, mag_lenience=True)
    assert lenient_pairs(loose_mag) == ["base<-small", "base<-mag", "small<-mag"]
    assert "`base<-small`" in lenient_reviews_says(strict_mag) and "mag_lenience=False" in lenient_reviews_says(strict_mag)


def test_one_drafter_family_has_no_lenient_review():
    plan = Plan.csd(["small", "mag"], [[8, 0], [0, 10]], lenience=1000.0)
    assert lenient_pairs(plan) == [] and "no review of this plan is lenient" in lenient_reviews_says(plan)
    assert "every review is strict" in lenient_reviews_says(Plan.csd(["small", "mag"], [[8, 0], [0, 10]], lenience=1.0))
    assert pair_lenience(Plan.sd(4), "target<-small") == 1.0


def test_bad_pair_named():
    with pytest.raises(ValueError, match="reviewer<-proposer"):
        pair_lenience(Plan.csd(["small", "mag"], [[8, 0], [0, 10]]), "small-mag")
