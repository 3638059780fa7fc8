"""Greedy lossless for the tree methods: tree-sd, medusa and csd-tree return exactly the target's greedy
tokens, over tree budgets, branching thresholds, K, drafters equal to the target or not, repetitive
prompts and EOS inside a branch; and every case really verifies trees (branches accepted somewhere).

Tiny random Llama families in float64. Each case id names its config; the long grid is ``slow``.
"""
import copy
import functools

import numpy as np
import pytest
import torch

from csd_lib import generate, random_family
from csd_lib.engine.levels import Level
from csd_lib.engine.mag import continuations, longest_suffix_match
from csd_lib.engine.models import LM
from csd_lib.engine.tree_methods import MedusaTop, TreeSD, _cut
from csd_lib.zoo.medusa import MedusaHeads, standard_tree

V = 48
BUDGETS = [(1,), (2, 2, 2), (3, 3, 1, 1), (2,) * 6, (4, 1, 4)]
BRANCH = [0.0, 0.5, 1.0]


@functools.lru_cache(maxsize=None)
def family(nd: int, mode: str, eos: int | None = None, heads: str = "target"):
    """Drafters independent of the target ("indep"), the target itself ("same"), or noisy copies of it
    ("near": they agree often, and their second choice is often the target's first)."""
    f = random_family("llama", vocab_size=V, n_drafters=nd, seed=2, drafter_is_target=mode == "same", eos=eos)
    if mode == "near":
        g = torch.Generator().manual_seed(0)
        for i, d in enumerate(f.drafters):
            m = copy.deepcopy(f.target.model)
            with torch.no_grad():
                for w in m.parameters():
                    w.add_(torch.randn(w.shape, generator=g, dtype=w.dtype) * (0.5 + 0.5 * i) * w.std())
            f.drafters[i] = LM(d.name, m)
    f.medusa = medusa_heads(f, heads)
    return f


def medusa_heads(f, how: str) -> MedusaHeads:
    """Heads on the family's target: copies of its LM head ("target"), or those with random blocks ("random")."""
    h = MedusaHeads.from_target(f.target.model, 3).double()
    if how == "random":
        g = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for b in h.blocks:
                b.weight.copy_(torch.randn(b.weight.shape, generator=g, dtype=torch.float64) * 0.3)
    acc = [[0.6, 0.2, 0.1], [0.5, 0.2, 0.1], [0.4, 0.2, 0.1]]
    h.trees = {8: standard_tree(acc, 8), 14: standard_tree(acc, 14)}
    return h


def prompts(seed):
    rng = np.random.default_rng(seed)
    rand = rng.integers(3, V, size=10).tolist()
    motif = rng.integers(3, V, size=4).tolist()
    return [rand, motif * 4, rand[:3] + motif * 2 + rand[3:6]]


def cases(full: bool):
    out = []
    rng = np.random.default_rng(7)
    for nd, same in ((1, "indep"), (1, "same"), (1, "near"), (2, "indep"), (2, "near")) if full \
            else ((1, "near"), (2, "near")):
        for pi in range(3 if full else 2):
            for bi, budget in enumerate(BUDGETS if full else BUDGETS[1:3]):
                bb = BRANCH[(pi + bi) % 3] if full else 1.0
                if nd == 1:
                    out.append(("tree-sd", nd, same, pi, budget, bb, None))
                k = rng.integers(0, 5, size=(nd + 1, nd + 1))
                k[:, -1] = rng.integers(1, 9, size=nd + 1)
                out.append(("csd-tree", nd, same, pi, budget, bb, k.tolist()))
                if bi < 3 and same != "same":
                    out.append(("medusa", nd, same, pi, budget[:3], None, "random" if bi == 2 else "target"))
    return out


def case_id(method, nd, same, pi, budget, bb, extra):
    e = "" if extra is None else ("-k" + "/".join(".".join(map(str, r)) for r in extra) if isinstance(extra, list)
                                  else f"-heads-{extra}")
    b = "" if bb is None else f"-below{bb:g}"
    return f"{method}-nd{nd}-{same}-p{pi}-tree{'.'.join(map(str, budget))}{b}{e}"


