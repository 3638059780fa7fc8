"""Exact under sampling: every method samples exactly the target's law, and the naive variant does not.

Tiny-vocabulary random families (V = 6, float64, output layers scaled so that a few
tokens carry most mass). The law of the first ``N_TOK`` generated tokens is computed
exactly from the target (:func:`csd_lib.measure.lossless.exact_joint`, shared per family and
temperature), with EOS folded in when it is on: a sequence ends at EOS, so every outcome
``(.., EOS, x)`` counts as ``(.., EOS, EOS)``. ``n`` seeded generations (seeds
``0 .. n-1``) give the empirical law; its total variation (TV) from the exact law must lie
within the ``QUANTILE`` of the TV that ``n`` exact multinomial draws from the same law give
(:func:`csd_lib.measure.lossless.noise_tv`; 99.9%, higher in the full sweep, so that a false alarm in
any case of a run has probability <= 1%). The naive variant (``generate(..., naive=True)``:
upper levels review against the drafters' raw distributions) is the negative control: on
csd cases with lenience >= 3 it must exceed that same threshold, in at least one case of
each (arch, depth, temperature) group (its bias depends on the law; see ``NAIVE_GROUPS``). For ``sd``,
``staged`` and ``mag`` there is no lenient review, so naive and exact must give the same
tokens, seed for seed.

The CI set covers T5 and Llama, 2 and 3 model levels (plus MaG), lenience 2 to 1e6,
temperatures 0.7 and 1.5, EOS on, a drafter equal to the target, K with zeros, and the
methods sd, staged, mag and csd, MaG's tokens reviewed leniently and strictly (``mag_lenience``,
the paper's rule: per-position lenience inside one review), in 9 cases of 120 to 200 samples
(thresholds TV 0.13 to 0.24: gross errors only; about a minute of CPU). ``CSD_FULL_SWEEP=1``
(``csd_lib.config.FULL_SWEEP``) runs the full grid instead: every arch, depth, temperature and
lenience (2, 10, 1e6), plus MaG strict at lenience 10, 76 cases of 1,000 samples (thresholds near TV 0.06 to 0.1; about an hour on one CPU core). Each case id names its config and
seeds, e.g. ``csd-llama-nd2-fam5-eos-lam3-T1.5-k2.0.3/0.1.2/0.0.3-seeds0..199``; rerun it
alone with ``pytest "tests/engine/test_sampling_exact.py::test_exact_within_noise[ID]"``.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from csd_lib import generate, random_family
from csd_lib.config import FULL_SWEEP
from csd_lib.measure.lossless import exact_joint, noise_tv, tv

V, N_TOK, PROMPT = 6, 2, [3, 4, 5, 3, 4, 5, 3, 4]
SCALE = {"llama": 4.0, "t5": 0.001}  # output-layer scale: random T5 outputs are near one-hot unscaled
K = {  # K per (method, drafters); zeros in every matrix that has room for one
    ("csd", 1): ((2, 3), (0, 3)),
    ("csd", 2): ((2, 0, 3), (0, 1, 2), (0, 0, 3)),
    ("staged", 2): ((3, 0), (0, 2)),
    ("sd", 1): ((3,),), ("sd", 2): ((3,),), ("mag", 1): ((3,),), ("mag", 2): ((3,),),
}


@dataclass(frozen=True)
class Case:
    method: str
    arch: str
    nd: int             # neural drafters: 1 = two model levels, 2 = three (csd adds MaG below)
    same: bool          # drafters are the target model itself
    eos: bool
    lenience: float | None
    T: float
    n: int
    fam_seed: int = 5
    mag_lenience: bool = True  # False: MaG's tokens reviewed strictly inside lenient reviews (the paper)

    @property
    def k(self):
        return [list(r) for r in K[self.method, self.nd]]

    @property
    def id(self) -> str:
        kk = "/".join(".".join(map(str, r)) for r in self.k)
        lam = "" if self.lenience is None else f"-lam{self.lenience:g}" + ("" if self.mag_lenience else "-magstrict")
        return (f"{self.method}-{self.arch}-nd{self.nd}-fam{self.fam_seed}{'-same' if self.same else ''}"
                f"{'-eos' if self.eos else ''}{lam}-T{self.T:g}-k{kk}-seeds0..{self.n - 1}")


CI_CASES = [
    Case("csd", "llama", 2, False, False, 3.0, 1.5, 150),
    Case("csd", "llama", 1, True, True, 1e6, 0.7, 200),
    Case("csd", "t5", 2, False, True, 2.0, 0.7, 120),
    Case("csd", "t5", 1, False, False, 10.0, 1.5, 120),
    # the paper's MaG rule: strict on MaG's positions, lenient on the others of the same review
    Case("csd", "llama", 2, False, True, 1e6, 0.7, 150, mag_lenience=False),
    Case("csd", "t5", 2, True, False, 3.0, 1.5, 120, mag_lenience=False),
    Case("sd", "llama", 1, False, True, None, 0.7, 150),
    Case("staged", "llama", 2, True, False, None, 1.5, 150),
    Case("mag", "llama", 1, False, False, None, 1.5, 120),
]


def full_cases(n: int = 1000) -> list[Case]:
    """Every arch, depth, temperature and lenience; drafter == target and EOS each on in half."""
    out = []
    for arch, nd, T in itertools.product(("t5", "llama"), (1, 2), (0.7, 1.5)):
        for lam, (same, eos) in itertools.product((2.0, 10.0, 1e6), ((False, True), (True, False))):
            out.append(Case("csd", arch, nd, same, eos, lam, T, n))
        out.append(Case("csd", arch, nd, False, True, 10.0, T, n, mag_lenience=False))
        for method in ("sd", "mag") + (("staged",) if nd == 2 else ()):
            out.append(Case(method, arch, nd, nd == 2, T == 0.7, None, T, n))
    return out


CASES = full_cases() if FULL_SWEEP else CI_CASES
# Noise quantile: a false alarm in any case of the run has probability <= 1%.
QUANTILE = max(0.999, 1 - 0.01 / len(CASES))
REPS = max(4000, int(20 / (1 - QUANTILE)))
# Negative control per (arch, depth, temperature) group of csd cases with lenience >= 3. The
# naive bias depends on the law: on a sharp T5 law with EOS (t5, nd2, T 0.7) it measured TV
# 0.034, under the 1,000-sample threshold, so a group passes when one of its cases is caught.
NAIVE_GROUPS: dict[str, list[Case]] = {}
for _c in CASES:  # (MaG-strict cases are left out: less of each review is lenient, so less bias to see)
    if _c.method == "csd" and _c.lenience >= 3 and _c.mag_lenience:
        NAIVE_GROUPS.setdefault(f"{_c.arch}-nd{_c.nd}-T{_c.T:g}", []).append(_c)


@functools.lru_cache(maxsize=None)
def family(arch: str, nd: int, same: bool, eos: bool, seed: int):
    f = random_family(arch, vocab_size=V, n_drafters=nd, seed=seed, drafter_is_target=same, eos=None,
                      dtype=torch.float64)
    with torch.no_grad():  # a few likely tokens per step: neither one-hot nor flat
        for m in {id(lm.model): lm.model for lm in f.models}.values():
            m.get_output_embeddings().weight.mul_(SCALE[arch])
    if eos:  # EOS = the second most likely first token: frequent, but not every sequence
        first = raw_law(arch, nd, same, seed, 1.0).reshape(V, V).sum(1)
        f.target.eos_token_id = int(np.argsort(first)[-2])
    return f


@functools.lru_cache(maxsize=None)
def raw_law(arch: str, nd: int, same: bool, seed: int, T: float) -> np.ndarray:
    """The target's exact law of the first N_TOK tokens, EOS as an ordinary token (V**N_TOK,)."""
    return exact_joint(family(arch, nd, same, False, seed), PROMPT, N_TOK, T)


