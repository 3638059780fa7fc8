"""Exact under sampling: CSD with lenience > 1 samples exactly the target's distribution.

A tiny-vocabulary Llama family (V = 6): the joint law of the first 3 generated tokens is
computed exactly from the target and compared with CSD samples. The acceptance threshold
is the 99.5th percentile of the total variation (TV) that pure sampling noise gives at
the same sample size (simulated from the exact law), and the test checks its own power:
a sampler that is wrong by TV = 0.03 would exceed that threshold in most runs.
"""
import functools

import numpy as np
import pytest
import torch

from csd_lib import generate, random_family

V, PROMPT, T, N_TOK = 6, [3, 4, 5, 3, 4, 5, 3, 4], 1.0, 3


@functools.lru_cache(maxsize=None)
def fam():
    # two neural drafters + MaG: lenient reviews at two levels
    f = random_family("llama", vocab_size=V, n_drafters=2, seed=5, eos=None, dtype=torch.float64,
                      k=[[2, 2, 3], [0, 2, 4], [0, 0, 4]])
    with torch.no_grad():  # sharper laws: a few likely tokens per step, so N samples resolve TV 0.03
        for lm in f.models:
            lm.model.get_output_embeddings().weight.mul_(8.0)
    return f


def exact_joint(f) -> np.ndarray:
    """P(first N_TOK tokens) under the target at temperature T, flattened (V**N_TOK,)."""
    grid = torch.cartesian_prod(*[torch.arange(V)] * (N_TOK - 1))  # (V^(n-1), n-1)
    inp = torch.cat([torch.tensor([PROMPT]).repeat(len(grid), 1), grid], 1)
    with torch.no_grad():
        lp = torch.log_softmax(f.target.model(input_ids=inp).logits / T, -1)  # (B, L, V)
    L = len(PROMPT)
    j = sum(lp[:, L - 1 + i].gather(1, grid[:, i:i + 1])[:, 0] for i in range(N_TOK - 1))
    return (j[:, None] + lp[:, L + N_TOK - 2]).exp().reshape(-1).numpy()


def sample_counts(f, n, **kw) -> np.ndarray:
    counts = np.zeros(V ** N_TOK)
    for s in range(n):
        ids = generate(f, PROMPT, "csd", temperature=T, seed=s, max_new_tokens=4, **kw).token_ids[:N_TOK]
        counts[int(np.ravel_multi_index(ids, (V,) * N_TOK))] += 1
    return counts


def tv(a, b):
    return 0.5 * np.abs(a - b).sum()


def noise_threshold(p, n, q=0.995, reps=4000, seed=0):
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, p, size=reps) / n
    return float(np.quantile(0.5 * np.abs(draws - p).sum(1), q))


N = 6000


@functools.lru_cache(maxsize=None)
def joint_and_threshold():
    p = exact_joint(fam())
    return p, noise_threshold(p, N)


def test_power_against_tv_003():
    """The threshold is tight enough that a sampler off by TV 0.03 is caught."""
    p, thr = joint_and_threshold()
    rng = np.random.default_rng(1)
    caught = 0
    for _ in range(200):  # random alternatives at TV exactly 0.03: move mass between random cell sets
        plus = rng.random(p.size) < 0.5
        if (p * ~plus).sum() < 0.03:  # not enough mass to move
            plus = ~plus
        a, b = p * plus / (p * plus).sum(), p * ~plus / (p * ~plus).sum()
        alt = p + 0.03 * (a - b)
        assert alt.min() >= 0 and abs(tv(alt, p) - 0.03) < 1e-9
        caught += tv(rng.multinomial(N, alt) / N, p) > thr
    assert caught / 200 >= 0.9, (thr, caught)


def test_csd_sampling_matches_ar_joint():
    p, thr = joint_and_threshold()
    emp = sample_counts(fam(), N, lenience=3.0) / N
    assert tv(emp, p) < thr, (tv(emp, p), thr)


def test_naive_variant_is_detectably_biased():
    """Reviewing against the drafters' raw p instead of q_eff breaks exactness."""
    p, _ = joint_and_threshold()
    n = 1500
    emp = sample_counts(fam(), n, lenience=3.0, naive=True) / n
    assert tv(emp, p) > noise_threshold(p, n), tv(emp, p)


def test_ar_sampling_matches_exact_joint():
    """The reference itself: AR sampling follows the computed joint (checks exact_joint)."""
    p = exact_joint(fam())
    n = 1500
    counts = np.zeros(p.size)
    for s in range(n):
        ids = generate(fam(), PROMPT, "ar", temperature=T, seed=s, max_new_tokens=N_TOK).token_ids
        counts[int(np.ravel_multi_index(ids, (V,) * N_TOK))] += 1
    assert tv(counts / n, p) < noise_threshold(p, n)
