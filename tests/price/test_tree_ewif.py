"""Token trees in EWIF: expected accepted length by hand, against Monte Carlo and a token-level simulation,
greedy trees, and tree budgets priced by the nodes a review feeds."""
import itertools

import numpy as np
import pytest

from csd_lib.price.costmodel import CallFit, CostModel
from csd_lib.price.ewif import (best_tree, check_parents, ewif_sd, expected_accepted_tree, expected_tokens_horizontal,
                                expected_tokens_tree, sibling_ranks, simulate_tree, tree_accept_probs, tree_depths,
                                tree_for_widths, tree_widths)
from csd_lib.price.pricing import price_tree, rank_tree_budgets

# a hand-built tree: the root has children 0 and 1; 0 has children 2 and 3; 2 has child 4
#          root
#         /    \
#        0      1
#       / \
#      2   3
#      |
#      4
TREE = [-1, -1, 0, 0, 2]
RATES = [[0.6, 0.5], [0.7, 0.4], [0.9]]


def test_the_hand_built_tree_by_hand():
    assert tree_depths(TREE).tolist() == [1, 1, 2, 2, 3] and tree_widths(TREE) == [2, 2, 1]
    assert sibling_ranks(TREE).tolist() == [0, 1, 0, 1, 0]
    p0 = 0.6
    p1 = 0.4 * 0.5               # 0 rejected, then 1 accepted
    p2 = p0 * 0.7
    p3 = p0 * 0.3 * 0.4          # 2 rejected, then 3 accepted
    p4 = p2 * 0.9
    assert tree_accept_probs(TREE, RATES) == pytest.approx([p0, p1, p2, p3, p4])
    assert expected_accepted_tree(TREE, RATES) == pytest.approx(p0 + p1 + p2 + p3 + p4)
    assert expected_tokens_tree(TREE, RATES) == pytest.approx(1 + p0 + p1 + p2 + p3 + p4)


def test_a_chain_is_the_horizontal_cascade():
    alphas = [0.9, 0.8, 0.75, 0.5]
    chain = [-1, 0, 1, 2]
    assert expected_tokens_tree(chain, [[a] for a in alphas]) == pytest.approx(expected_tokens_horizontal(alphas))
    # the last row repeats: one rate for every depth is SD's acceptance
    assert expected_tokens_tree(chain, [[0.7]]) == pytest.approx(expected_tokens_horizontal([0.7] * 4))


@pytest.mark.parametrize("tree, rates", [
    (TREE, RATES),
    ([-1, -1, -1, 0, 0, 1, 3, 3, 6], [[0.5, 0.3, 0.2], [0.6, 0.25], [0.8, 0.1]]),
    ([-1, 0, 1, 2, 3, 4], [[0.95], [0.9], [0.6]]),
    ([-1, -1, -1, -1], [[0.1, 0.9, 0.0, 1.0]]),
])
def test_the_closed_form_against_monte_carlo(tree, rates):
    mc = simulate_tree(tree, rates, n_sim=200_000, seed=3)
    exact = expected_accepted_tree(tree, rates)
    assert abs(mc["accepted"] - exact) < 4 * mc["accepted_se"] + 1e-12
    assert mc["tokens_per_step"] == pytest.approx(mc["accepted"] + 1)


def test_sibling_rates_are_conditional_on_the_earlier_siblings_rejected():
    """A token-level world: at every depth the target's next token is drawn from p; a node is accepted when
    its token is that one. Branch b's conditional rate is then p(c_b) / (1 - p(c_0) - ... - p(c_{b-1}))."""
    rng = np.random.default_rng(7)
    p = np.array([0.45, 0.25, 0.15, 0.1, 0.05])       # the target's law over 5 tokens, the same at every depth
    cand = [0, 1, 2]                                   # each node's children propose tokens 0, 1, 2 in rank order
    cond = [p[c] / (1 - p[cand[:i]].sum()) for i, c in enumerate(cand)]
    tree = [-1, -1, -1, 0, 0, 1]                       # depth 1: tokens 0, 1, 2; depth 2 under node 0: 0, 1; under 1: 0
    tokens = [0, 1, 2, 0, 1, 0]
    n = 100_000
    truth = rng.choice(p.size, p=p, size=(n, 2))       # (N, depth) the target's tokens
    acc = np.zeros(n)
    for row in range(n):                               # walk the tree along the target's tokens
        at = -1
        for d in range(2):
            nxt = [i for i, q in enumerate(tree) if q == at and tokens[i] == truth[row, d]]
            if not nxt:
                break
            at = nxt[0]
            acc[row] += 1
    exact = expected_accepted_tree(tree, [cond, cond])
    assert abs(acc.mean() - exact) < 4 * acc.std() / np.sqrt(n)
    # treating the siblings' rates as unconditional (p itself) is measurably wrong
    assert abs(acc.mean() - expected_accepted_tree(tree, [list(p[cand])] * 2)) > 10 * acc.std() / np.sqrt(n)


