"""csd_lib.lossless: exact joints, empirical laws, TV noise threshold, greedy identity."""
import functools

import numpy as np
import torch

from csd_lib import generate, random_family
from csd_lib.measure.lossless import exact_joint, greedy_identity, noise_tv, sample_joint, tv

V, PROMPT = 5, [3, 4, 3, 4, 2]


@functools.lru_cache(maxsize=None)
def fam(arch="llama"):
    return random_family(arch, vocab_size=V, n_drafters=1, seed=3, eos=None, dtype=torch.float64,
                         k=[[2, 3], [0, 3]])


def test_tv_basics():
    assert tv([0.5, 0.5], [0.5, 0.5]) == 0
    assert abs(tv([1, 0], [0, 1]) - 1) < 1e-12
    assert abs(tv([0.2, 0.8], [0.5, 0.5]) - 0.3) < 1e-12


def test_exact_joint_is_a_law_and_matches_ar_probabilities():
    for arch in ("llama", "t5"):
        f = fam(arch)
        p = exact_joint(f, PROMPT, 2)
        assert p.shape == (V ** 2,) and abs(p.sum() - 1) < 1e-9 and p.min() >= 0
        # marginal of the first token = the target's next-token law
        p1 = exact_joint(f, PROMPT, 1)
        assert np.allclose(p.reshape(V, V).sum(1), p1, atol=1e-9)


def test_sample_joint_ar_within_noise():
    f = fam()
    p = exact_joint(f, PROMPT, 2)
    n = 400
    emp = sample_joint(f, PROMPT, 2, n, method="ar")
    assert abs(emp.sum() - 1) < 1e-9
    assert tv(emp, p) < noise_tv(p, n)


def test_sample_joint_is_reproducible():
    f = fam()
    a = sample_joint(f, PROMPT, 2, 30, method="csd", lenience=2.0)
    b = sample_joint(f, PROMPT, 2, 30, method="csd", lenience=2.0)
    assert np.array_equal(a, b)


def test_noise_tv_shrinks_with_n():
    p = np.full(20, 0.05)
    assert noise_tv(p, 4000) < noise_tv(p, 400) < 1


def test_greedy_identity_rows():
    f = random_family("t5", vocab_size=32, n_drafters=2, seed=1)
    rows = greedy_identity(f, [[5, 6, 7, 5, 6]], [dict(method="sd"), dict(method="csd", lenience=3.0)],
                           max_new_tokens=12)
    assert [r["label"] for r in rows] == ["sd", "csd lenience=3.0"]
    assert all(r["same"] and r["first_diff"] is None for r in rows)
    ref = generate(f, [5, 6, 7, 5, 6], "ar", max_new_tokens=12)
    assert rows[0]["n_tokens"] == len(ref.token_ids)
