"""Lossless under every draft-length policy (csd_lib.engine.policy): greedy tokens are AR's, sampling is exact.

Greedy: tiny random T5 and Llama families in float64, SD, MaG, staged and CSD (one and two neural drafters, with
MaG), drafters independent of the target and equal to it, lenience 1 to 10, repetitive prompts that MaG can
copy, a per-row mix of policies, a low confidence threshold and a high one, and EOS inside drafts: every
generation returns exactly the AR tokens (T5's output layers scaled down so that its drafters are unsure
somewhere). Each case with independent drafters checks that its policy changed the drafts (their lengths
differ from fixed K's), so it does not pass by running fixed K.

Sampling: the law of the first ``N_TOK`` tokens on V = 6 families, computed exactly by enumeration
(:func:`csd_lib.measure.lossless.exact_joint`, EOS folded in as in test_sampling_exact.py), against ``n`` seeded
generations; the total variation must lie within the 99.9% noise quantile of ``n`` exact draws
(:func:`csd_lib.measure.lossless.noise_tv`). A stop rule that read the review to come would bias the law; these
policies read only what precedes the tokens they cut.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from csd_lib import generate, random_family
from csd_lib.engine.policy import POLICIES
from csd_lib.measure.lossless import exact_joint, noise_tv, tv

ADAPTIVE = [p for p in POLICIES if p != "fixed"]


# -- greedy: the AR tokens --------------------------------------------------------------------------------

GREEDY_SCALE = {"llama": 1.0, "t5": 0.003}  # random T5 drafters are sure of every token unscaled: nothing to stop


@functools.lru_cache(maxsize=None)
def greedy_family(arch: str, nd: int, same: bool, seed: int = 2):
    f = random_family(arch, vocab_size=48, n_drafters=nd, seed=seed, drafter_is_target=same, eos=None)
    with torch.no_grad():
        for m in {id(lm.model): lm.model for lm in f.models}.values():
            m.get_output_embeddings().weight.mul_(GREEDY_SCALE[arch])
    return f


def greedy_prompts(seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    rand = rng.integers(3, 48, size=12).tolist()
    motif = rng.integers(3, 48, size=5).tolist()
    return [rand, motif * 4]


@functools.lru_cache(maxsize=None)
def ar(arch: str, nd: int, same: bool, pi: int, max_new: int) -> tuple[int, ...]:
    return tuple(generate(greedy_family(arch, nd, same), greedy_prompts(nd)[pi], "ar", max_new_tokens=max_new).token_ids)


GREEDY_SETTINGS = [  # (method, n drafters, k, lenience)
    ("sd", 1, 5, None),
    ("mag", 1, 6, None),
    ("staged", 2, [[3, 0], [0, 2]], None),
    ("csd", 1, [[3, 6], [0, 4]], 3.0),
    ("csd", 2, [[3, 2, 10], [0, 2, 5], [0, 0, 5]], 1.0),
    ("csd", 2, [[2, 0, 7], [0, 3, 4], [0, 0, 3]], 10.0),
]
GREEDY_CASES = [(policy, arch, same, *s) for policy, arch, same, s in
                itertools.product(ADAPTIVE, ("t5", "llama"), (False, True), GREEDY_SETTINGS)
                if not (policy == "confidence" and s[0] == "mag")]


def greedy_id(policy, arch, same, method, nd, k, lam) -> str:
    kk = "/".join(".".join(map(str, r)) for r in k) if isinstance(k, list) else str(k)
    return f"{policy}-{method}-{arch}-nd{nd}-{'same' if same else 'indep'}-k{kk}" + ("" if lam is None else f"-lam{lam:g}")


@pytest.mark.parametrize("policy,arch,same,method,nd,k,lam", GREEDY_CASES, ids=[greedy_id(*c) for c in GREEDY_CASES])
def test_greedy_equals_ar_under_every_policy(policy, arch, same, method, nd, k, lam):
    fam = greedy_family(arch, nd, same)
    changed = False
    for pi, prompt in enumerate(greedy_prompts(nd)):
        max_new = 19 + 4 * pi
        g = generate(fam, prompt, method, k=k, lenience=lam, max_new_tokens=max_new, draft_policy=policy)
        assert tuple(g.token_ids) == ar(arch, nd, same, pi, max_new), pi
        assert len(g.token_ids) == max_new == len(g.provenance)
        fixed = generate(fam, prompt, method, k=k, lenience=lam, max_new_tokens=max_new)
        changed |= g.draft_lengths() != fixed.draft_lengths()
    if not same:  # (a drafter equal to the target is accepted and sure: the schedule and a stop may keep K)
        assert changed, "the policy never changed a draft: this case tests nothing beyond fixed K"


@pytest.mark.parametrize("arch", ["t5", "llama"])
def test_greedy_mixed_rows_and_thresholds(arch):
    fam = greedy_family(arch, 2, False)
    k = [[3, 2, 10], [0, 2, 5], [0, 0, 5]]
    for pi, prompt in enumerate(greedy_prompts(2)):
        want = ar(arch, 2, False, pi, 25)
        for policy, conf in ((["ewif", "schedule", "confidence"], 0.05), (["confidence", "fixed", "ewif"], 0.95),
                             (["schedule", "confidence", "schedule"], 0.4)):
            g = generate(fam, prompt, "csd", k=k, lenience=2.0, max_new_tokens=25, draft_policy=policy,
                         confidence=conf)
            assert tuple(g.token_ids) == want, (policy, conf)


@pytest.mark.parametrize("arch", ["t5", "llama"])
def test_greedy_eos_inside_adaptive_drafts(arch):
    for seed in range(3, 30):  # a family whose free output has a token first seen late enough
        fam = random_family(arch, vocab_size=48, n_drafters=2, seed=seed, drafter_is_target=True, eos=None)
        prompt = greedy_prompts(seed)[1]
        free = generate(fam, prompt, "ar", max_new_tokens=40).token_ids
        pos = next((i for i in range(3, 40) if free[i] not in free[:i]), None)
        if pos is not None:
            break
    fam.target.eos_token_id = free[pos]
    with_eos = prompt + free[:pos + 1] + prompt  # MaG can copy EOS into a draft
    assert generate(fam, prompt, "ar", max_new_tokens=40).token_ids == free[:pos + 1]
    for p in (prompt, with_eos):
        want = generate(fam, p, "ar", max_new_tokens=40).token_ids
        for policy in ADAPTIVE:
            for method in ("sd", "csd"):
                assert generate(fam, p, method, max_new_tokens=40, draft_policy=policy).token_ids == want, \
                    (policy, method)


# -- sampling: the target's law ---------------------------------------------------------------------------

V, N_TOK, PROMPT = 6, 2, [3, 4, 5, 3, 4, 5, 3, 4]
SCALE = {"llama": 4.0, "t5": 0.001}  # as test_sampling_exact.py: a few likely tokens per step


@dataclass(frozen=True)
class Case:
    policy: str
    method: str
    arch: str
    nd: int
    eos: bool
    lenience: float | None
    T: float
    n: int
    k: tuple
    confidence: float | None = None

    @property
    def id(self) -> str:
        lam = "" if self.lenience is None else f"-lam{self.lenience:g}"
        conf = "" if self.confidence is None else f"-conf{self.confidence:g}"
        return (f"{self.policy}{conf}-{self.method}-{self.arch}-nd{self.nd}{'-eos' if self.eos else ''}{lam}"
                f"-T{self.T:g}-seeds0..{self.n - 1}")


SD_K, CSD_K = ((3,),), ((2, 0, 3), (0, 1, 2), (0, 0, 3))
SAMPLING_CASES = [
    Case("schedule", "sd", "llama", 1, True, None, 0.7, 150, SD_K),
    Case("schedule", "csd", "t5", 2, False, 3.0, 1.5, 120, CSD_K),
    Case("confidence", "sd", "llama", 1, False, None, 1.5, 150, SD_K, 0.5),
    Case("confidence", "csd", "llama", 2, True, 1e6, 0.7, 150, CSD_K, 0.6),
    Case("ewif", "sd", "t5", 1, True, None, 0.7, 120, SD_K),
    Case("ewif", "csd", "llama", 2, False, 2.0, 1.5, 150, CSD_K),
]


@functools.lru_cache(maxsize=None)
def sampling_family(arch: str, nd: int, eos: bool):
    f = random_family(arch, vocab_size=V, n_drafters=nd, seed=5, eos=None, dtype=torch.float64)
    with torch.no_grad():
        for m in {id(lm.model): lm.model for lm in f.models}.values():
            m.get_output_embeddings().weight.mul_(SCALE[arch])
    if eos:  # EOS = the second most likely first token
        first = exact_joint(f, PROMPT, N_TOK, 1.0).reshape(V, V).sum(1)
        f.target.eos_token_id = int(np.argsort(first)[-2])
    return f


def outcome(ids, eos) -> int:
    ids = list(ids[:N_TOK])
    if eos is not None and eos in ids:
        cut = ids.index(eos) + 1
        ids = ids[:cut] + [eos] * (N_TOK - cut)
    return int(np.ravel_multi_index(ids, (V,) * N_TOK))


def case_law(c: Case) -> np.ndarray:
    f = sampling_family(c.arch, c.nd, c.eos)
    e = f.target.eos_token_id if c.eos else None
    out = np.zeros(V ** N_TOK)
    for i, v in enumerate(exact_joint(sampling_family(c.arch, c.nd, False), PROMPT, N_TOK, c.T)):
        out[outcome(np.unravel_index(i, (V,) * N_TOK), e)] += v
    return out


def test_sampling_cases_cover_the_policies():
    assert {c.policy for c in SAMPLING_CASES} == set(ADAPTIVE)
    assert all({c.method for c in SAMPLING_CASES if c.policy == p} == {"sd", "csd"} for p in ADAPTIVE)
    assert {c.arch for c in SAMPLING_CASES} == {"t5", "llama"} and any(c.eos for c in SAMPLING_CASES)


@pytest.mark.parametrize("c", SAMPLING_CASES, ids=[c.id for c in SAMPLING_CASES])
def test_exact_law_under_every_policy(c):
    f = sampling_family(c.arch, c.nd, c.eos)
    e = f.target.eos_token_id if c.eos else None
    counts, lengths = np.zeros(V ** N_TOK), set()
    for s in range(c.n):
        g = generate(f, PROMPT, c.method, k=[list(r) for r in c.k], lenience=c.lenience, temperature=c.T, seed=s,
                     max_new_tokens=N_TOK + 2, draft_policy=c.policy, confidence=c.confidence)
        counts[outcome(g.token_ids, e)] += 1
        lengths.add(tuple(g.draft_lengths()))
    p = case_law(c)
    thr = noise_tv(p, c.n, 0.999, 4000)
    assert tv(counts / c.n, p) < thr, (c.id, tv(counts / c.n, p), thr)
    assert len(lengths) > 1  # the drafts' lengths varied from seed to seed
