"""The tree figure says which reviews are lenient from the plan, as the run did and as round_figure says."""
import pytest

from csd_lib import generate, random_family
from csd_lib.engine.plan import Plan
from csd_lib.viz.cascade import cascade_tree, cascade_tree_figure
from csd_lib.viz.rounds import applied_lenience

LLAMA_K = [[8, 0], [0, 10]]  # tiny-llama's default: small drafts for the target, MaG only for small


def texts(fig) -> str:
    return " ".join(a.text for a in fig.layout.annotations) + " ".join(t.name or "" for t in fig.data)


def test_a_family_without_lenient_review_shows_none():
    fig = cascade_tree_figure(LLAMA_K, ["small", "mag"], 5.0, "target")  # the positional call of the live panel
    assert "l = 5" not in texts(fig) and "lenient" not in texts(fig)
    assert not [t for t in fig.data if t.mode == "lines" and t.line.dash == "dash"]
    lenient = cascade_tree_figure(plan=Plan.csd(("small", "mag"), LLAMA_K, 5.0, mag_lenience=True))
    assert [t.name for t in lenient.data if t.mode == "lines" and t.line.dash == "dash"] == ["lenient review (l = 5)"]
    assert "small</b> reviews with K[1] = [10] (l = 5)" in texts(lenient)


def test_plan_gives_k_drafters_lenience_and_the_mag_rule():
    plan = Plan.csd(("base", "small", "mag"), [[2, 3, 4], [0, 1, 3], [0, 0, 4]], 3.0)
    tree = cascade_tree(plan=plan, target="big")
    assert tree == cascade_tree(plan.k, list(plan.drafters), 3.0, "big", mag_lenience=False)
    assert tree["nodes"][0]["name"] == "big" and tree["mag_lenience"] is False
    with pytest.raises(ValueError, match="either plan="):
        cascade_tree(plan.k, plan=plan)
    with pytest.raises(ValueError, match="either plan="):
        cascade_tree_figure(plan=plan, mag_lenience=True)
    with pytest.raises(ValueError, match="mag_lenience must be True"):
        cascade_tree(plan.k, list(plan.drafters), mag_lenience="yes")


@pytest.mark.parametrize("mag_lenience", [False, True])
def test_tree_and_round_figure_agree_with_the_run(mag_lenience):
    fam = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    g = generate(fam, [5, 6, 7, 5, 6], "csd", k=[[2, 3, 4], [0, 1, 3], [0, 0, 4]], lenience=3.0,
                 mag_lenience=mag_lenience, max_new_tokens=24)
    nodes = cascade_tree(plan=g.plan)["nodes"]
    tree = {(nodes[n["parent"]]["name"], n["name"]): n["lenience"] for n in nodes[1:] if not n["skipped"]}
    seen = {}
    for e in g.events:
        reviewer = "target" if e.depth == 0 else e.reviewer
        for who, lam in zip(e.proposers, applied_lenience(g, e)):
            seen[(reviewer, who)] = lam
    assert seen and all(tree[pair] == lam for pair, lam in seen.items())
    assert seen[("base", "mag")] == (3.0 if mag_lenience else 1.0)