def outcome(ids, eos) -> int:
    """Index of the first N_TOK tokens, every position after EOS set to EOS."""
    ids = list(ids[:N_TOK])
    if eos is not None and eos in ids:
        cut = ids.index(eos) + 1
        ids = ids[:cut] + [eos] * (N_TOK - cut)
    return int(np.ravel_multi_index(ids, (V,) * N_TOK))


@functools.lru_cache(maxsize=None)
def law(arch: str, nd: int, same: bool, eos: bool, seed: int, T: float) -> np.ndarray:
    """The exact law of what a generation emits first, with EOS folded in when on."""
    p = raw_law(arch, nd, same, seed, T)  # the target's weights do not depend on EOS
    e = family(arch, nd, same, eos, seed).target.eos_token_id if eos else None
    out = np.zeros_like(p)
    for i, v in enumerate(p):
        out[outcome(np.unravel_index(i, (V,) * N_TOK), e)] += v
    return out


def case_law(c: Case) -> np.ndarray:
    return law(c.arch, c.nd, c.same, c.eos, c.fam_seed, c.T)


def sample(c: Case, naive: bool = False, n: int | None = None) -> tuple[np.ndarray, list[list[int]]]:
    """Empirical law over seeds 0..n-1 and the token lists, (V**N_TOK,)."""
    f = family(c.arch, c.nd, c.same, c.eos, c.fam_seed)
    e = f.target.eos_token_id if c.eos else None
    counts, runs = np.zeros(V ** N_TOK), []
    for s in range(n or c.n):
        ids = generate(f, PROMPT, c.method, k=c.k, lenience=c.lenience, temperature=c.T, seed=s,
                       max_new_tokens=N_TOK + 2, naive=naive,  # room to draft past N_TOK
                       mag_lenience=c.mag_lenience if c.method == "csd" else None).token_ids
        counts[outcome(ids, e)] += 1
        runs.append(ids)
    return counts / (n or c.n), runs