def test_greedy_trees_are_the_best_of_their_size_on_small_cases():
    rates = [[0.5, 0.4, 0.3], [0.6, 0.3], [0.7]]
    for n in range(1, 6):  # every parent list of n nodes (each parent earlier): the greedy tree is the best
        best = max(expected_accepted_tree(list(t), rates)
                   for t in itertools.product(*[range(-1, i) for i in range(n)]))
        assert expected_accepted_tree(best_tree(rates, n), rates) == pytest.approx(best)
    t = tree_for_widths(rates, [2, 3, 1])
    assert tree_widths(t) == [2, 3, 1] and check_parents(t).tolist() == t
    assert expected_accepted_tree(tree_for_widths(rates, [1, 1, 1]), rates) == pytest.approx(
        expected_accepted_tree([-1, 0, 1], rates))


@pytest.mark.parametrize("bad", [[0], [-2], [-1, 1], [-1, 0, 5]])
def test_a_parent_list_that_is_no_tree_is_refused(bad):
    with pytest.raises(ValueError, match="parent list"):
        check_parents(bad)


def test_bad_rates_and_budgets_are_refused():
    for rates in ([], [[]], [[1.5]], [[0.5], [-0.1]]):
        with pytest.raises(ValueError, match="rates"):
            expected_accepted_tree([-1], rates)
    for n in (0, 2.5, True):
        with pytest.raises(ValueError, match="whole number"):
            best_tree([[0.5]], n)


def _flat_target(b_target: float) -> CostModel:
    """A target whose call costs 10 ms + b per token fed; a drafter at 1 ms + 0.1 ms per token; no overhead."""
    return CostModel("test", "cpu", {"target": CallFit([1e-2, b_target, 0, 0, 0]), "small": CallFit([1e-3, 1e-4, 0, 0, 0])})


def test_a_verification_call_is_priced_by_the_nodes_it_feeds():
    cm = _flat_target(1e-3)
    assert cm.verify("target", 5) == pytest.approx(1e-2 + 6e-3)  # five nodes and the last committed token
    pr = price_tree(TREE, RATES, cm, "small")
    assert pr["verify_s"] == pytest.approx(cm.verify("target", 5))
    # as tree-sd feeds them: the last step's tokens, then the last token and the 2, then the 4 nodes so far
    tokens = expected_tokens_tree(TREE, RATES)
    assert pr["draft_s"] == pytest.approx((1e-3 + tokens * 1e-4) + (1e-3 + 3e-4) + (1e-3 + 5e-4))
    assert pr["speedup"] == pytest.approx(cm.ar_step() * expected_tokens_tree(TREE, RATES) / pr["step_s"])


def test_a_chain_priced_with_per_call_constants_is_sd_ewif():
    cm = CostModel.constant({"target": 1.0, "small": 0.05, "mag": 0.0})
    for k in (1, 3, 6):
        pr = price_tree(list(range(-1, k - 1)), [[0.8]], cm, "small")
        assert pr["speedup"] == pytest.approx(ewif_sd(0.8, k, 0.05))


def test_the_ranking_spends_spare_width_only_where_the_target_has_it():
    rates = [[0.6, 0.5, 0.4], [0.6, 0.4], [0.5]]
    budgets = [1, 2, 4, 8, 16, [1, 1, 1, 1], [3, 2, 1]]
    wide = rank_tree_budgets(rates, _flat_target(0.0), budgets, "mag")  # a call costs the same for any width
    assert [r["speedup"] for r in wide] == sorted((r["speedup"] for r in wide), reverse=True)
    assert wide[0]["budget"] == 16  # free width: the largest tree wins
    narrow = rank_tree_budgets(rates, _flat_target(2e-2), budgets, "mag")  # every node costs twice a call's base
    assert narrow[0]["budget"] == 1 and narrow[-1]["budget"] == 16
    chain = next(r for r in wide if r["budget"] == [1, 1, 1, 1])
    assert chain["parents"] == [-1, 0, 1, 2] and chain["widths"] == [1, 1, 1, 1]


