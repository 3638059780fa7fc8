"""csd_lib.engine.tree: the tree mask and positions, one-call tree scoring with the accepted path kept,
and the tree review (greedy path; exact recursive rejection sampling over siblings, the naive rule caught)."""
import numpy as np
import pytest
import torch

from csd_lib import random_family
from csd_lib.engine.models import LM
from csd_lib.engine.tree import check_parents, children, review_tree, review_tree_greedy, tree_mask
from csd_lib.measure.lossless import noise_tv, tv

# A hand-built 5-node tree under the root r:   r -> a(0) -> c(2)
#                                                   -> b(1)
#                                              r -> d(3) -> e(4)
TOKENS, PARENTS = [10, 11, 12, 13, 14], [-1, 0, 0, -1, 3]


def test_hand_built_mask_and_positions():
    mask, pos = tree_mask(PARENTS, 2, 3, torch.float32, "cpu")   # 3 cached, 2 fed sequence tokens, 5 nodes
    assert mask.shape == (1, 1, 7, 10) and pos.shape == (1, 7)
    allowed = (mask[0, 0] == 0).int().tolist()
    #            cache  seq  a  b  c  d  e
    assert allowed == [[1, 1, 1, 1, 0, 0, 0, 0, 0, 0],   # seq 0
                       [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],   # seq 1
                       [1, 1, 1, 1, 1, 1, 0, 0, 0, 0],   # a sees itself
                       [1, 1, 1, 1, 1, 1, 1, 0, 0, 0],   # b sees a
                       [1, 1, 1, 1, 1, 1, 0, 1, 0, 0],   # c sees a, not b
                       [1, 1, 1, 1, 1, 0, 0, 0, 1, 0],   # d under the root
                       [1, 1, 1, 1, 1, 0, 0, 0, 1, 1]]   # e sees d
    assert mask[0, 0].min() == torch.finfo(torch.float32).min
    assert pos[0].tolist() == [3, 4, 5, 6, 6, 5, 6]        # root at 4: depth 1 at 5, depth 2 at 6
    assert check_parents(PARENTS) == [1, 2, 2, 1, 2]
    assert children(PARENTS) == {-1: [0, 3], 0: [1, 2], 1: [], 2: [], 3: [4], 4: []}


def test_hand_built_greedy_path():
    """Rows: 0 after the root, i + 1 after node i. The argmax walks r -> d -> e -> 7 (a bonus after a leaf)."""
    best = [13, 0, 0, 0, 14, 7]          # argmax per row: root picks d (13), d picks e (14), e gives 7
    logits = torch.full((6, 20), -5.0)
    logits[torch.arange(6), torch.tensor(best)] = 5.0
    r = review_tree_greedy(logits, TOKENS, PARENTS)
    assert (r.path, r.next_token, r.bonus) == ([3, 4], 7, True)
    assert [r.accept_prob[i] for i in (0, 3, 4)] == [0.0, 1.0, 1.0] and np.isnan(r.accept_prob[1:3]).all()
    best[0], best[1] = 10, 12            # root picks a, a picks c (its second child), c gives 9
    best[3] = 9
    logits = torch.full((6, 20), -5.0)
    logits[torch.arange(6), torch.tensor(best)] = 5.0
    r = review_tree_greedy(logits, TOKENS, PARENTS)
    assert (r.path, r.next_token, r.bonus) == ([0, 2], 9, True)
    best[1] = 5                          # a picks a token no child holds: a correction after a
    logits = torch.full((6, 20), -5.0)
    logits[torch.arange(6), torch.tensor(best)] = 5.0
    r = review_tree_greedy(logits, TOKENS, PARENTS)
    assert (r.path, r.next_token, r.bonus) == ([0], 5, False)


def test_bad_parents_are_refused():
    with pytest.raises(ValueError, match="parent"):
        check_parents([-1, 1])
    with pytest.raises(ValueError, match="parent"):
        check_parents([-2])


def _path(i):
    out = []
    while i >= 0:
        out.append(TOKENS[i])
        i = PARENTS[i]
    return out[::-1]


def test_one_call_scores_every_node_and_keeps_the_accepted_path():
    f = random_family("llama", vocab_size=24, n_drafters=1, seed=3, eos=None)
    prompt = [5, 6, 7, 8, 9]
    lm = LM("t", f.target.model)
    base = lm.start(prompt)
    rows = lm.tree_logits(base, TOKENS, PARENTS)                      # (6, V), one call
    assert lm.meter.calls == 1 and lm.meter.nodes == 5 and rows.shape == (6, 24)
    for i in range(-1, 5):
        ref = LM("r", f.target.model)
        ref.start(prompt)
        want = ref.logits(base + (_path(i) if i >= 0 else []), 0)[0]
        assert torch.allclose(rows[i + 1], want, atol=1e-10), i
    lm.keep_path([3, 4])                                             # d, e accepted
    assert lm._cache.get_seq_length() == len(base) + 2
    nxt = base + [13, 14, 7, 8]
    got = lm.logits(nxt, 1)
    ref = LM("r", f.target.model)
    ref.start(prompt)
    assert torch.allclose(got, ref.logits(nxt, 1), atol=1e-10)
    assert lm.meter.tokens_fed == len(base) + 5 + 2                   # only 7 and 8 were fed after the tree