def test_ci_set_covers_the_settings():
    cs = CASES
    assert {c.arch for c in cs} == {"t5", "llama"} and {c.nd for c in cs} == {1, 2}
    assert {c.method for c in cs} == {"sd", "staged", "mag", "csd"} and {c.T for c in cs} == {0.7, 1.5}
    lams = {c.lenience for c in cs if c.lenience}
    assert min(lams) == 2 and max(lams) == 1e6
    assert any(c.eos for c in cs) and any(c.same for c in cs)
    assert {c.mag_lenience for c in cs if c.method == "csd"} == {True, False}
    assert all(0 in itertools.chain(*c.k) for c in cs if c.method in ("csd", "staged"))
    assert len(NAIVE_GROUPS) >= 2 and len({c.id for c in cs}) == len(cs)


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_exact_within_noise(c):
    p = case_law(c)
    emp, runs = sample(c)
    thr = noise_tv(p, c.n, QUANTILE, REPS)
    assert tv(emp, p) < thr, (c.id, tv(emp, p), thr)
    if c.eos:  # EOS really ended sequences, inside the first N_TOK tokens
        eos = family(c.arch, c.nd, c.same, c.eos, c.fam_seed).target.eos_token_id
        assert any(eos in r[:N_TOK] and r[-1] == eos for r in runs)
    if c.method != "csd":  # no lenient review: the naive variant is the exact method itself
        assert sample(c, naive=True, n=20)[1] == runs[:20]


@pytest.mark.parametrize("group", list(NAIVE_GROUPS), ids=[f"{g}:" + ",".join(c.id for c in cs)
                                                      for g, cs in NAIVE_GROUPS.items()])
def test_naive_variant_is_caught(group):
    """Reviewing against the drafters' raw p instead of q_eff breaks exactness, visibly."""
    seen = []
    for c in NAIVE_GROUPS[group]:
        p = case_law(c)
        emp, _ = sample(c, naive=True)
        seen.append((c.id, tv(emp, p), noise_tv(p, c.n, QUANTILE, REPS)))
        if seen[-1][1] > seen[-1][2]:
            return
    pytest.fail(f"the naive variant stayed within noise in every case (id, TV, threshold): {seen}")


def test_folded_law_is_a_law():
    for c in CASES:
        p = case_law(c)
        assert abs(p.sum() - 1) < 1e-9 and p.min() >= 0
        if c.eos:  # EOS carries real mass, so the EOS cases test stopping
            eos = family(c.arch, c.nd, c.same, c.eos, c.fam_seed).target.eos_token_id
            assert p.reshape(V, V)[eos].sum() > 0.1, c.id