def test_rates_by_sibling_count_pick_each_nodes_row():
    by = {1: [[0.9], [0.8]], 2: [[0.5, 0.4], [0.3, 0.2]]}
    # root: two children (0, 1); node 0: one child (2); node 1: two children (3, 4)
    tree = [-1, -1, 0, 1, 1]
    p0, p1 = 0.5, 0.5 * 0.4
    want = [p0, p1, p0 * 0.8, p1 * 0.3, p1 * 0.7 * 0.2]
    assert tree_accept_probs(tree, by) == pytest.approx(want)
    mc = simulate_tree(tree, by, n_sim=200_000, seed=1)
    assert abs(mc["accepted"] - sum(want)) < 4 * mc["accepted_se"]
    # a count not given takes the largest below it, else the smallest
    assert expected_accepted_tree([-1, -1, -1], {2: [[0.5]]}) == pytest.approx(expected_accepted_tree([-1, -1, -1], [[0.5]]))
    assert expected_accepted_tree([-1], {2: [[0.5]], 3: [[0.1]]}) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="rates per depth"):
        best_tree(by, 3)
    with pytest.raises(ValueError, match="sibling count"):
        expected_accepted_tree([-1], {0: [[0.5]]})


@pytest.mark.slow
@pytest.mark.parametrize("method", ["tree-sd", "csd-tree"])
def test_the_tree_ewif_predicts_the_engines_accepted_length(method):
    """tiny-llama, 24 test prompts: the EWIF of each target review's own tree, fed the engine's measured rates per
    node place (depth, siblings, rank), against the engine's meters' accepted tokens per target call."""
    import torch

    from csd_lib import generate
    from csd_lib.engine.stats import branch_rates
    from csd_lib.families.family import load_family
    from csd_lib.families.tasks import load_task

    torch.set_num_threads(1)
    fam = load_family("tiny-llama")
    gens = [generate(fam, ex.prompt, method, max_new_tokens=96) for ex in load_task("synth-gsm8k", "test", 24)]
    rates = branch_rates([g.stats for g in gens], by_siblings=True)
    trees = [e.parents for g in gens for e in g.events if e.depth == 0]
    assert len(trees) == sum(g.stats.calls["target"] for g in gens)
    predicted = np.mean([expected_accepted_tree(t, rates) for t in trees])
    measured = sum(a for g in gens for b in g.stats.branches.values() for _, a in b.places().values()) / len(trees)
    assert measured > 2 and any(len(t) > len(set(t)) for t in trees)  # drafts pass, and the trees branch
    assert predicted == pytest.approx(measured, rel=0.05)


@pytest.mark.parametrize("branch_below", [1.0, 0.6])
def test_tree_sd_is_priced_by_the_tokens_its_drafter_feeds(branch_below):
    """The drafter's meter counts what tree_sd_fed says, round by round: the first call the tokens its cache lacks
    (the prompt, then the last round's output), every later depth the last token and every node so far."""
    from csd_lib import generate, random_family
    from csd_lib.engine.cascade import encode_prompt
    from csd_lib.price.pricing import tree_sd_fed

    fam = random_family("llama", vocab_size=6, n_drafters=1, seed=1, eos=None)
    g = generate(fam, "w3 w4 w5 w3 w4", "tree-sd", tree=[2, 2, 2], branch_below=branch_below, max_new_tokens=30)
    catch_up, fed = len(encode_prompt(fam, "w3 w4 w5 w3 w4")), []
    for e in (e for e in g.events if e.depth == 0):
        fed += tree_sd_fed(tree_widths(e.parents), catch_up)
        catch_up = len(e.path) + 1
    assert sum(fed) == fam.drafters[0].meter.tokens_fed and len(fed) == g.stats.calls["small"]
    assert tree_sd_fed([2, 2, 2], 4) == [4, 3, 5] and tree_sd_fed([], 4) == []