def test_a_tree_without_keep_path_is_cropped_by_the_next_call():
    f = random_family("llama", vocab_size=24, n_drafters=1, seed=3, eos=None)
    lm = LM("t", f.target.model)
    base = lm.start([5, 6, 7])
    lm.tree_logits(base, TOKENS, PARENTS)
    got = lm.logits(base + [10, 12], 2)
    ref = LM("r", f.target.model)
    ref.start([5, 6, 7])
    assert torch.allclose(got, ref.logits(base + [10, 12], 2), atol=1e-10)


def test_t5_cannot_score_a_tree():
    f = random_family("t5", vocab_size=24, n_drafters=1, seed=0)
    base = f.target.start([5, 6])
    with pytest.raises(ValueError, match="encoder-decoder"):
        f.target.tree_logits(base, [3], [-1])


# -- exact sampling: a bigram reviewer and drafter, many rounds, the law of the first two tokens --------

V, N_TOK, N_SAMPLES = 4, 2, 10000  # thresholds near TV 0.02; the naive rule measured 0.034 to 0.18


def _bigram(seed, sharp):
    rng = np.random.default_rng(seed)
    t = rng.dirichlet(np.full(V, sharp), size=V)
    return torch.tensor(t, dtype=torch.float64)                      # (V, V): row = previous token


P, Q = _bigram(1, 0.7), _bigram(2, 0.7)  # the reviewer's and the drafter's next-token laws


def _draw_children(last: int, width: int, how: str, gen):
    """``width`` children under a node whose token is ``last``, and the law each was drawn from."""
    q = Q[last]
    if how == "top":                       # deterministic choices (Medusa, second choices): one-hot
        return [(int(x), None) for x in torch.topk(q, width).indices]
    out, rest = [], q.clone()
    for _ in range(width):
        x = int(torch.multinomial(rest, 1, generator=gen))
        out.append((x, rest.clone()))
        if how == "without":               # without replacement (tree-sd's second draw)
            rest[x] = 0
            rest = rest / rest.sum()
    return out


def _round(last: int, widths, how: str, gen, naive: bool):
    tokens, parents, qs = [], [], []
    frontier = [(-1, last)]
    for w in widths:
        nxt = []
        for u, tok in frontier:
            for x, q in _draw_children(tok, w, how, gen):
                nxt.append((len(tokens), x))
                tokens.append(x)
                parents.append(u)
                qs.append(q)
        frontier = nxt
    rows = torch.stack([P[last]] + [P[t] for t in tokens])            # (N + 1, V)
    q = None if how == "top" else torch.stack(qs)
    r = review_tree(rows, tokens, parents, q, gen, naive=naive)
    return [tokens[i] for i in r.path] + [r.next_token]


def _empirical(widths, how, n, naive=False):
    gen = torch.Generator().manual_seed(0)
    counts = np.zeros(V ** N_TOK)
    for _ in range(n):
        out = []
        while len(out) < N_TOK:
            out += _round(out[-1] if out else 0, widths, how, gen, naive)
        counts[out[0] * V + out[1]] += 1
    return counts / n


EXACT = (P[0][:, None] * P).reshape(-1).numpy()                      # P(a | 0) P(b | a)
TREES = [((2, 1), "with"), ((3,), "without"), ((2, 2), "without"), ((3, 1), "top")]


@pytest.mark.parametrize("widths,how", TREES, ids=[f"w{'x'.join(map(str, w))}-{h}" for w, h in TREES])
def test_tree_review_samples_the_reviewer_law(widths, how):
    n = N_SAMPLES
    thr = noise_tv(EXACT, n, 0.999, 4000)
    assert tv(_empirical(widths, how, n), EXACT) < thr


@pytest.mark.parametrize("widths,how", TREES, ids=[f"w{'x'.join(map(str, w))}-{h}" for w, h in TREES])
def test_naive_sibling_rule_is_caught(widths, how):
    """Judging every sibling against the unchanged p (no residual update) emits too many drafted tokens."""
    n = N_SAMPLES
    thr = noise_tv(EXACT, n, 0.999, 4000)
    assert tv(_empirical(widths, how, n, naive=True), EXACT) > thr


def test_naive_equals_exact_on_a_chain():
    """With one child per node the two rules are the same rule, draw for draw."""
    a, b = (_empirical((1, 1), "with", 200, naive=nv) for nv in (False, True))
    assert np.array_equal(a, b)
