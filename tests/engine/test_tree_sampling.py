"""Exact under sampling, end to end: tree-sd, csd-tree and medusa sample exactly the target's law.

As tests/engine/test_sampling_exact.py: a tiny random Llama family (V = 6, float64, sharpened
outputs), the exact law of the first two tokens from the target, seeded generations, and a
total variation within the 99.9% quantile of multinomial noise. The trees branch everywhere
(``branch_below=1``), so every review has siblings; the naive sibling rule (``naive=True``) must
leave that noise on tree-sd.
"""
import functools

import numpy as np
import pytest
import torch

from csd_lib import generate, random_family
from csd_lib.measure.lossless import exact_joint, noise_tv, tv
from csd_lib.zoo.medusa import MedusaHeads, standard_tree

V, N_TOK, PROMPT, T = 6, 2, [3, 4, 5, 3, 4, 5, 3, 4], 1.0


@functools.lru_cache(maxsize=None)
def family():
    f = random_family("llama", vocab_size=V, n_drafters=2, seed=5, eos=None, dtype=torch.float64)
    with torch.no_grad():
        for m in {id(lm.model): lm.model for lm in f.models}.values():
            m.get_output_embeddings().weight.mul_(4.0)
    h = MedusaHeads.from_target(f.target.model, 2).double()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for b in h.blocks:
            b.weight.copy_(torch.randn(b.weight.shape, generator=g, dtype=torch.float64))
    h.trees = {4: standard_tree([[0.5, 0.3], [0.5, 0.3]], 4)}
    f.medusa = h
    return f


@functools.lru_cache(maxsize=None)
def law() -> np.ndarray:
    return exact_joint(family(), PROMPT, N_TOK, T)


def empirical(method, n, naive=False, **kw):
    counts = np.zeros(V ** N_TOK)
    for s in range(n):
        ids = generate(family(), PROMPT, method, temperature=T, seed=s, max_new_tokens=N_TOK + 2, naive=naive,
                       **kw).token_ids
        counts[ids[0] * V + ids[1]] += 1
    return counts / n


CASES = {"tree-sd": dict(tree=[3, 2], branch_below=1.0),
         "csd-tree": dict(tree=[2, 2], branch_below=1.0, k=[[2, 1, 3], [0, 1, 2], [0, 0, 3]], lenience=3.0),
         "medusa": dict(tree=[2, 2])}
N = 300


@pytest.mark.parametrize("method", list(CASES))
def test_tree_methods_sample_the_target_law(method):
    p = law()
    assert tv(empirical(method, N, **CASES[method]), p) < noise_tv(p, N, 0.999, 4000)


def test_naive_sibling_rule_is_caught_end_to_end():
    p = law()
    assert tv(empirical("tree-sd", N, naive=True, **CASES["tree-sd"]), p) > noise_tv(p, N, 0.999, 4000)
