"""The typed plan: built once from a family (duck-typed) or by hand, validated, round-tripped as JSON."""
import json
from types import SimpleNamespace as NS

import pytest

from csd_lib.engine.plan import MAG_BLOCK, MAG_LENIENCE, Plan, make_plan


def family(mag_n=7):
    """Only what make_plan reads: no models load."""
    return NS(name="fake", drafters=[NS(name="base"), NS(name="small")], mag=NS(n=mag_n), sd_k=4,
              staged_k=[[5, 0], [0, 3]], default_k=[[4, 5, 9], [0, 1, 9], [0, 0, 9]], default_lenience=3.0)


def test_make_plan_resolves_every_method_from_the_family():
    f = family()
    assert make_plan(f, "ar") == Plan("ar", family="fake")
    sd = make_plan(f, "sd", drafter="small", max_new_tokens=9)
    assert (sd.drafters, sd.k, sd.bottom_block, sd.max_new_tokens) == (("small",), ((4,),), 1, 9)
    assert make_plan(f, "sd", k=6).drafters == ("base",) and make_plan(f, "sd", k=6).k == ((6,),)
    mag = make_plan(f, "mag")
    assert mag.k == ((7,),) and mag.mag_block == 7 == mag.bottom_block   # MaG's block is the family's
    assert make_plan(f, "staged").k == ((5, 0), (0, 3))
    csd = make_plan(f, "csd", temperature=0.5, seed=3)
    assert csd.drafters == ("base", "small", "mag") and csd.lenience == 3.0 and csd.mag_block == 7
    assert (csd.temperature, csd.seed, csd.family) == (0.5, 3, "fake")


def test_plan_round_trips_through_json():
    p = Plan.csd(["base", "small", "mag"], [[4, 5, 9], [0, 1, 9], [0, 0, 9]], 2.0, mag_block=6)
    assert Plan.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    ar = Plan("ar", family="tiny-t5", max_new_tokens=128)
    assert ar.to_dict()["k"] == [] and Plan.from_dict({**ar.to_dict(), "k": None, "extra": 1}) == ar


def test_mag_lenience_is_carried_by_the_plan():
    f = family()
    assert make_plan(f, "csd").mag_lenience is MAG_LENIENCE
    for v in (True, False):
        p = make_plan(f, "csd", mag_lenience=v)
        assert p.mag_lenience is v and Plan.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    assert make_plan(f, "csd", mag_lenience=True) != make_plan(f, "csd", mag_lenience=False)


def test_theory_constructors_without_a_family():
    assert Plan.sd(5).drafters == ("small",) and Plan.mag().mag_block == MAG_BLOCK
    assert Plan.staged(["base", "small"], [1, 4]).k == ((1, 0), (0, 4))
    assert Plan.sd(3).with_k(8).k == ((8,),)


@pytest.mark.parametrize("build, msg", [
    (lambda: Plan("beam"), "unknown method"),
    (lambda: Plan("csd", ("mag", "small"), [[1, 1], [0, 1]], mag_block=10), "only be the last"),
    (lambda: Plan("mag", ("mag",), [[10]], mag_block=0), "mag_block"),
    (lambda: Plan("sd", ("small",), [[-1]]), "negative"),
    (lambda: make_plan(family(), "ar", k=[[3]]), "takes no k"),
    (lambda: make_plan(family(), "sd", k=0), "k >= 1"),
    (lambda: make_plan(family(), "csd", drafter="small"), "takes no drafter"),
    (lambda: make_plan(family(), "sd", drafter="large"), "unknown drafter"),
    (lambda: make_plan(family(), "csd", mag_lenience=1), "mag_lenience must be True"),
    (lambda: make_plan(family(), "staged", mag_lenience=True), "no lenient review"),
    (lambda: Plan.csd(["small", "mag"], [[1, 1], [0, 1]], mag_lenience="no"), "mag_lenience must be True"),
])
def test_bad_plans_are_refused(build, msg):
    with pytest.raises(ValueError, match=msg):
        build()
