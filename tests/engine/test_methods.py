"""The method registry: every method is one object; a new method is one object plus its tests."""
import pytest

from csd_lib.engine import methods
from csd_lib.engine.cascade import generate
from csd_lib.engine.methods import Method, register, unregister
from csd_lib.engine.plan import ENGINE_METHODS, METHODS, TREE_METHODS, make_plan
from csd_lib.families.toy import random_family


def test_the_registry_holds_every_method_in_table_order():
    assert methods.names() == ("ar", "sd", "mag", "staged", "csd", "tree-sd", "medusa", "csd-tree",
                               "hf-assisted", "hf-pld")
    assert METHODS == ("ar", "sd", "mag", "staged", "csd") == methods.names(engine=True, default=True, tree=False)
    assert TREE_METHODS == ("tree-sd", "medusa", "csd-tree") and ENGINE_METHODS == METHODS + TREE_METHODS
    assert methods.names(engine=False) == ("hf-assisted", "hf-pld")
    assert methods.label("csd") == "csd" and methods.label("sd@8") == "sd@8"


def test_traits_say_what_each_method_takes():
    get = methods.get
    assert [m for m in methods.names() if get(m).lenient] == ["csd", "csd-tree"]
    assert [m for m in methods.names() if get(m).takes_drafter] == ["sd", "tree-sd"]
    assert [m for m in methods.names() if get(m).ar_like] == ["ar"]
    assert [m for m in methods.names() if get(m).mag_only] == ["mag"]
    assert [m for m in methods.names() if get(m).branches] == ["tree-sd", "csd-tree"]
    assert [m for m in methods.names() if not get(m).takes_k] == ["ar", "medusa", "hf-assisted", "hf-pld"]
    assert (get("tree-sd").tree, get("medusa").tree, get("csd-tree").tree) == (methods.DRAFTER, methods.HEADS,
                                                                               methods.CASCADE)
    assert get("hf-assisted").assistant and get("hf-pld").prompt_lookup == 10


def test_unknown_names_and_baselines_are_refused_where_the_engine_runs():
    with pytest.raises(ValueError, match="unknown method 'beam'; use one of ar, sd"):
        methods.get("beam")
    assert methods.find("beam") is None and methods.get("hf-pld").baseline
    with pytest.raises(ValueError, match="unknown method 'hf-pld'; use one of ar, .*csd-tree$"):
        methods.get("hf-pld", engine=True)
    with pytest.raises(ValueError, match="already registered"):
        register(Method("sd"))
    with pytest.raises(ValueError, match="may not hold '@'"):
        register(Method("sd@3"))


# -- a contributor's new method: one object, registered here, planned and run by the engine as is ------------

MAG_ONLY_3 = Method("mag-only-3", mag=True, default_k=lambda family, task: 3)      # MaG alone, 3 tokens a review
SD_FIRST_2 = Method("sd-2", neural=1, default_k=lambda family, task: 2, min_k=1)   # SD at k=2


@pytest.fixture
def toys():
    for m in (MAG_ONLY_3, SD_FIRST_2):
        register(m)
    yield
    for m in (MAG_ONLY_3, SD_FIRST_2):
        unregister(m.name)
    assert methods.find("mag-only-3") is None


def test_a_new_method_is_one_object(toys):
    fam = random_family("t5", vocab_size=32, n_drafters=2, seed=7, eos=None)
    plan = make_plan(fam, "mag-only-3")
    assert (plan.drafters, plan.k, plan.mag_block) == (("mag",), ((3,),), fam.mag.n)
    assert make_plan(fam, "sd-2", drafter="small").drafters == ("small",)
    ar = generate(fam, [5, 6, 7], "ar", max_new_tokens=12)
    for name in ("mag-only-3", "sd-2"):
        g = generate(fam, [5, 6, 7], name, max_new_tokens=12)
        assert g.token_ids == ar.token_ids and g.plan.method == name   # lossless, as every method
    assert generate(fam, [5, 6, 7], "mag-only-3", max_new_tokens=12).stats.calls["mag"] >= 1
    with pytest.raises(ValueError, match="reviews without lenience"):
        make_plan(fam, "mag-only-3", lenience=2)


def test_plan_errors_name_the_method_and_quote_the_input():
    fam = random_family("llama", vocab_size=32, n_drafters=1, seed=8, eos=None)
    with pytest.raises(ValueError, match="method 'medusa' takes no k"):
        make_plan(fam, "medusa", k="[[3]]")
    with pytest.raises(ValueError, match="bad tree budget 'wide'"):
        make_plan(fam, "csd-tree", tree="wide")
    with pytest.raises(ValueError, match="naive must be True .* or False .*, got 'yes'"):
        make_plan(fam, "csd", naive="yes")
    assert make_plan(fam, "csd", naive=True).naive is True