def run_case(method, nd, same, pi, budget, bb, extra, eos=None, n=40):
    f = family(nd, same, eos, extra if method == "medusa" else "target")
    prompt = prompts(2)[pi]
    ar = generate(f, prompt, "ar", max_new_tokens=n).token_ids
    kw = dict(tree=list(budget), max_new_tokens=n)
    if method != "medusa":
        kw["branch_below"] = bb
    if method == "csd-tree":
        kw["k"] = extra
    g = generate(f, prompt, method, **kw)
    assert g.token_ids == ar, case_id(method, nd, same, pi, budget, bb, extra)
    assert g.stats.calls["target"] <= len(ar)
    return g


FAST, FULL = cases(False), cases(True)


@pytest.mark.parametrize("case", FAST, ids=[case_id(*c) for c in FAST])
def test_tree_methods_equal_ar(case):
    run_case(*case)


@pytest.mark.slow
@pytest.mark.parametrize("case", FULL, ids=[case_id(*c) for c in FULL])
def test_tree_methods_equal_ar_full_grid(case):
    run_case(*case)


def test_branches_and_medusa_nodes_are_accepted():
    """The identity above is not vacuous: second choices and Medusa's nodes end up on accepted paths."""
    seen = {}
    for pi in range(3):
        for method, k in (("tree-sd", None), ("csd-tree", [[3, 1, 4], [0, 2, 4], [0, 0, 4]])):
            g = run_case(method, 1 if k is None else 2, "near", pi, (3, 3, 3), 1.0, k, n=60)
            seen[method] = seen.get(method, 0) + sum(b > 0 for b in g.branch)
            if method == "csd-tree":
                seen["mag"] = seen.get("mag", 0) + sum(b > 0 and p == "mag-match" for b, p in zip(g.branch,
                                                                                                 g.provenance))
    assert seen["tree-sd"] > 0 and seen["csd-tree"] > 0 and seen["mag"] > 0, seen
    g = run_case("medusa", 1, "indep", 1, (3, 4, 1), None, "target", n=60)
    assert g.provenance_counts().get("medusa", 0) > 0
    assert g.stats.calls["target"] < 60


@pytest.mark.parametrize("method", ["tree-sd", "csd-tree", "medusa"])
def test_eos_inside_a_branch(method):
    """EOS = a token the target first says after a few: it is drafted inside branching trees, the output
    stops at it and equals AR."""
    base = family(1, "near")
    seen_eos_node = False
    for prompt in prompts(2):
        ar = generate(base, prompt, "ar", max_new_tokens=40).token_ids
        eos = next(t for i, t in enumerate(ar) if i >= 6 and t not in ar[:6])  # first said after 6 tokens
        f = family(1, "near", eos)
        kw = {} if method == "medusa" else {"branch_below": 1.0}
        g = generate(f, prompt, method, tree=[3, 3, 2], max_new_tokens=40, **kw)
        ref = generate(f, prompt, "ar", max_new_tokens=40).token_ids
        assert g.token_ids == ref and ref[-1] == eos
        # an EOS node in a tree that branches (some node has two children)
        seen_eos_node |= any(eos in e.tokens and len(set(e.parents)) < len(e.parents) for e in g.events)
    assert seen_eos_node


