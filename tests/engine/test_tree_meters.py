"""The target's per-branch meters at a tree review: counted per node place (depth, siblings, rank), kept apart from
the per-depth pair meters, and read back as the tree EWIF's rates."""
import pytest

from csd_lib import generate, random_family
from csd_lib.engine.stats import BranchStats, PairStats, Stats, branch_rates
from csd_lib.engine.tree import children

PROMPT = "w3 w4 w5 w3 w4"


@pytest.fixture(scope="module")
def fam():
    return random_family("llama", vocab_size=6, n_drafters=1, seed=1, eos=None)  # a small vocabulary: some drafts pass


def _from_events(g) -> dict:
    """{(depth, siblings, rank): [reached, accepted]} recounted from the event log's target reviews."""
    out = {}
    for e in g.events:
        if e.depth != 0:
            continue
        kids = children(e.parents)
        for d, u in enumerate([-1, *e.path]):
            for b, j in enumerate(kids[u]):
                c = out.setdefault((d, len(kids[u]), b), [0, 0])
                c[0] += 1
                c[1] += int(d < len(e.path) and j == e.path[d])
                if d < len(e.path) and j == e.path[d]:
                    break
    return out


@pytest.mark.parametrize("method, kw", [("tree-sd", {"k": 4}), ("csd-tree", {}), ("tree-sd", {"temperature": 1.0,
                                                                                                "seed": 5, "k": 3})])
def test_branch_meters_count_every_tried_node_once(fam, method, kw):
    g = generate(fam, PROMPT, method, max_new_tokens=24, branch_below=0.9, **kw)
    pooled = BranchStats()
    for b in g.stats.branches.values():
        pooled.merge(b)
    assert {k: list(v) for k, v in pooled.places().items()} == _from_events(g)
    accepted = sum(a for _, a in pooled.places().values())
    assert accepted == sum(len(e.path) for e in g.events if e.depth == 0) > 0
    assert any(s > 1 for _, s, _ in pooled.places())  # the trees branched
    # the per-depth pair meters are as before: one count per accepted depth and the first rejected one
    depth = g.stats.acceptance[f"target<-{g.plan.drafters[0]}"]
    assert sum(depth.accepted) <= accepted and all(isinstance(v, PairStats) and v.reached
                                                   for v in g.stats.acceptance.values())
    d = g.stats.to_dict()
    assert set(d["acceptance"][f"target<-{g.plan.drafters[0]}"]) == {"reached", "accepted"}
    assert branch_rates([d]) == branch_rates([g.stats])


def test_chain_methods_count_no_branches(fam):
    g = generate(fam, PROMPT, "sd", k=3, max_new_tokens=12)
    assert g.stats.branches == {} and g.stats.to_dict()["branches"] == {} and branch_rates([g.stats]) == []


def test_branch_rates_by_hand():
    st = BranchStats()
    for place, ok in [((0, 2, 0), True), ((0, 2, 0), False), ((0, 2, 1), True), ((0, 1, 0), False),
                      ((1, 1, 0), True), ((1, 1, 0), True), ((1, 1, 0), False), ((2, 2, 0), False)]:
        st.add(*place, ok)
    one = PairStats([1], [1], branches=st)
    other = PairStats(branches=BranchStats({"0/1/0": [1, 1]}))  # a pair with tree counts only
    s = Stats(1, 1.0, {"target": 1}, {}, {}, {"target<-small": one, "target<-mag": other, "small<-mag": PairStats()})
    assert set(s.acceptance) == {"target<-small"}  # pairs without per-depth counts leave acceptance
    assert set(s.branches) == {"target<-small", "target<-mag"} and s.acceptance["target<-small"].branches is None
    # depth 0: rank 0 reached 4 times (2 with a sibling, 2 alone), accepted twice; rank 1 once, accepted
    assert branch_rates([s]) == [[2 / 4, 1.0], [2 / 3], [0.0]]
    by = branch_rates([s.to_dict()], by_siblings=True)
    assert by == {1: [[1 / 2], [2 / 3], [0.0]], 2: [[1 / 2, 1.0], [2 / 3], [0.0]]}  # unseen places: the pooled rate
    assert branch_rates([s], reviewer="small") == []
