"""csd_lib.measure.sweep: every configuration of a grid on the same prompts, identical to AR under greedy."""
import pytest

from csd_lib import generate, load_family
from csd_lib.engine.stats import swi
from csd_lib.measure.sweep import grid_sweep, run_config


@pytest.fixture(scope="module")
def fam():
    return load_family("tiny-llama")


def test_grid_sweep_covers_the_grid_and_reproduces_ar(fam):
    prompts = ["Tom has 3 apples and buys 4 more. How many apples does he have?", "What is 12 plus 30?"]
    ar = [generate(fam, p, "ar", max_new_tokens=12) for p in prompts]
    pts = grid_sweep(fam, prompts, dict(k11=[2, 5], k12=[0, 3], lenience=[1.0]), 12, reference=ar)
    assert list(pts) == [(2, 0, 1.0), (2, 3, 1.0), (5, 0, 1.0), (5, 3, 1.0)]
    p = pts[5, 3, 1.0]
    assert p.k[0][:2] == [5, 3] and p.k[1:] == [list(r) for r in fam.default_k[1:]]
    assert all(q.same_as_ar for q in pts.values())
    calls = {}
    for g in p.gens:
        for m, n in g.stats.calls.items():
            calls[m] = calls.get(m, 0) + n
    assert p.swi_ms == pytest.approx(swi(p.tokens, calls, p.gens[0].stats.model_size_costs()))
    row = p.row(ar_wall=1.0, k11=5)
    assert row["k11"] == 5 and row["same_as_ar"] and row["tokens_per_target_call"] >= 1


def test_sweep_arguments_are_checked_before_generating(fam):
    with pytest.raises(ValueError, match="missing"):
        grid_sweep(fam, ["x"], dict(k11=[1]), 4)
    with pytest.raises(ValueError, match="one AR generation per prompt"):
        run_config(fam, ["a", "b"], fam.default_k, 1.0, 4, reference=[None])