def test_tree_budget_is_part_of_the_plan_and_validated():
    f = family(1, "near")
    g = generate(f, [5, 6, 7], "tree-sd", tree=[2, 1], max_new_tokens=4)
    assert g.plan.tree == (2, 1) and g.plan.k == ((2,),) and g.plan.to_dict()["tree"] == [2, 1]
    assert type(g.plan).from_dict(g.plan.to_dict()) == g.plan
    assert generate(f, [5, 6, 7], "tree-sd", max_new_tokens=4).plan.tree == (2,) * f.sd_k
    assert generate(f, [5, 6, 7], "medusa", max_new_tokens=4).plan.tree == (3, 4, 1)  # the 8-node tree per depth
    for bad in ([], [0, 2], [2.5], "x", [True]):
        with pytest.raises(ValueError, match="tree budget"):
            generate(f, [5, 6, 7], "tree-sd", tree=bad, max_new_tokens=4)
    with pytest.raises(ValueError, match="tree methods"):
        generate(f, [5, 6, 7], "sd", tree=[2, 2], max_new_tokens=4)
    with pytest.raises(ValueError, match="branch_below"):
        generate(f, [5, 6, 7], "tree-sd", branch_below=1.5, max_new_tokens=4)
    with pytest.raises(ValueError, match="branch_below"):
        generate(f, [5, 6, 7], "medusa", branch_below=0.5, max_new_tokens=4)
    with pytest.raises(ValueError, match="3 tokens ahead"):
        generate(f, [5, 6, 7], "medusa", tree=[1, 1, 1, 1], max_new_tokens=4)


def test_tree_methods_refuse_t5_and_a_family_without_heads():
    t5 = random_family("t5", vocab_size=V, n_drafters=1, seed=0)
    for method in ("tree-sd", "csd-tree", "medusa"):
        with pytest.raises(ValueError, match="encoder-decoder"):
            generate(t5, [5, 6, 7], method, max_new_tokens=4)
    bare = random_family("llama", vocab_size=V, n_drafters=1, seed=0)
    with pytest.raises(ValueError, match="no Medusa heads"):
        generate(bare, [5, 6, 7], "medusa", max_new_tokens=4)


def test_nodes_verified_per_target_call():
    """Stats count what the target verified: a chain's drafted tokens, a tree's nodes (every call)."""
    f = family(1, "near")
    prompt = prompts(2)[0]
    g = generate(f, prompt, "tree-sd", tree=[2, 2, 2], branch_below=1.0, max_new_tokens=30)
    trees = [e for e in g.events if e.depth == 0]
    assert g.stats.nodes["target"] == sum(len(e.tokens) for e in trees)
    assert g.stats.nodes_per_target_call == g.stats.nodes["target"] / g.stats.calls["target"]
    assert g.stats.to_dict()["nodes_per_target_call"] > 2   # two nodes per depth where the drafter is unsure
    st = g.stats.acceptance["target<-small"]           # per depth: the accepted path, then the rejected depth
    assert sum(st.accepted) == sum(p == "small" for p in g.provenance)
    assert st.reached[0] == sum(1 for e in trees if e.tokens) and all(a <= r for a, r in zip(st.accepted, st.reached))
    s = generate(f, prompt, "sd", k=3, max_new_tokens=30).stats
    assert s.nodes["target"] == sum(len(e.tokens) for e in generate(f, prompt, "sd", k=3, max_new_tokens=30).events)
    assert generate(f, prompt, "ar", max_new_tokens=30).stats.nodes_per_target_call == 0


def test_mag_continuations_rank_other_matches():
    hay = np.array([5, 1, 7, 9, 1, 7, 8, 3, 7, 4, 1, 7])   # suffix "1 7": matched twice, "7" once more
    assert continuations(hay) == [8, 9, 4]                  # longest match first, then the most recent
    end, length = longest_suffix_match(hay)
    assert continuations(hay)[0] == hay[end] and length == 2
    assert continuations(np.array([3, 4])) == [] and continuations(np.array([3])) == []


def test_a_rank_tree_cut_to_a_budget_keeps_parents_first():
    paths = [(0,), (0, 0), (1,), (0, 1), (0, 0, 0), (1, 0), (2,), (0, 0, 1)]
    assert _cut(paths, (2, 1, 2)) == [(0,), (0, 0), (1,), (0, 0, 0), (0, 0, 1)]
    assert _cut(paths, (1,)) == [(0,)]
    f = family(1, "near")
    top = MedusaTop(f.target, f.medusa, (2, 2))
    assert top.paths == _cut(f.medusa.trees[14], (2, 2)) and all(len(p) <= 2 for p in top.paths)
    sd = TreeSD(f.target, [Level(f.drafters[0], [], [])], (2, 2), 0.5)
    assert sd.top and sd.lenience == 1.0 and sd.budget == (2, 2)