def test_tree_shapes_of_the_engines_methods():
    from csd_lib.price.pricing import csd_tree_parents, tree_sd_parents

    assert tree_sd_parents([2, 2, 2]) == [-1, -1, 0, 1, 2, 3]  # two choices at the root, then first choices only
    assert tree_sd_parents([3, 4]) == [-1, -1, 0, 1, 0, 1]  # two choices a node at most; ranks, then parent order
    assert tree_sd_parents([1, 1]) == [-1, 0]                   # SD's chain
    # a chain of 4 with 2 nodes at depths 1-2 and 3 at depth 3 of a budget [2, 2, 3]: chain token first
    assert csd_tree_parents(4, [2, 2, 3]) == [-1, -1, 0, 0, 2, 2, 2, 4]
    assert csd_tree_parents(1, [2, 2, 3]) == [-1, -1] and tree_widths(csd_tree_parents(5, [2, 2])) == [2, 2, 1, 1, 1]


def test_csd_tree_is_priced_by_its_cascade_leaves_and_review():
    """Per-call constants: the drafting is the cascade's (small reviewing MaG's block until K[0][0] tokens), MaG's
    leaf proposals cost nothing, and the target's review is one call; a budget of ones is csd's chain."""
    from csd_lib.engine.plan import Plan
    from csd_lib.price.ewif import predict_speedup
    from csd_lib.price.pricing import csd_tree_parents, price_csd_tree

    table = {("target", "small"): [0.8], ("small", "mag"): [0.5], ("target", "mag"): [0.3]}
    cm = CostModel.constant({"target": 1.0, "small": 0.1, "mag": 0.0})
    chain = Plan.csd(["small", "mag"], [[4, 0], [0, 10]], 1.0, 10)
    pr = price_csd_tree(Plan.from_dict({**chain.to_dict(), "method": "csd-tree", "tree": [1]}), table, [[0.8]], cm,
                        n_sim=20_000)
    ref = predict_speedup(chain, table, cm, n_sim=20_000)
    assert pr["verify_s"] == pytest.approx(1.0) and pr["speedup"] == pytest.approx(ref["speedup"], rel=0.03)
    assert pr["tokens_per_step"] == pytest.approx(ref["tokens_per_target_call"], rel=0.03)
    assert 4 <= pr["chain"] <= 4 - 1 + 11 and pr["nodes"] == pr["chain"]
    wide = price_csd_tree(Plan.from_dict({**chain.to_dict(), "method": "csd-tree", "tree": [3, 2]}), table,
                          [[0.8, 0.5, 0.5]], cm, n_sim=20_000)
    assert wide["nodes"] == pytest.approx(pr["chain"] + 3) and wide["draft_s"] == pytest.approx(pr["draft_s"])
    assert wide["tokens_per_step"] > pr["tokens_per_step"] and len(csd_tree_parents(4, [3, 2])) == 4 + 3


def test_the_accepted_length_distribution_by_hand():
    from csd_lib.price.ewif import accepted_distribution

    # the path ends at the root (0 and 1 rejected), at node 1 or at 0 with 2, 3 rejected, at 2 (4 rejected) or 3, at 4
    want = [0.4 * 0.5, 0.6 * 0.3 * 0.6 + 0.2, 0.6 * 0.7 * 0.1 + 0.6 * 0.3 * 0.4, 0.6 * 0.7 * 0.9]
    dist = accepted_distribution(TREE, RATES)
    assert dist == pytest.approx(want) and dist.sum() == pytest.approx(1.0)
    assert dist @ np.arange(dist.size) == pytest.approx(expected_accepted_tree(TREE, RATES))
    assert accepted_distribution([], RATES).tolist() == [1.0]


def test_a_tree_plans_generations_end_as_the_engine_caps_them():
    """A chain budget priced over whole 20-token generations (the last steps cut to the room left) is SD's
    Algorithm 1 simulation with the same horizon; an unbounded step would claim more tokens per call."""
    from csd_lib.engine.plan import Plan
    from csd_lib.price.pricing import price_plan, price_tree_plan

    cm = CostModel.constant({"target": 1.0, "small": 0.1, "mag": 0.0})
    sd = Plan.sd(4)
    chain = Plan.from_dict({**sd.to_dict(), "method": "tree-sd", "tree": [1, 1, 1, 1]})
    tree = price_tree_plan(chain, {}, [[0.7]], cm, 20, 1)
    ref = price_plan(sd, {("target", "small"): [0.7]}, cm, 20, 1, n_sim=40_000)
    assert tree["tokens_per_target_call"] == pytest.approx(ref["tokens_per_target_call"], rel=0.02)
    assert tree["speedup"] == pytest.approx(ref["speedup"], rel=0.02)
    assert tree["tokens_per_target_call"] < tree["step"]["tokens_per_step"] == pytest.approx(
        expected_tokens_horizontal([0.7] * 4))
