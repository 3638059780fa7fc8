"""The tree budget widget without a browser: set the budget in code, read the readouts and figures."""
import pytest

from csd_lib import generate, random_family
from csd_lib.engine.tree import ancestors
from csd_lib.teach.tree_budget import parse_budget

ipywidgets = pytest.importorskip("ipywidgets")
from csd_lib.teach.tree_budget import tree_budget  # noqa: E402

PROMPT = "w5 w6 w7 w5 w6"


@pytest.fixture(scope="module")
def fam():
    return random_family("llama", vocab_size=32, n_drafters=1, seed=2)


def test_parse_budget_takes_lists_and_refuses_words():
    assert parse_budget("2, 2, 2") == parse_budget("[2,2,2]") == [2, 2, 2]
    with pytest.raises(ValueError, match="integers"):
        parse_budget("two")


def test_a_new_budget_reruns_and_redraws(fam):
    wd = tree_budget(fam, PROMPT, max_new_tokens=16)
    assert wd.runs == 1 and wd.error.value == "" and "identical to AR: <b>yes</b>" in wd.stats.value
    first = wd.tree_figure
    assert wd.tree.outputs and wd.mask.outputs                      # both Output widgets hold a figure
    wd.budget.value = "1"                                           # one node per depth: a plain chain
    assert wd.runs == 2 and wd.last.plan.tree == (1,) and wd.tree_figure is not first
    assert all(b == 0 for b in wd.round.event.branch) and "no tree branched" in wd.round.why
    assert [list(r) for r in wd.mask_figure.data[0].z] == [[float(v) for v in r] for r in ancestors(wd.round.parents)]
    assert wd.last.token_ids == generate(fam, PROMPT, "ar", max_new_tokens=16).token_ids


def test_a_bad_budget_is_reported_and_nothing_reruns(fam):
    wd = tree_budget(fam, PROMPT, max_new_tokens=8)
    for bad in ("0, 2", "x"):
        wd.budget.value = bad
        assert "ValueError" in wd.error.value
    assert wd.runs == 1
