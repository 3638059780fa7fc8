"""Batched generation: every row equals its batch-1 generation, and the batch really batches.

Greedy (fp32 on the CPU, as the brief asks: the rows must equal each prompt's batch-1 AR tokens): tiny random
T5 and Llama families, prompts of mixed lengths, more prompts than the batch size (a finished row's place is
taken by the next prompt), EOS on so that rows end at different times, every linear method. Sampling: row ``r``
equals the batch-1 generation with seed ``seed + r``, token for token, and a batch of one prompt repeated follows
the target's exact law (enumeration, as tests/engine/test_sampling_exact.py does at batch 1). The large grid
is marked slow; a fast subset covers both architectures and every method.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from csd_lib import generate, random_family
from csd_lib.engine import batch as batch_mod
from csd_lib.engine.batch import generate_batch, row_seed
from csd_lib.engine.plan import Plan
from csd_lib.measure.lossless import exact_joint, noise_tv, tv

METHODS = ("ar", "sd", "mag", "staged", "csd")
MAX_NEW = 16


@functools.lru_cache(maxsize=None)
def family(arch: str, same: bool, dtype=torch.float32):
    """A random family whose EOS is a token its target emits in some AR outputs but not in all."""
    fam = random_family(arch, vocab_size=48, n_drafters=2, seed=3, drafter_is_target=same, eos=None, dtype=dtype)
    outs = ar_tokens(fam, mixed_prompts(0, 8))
    firsts = {t: sum(t in o for o in outs) for o in outs for t in o[2:8]}
    fam.target.eos_token_id = min(firsts, key=lambda t: (abs(firsts[t] - 3), t))  # in about 3 of the 8
    return fam


def mixed_prompts(seed: int, n: int = 6) -> list[list[int]]:
    """Prompts of mixed lengths (2 to 17 tokens), one repetitive (MaG finds matches in it)."""
    rng = np.random.default_rng(seed)
    out = [rng.integers(3, 48, size=int(rng.integers(2, 18))).tolist() for _ in range(n - 1)]
    return out + [rng.integers(3, 48, size=3).tolist() * 4]


def ar_tokens(fam, prompts, max_new=MAX_NEW):
    return [generate(fam, p, "ar", max_new_tokens=max_new).token_ids for p in prompts]


def eos_prompts(fam, seed: int, n: int = 6) -> list[list[int]]:
    """Mixed prompts where at least one row ends at EOS before the length limit and one runs to it."""
    for s in range(seed, seed + 50):
        prompts = mixed_prompts(s, n)
        lens = [len(t) for t in ar_tokens(fam, prompts)]
        if min(lens) < MAX_NEW and max(lens) == MAX_NEW:
            return prompts
    raise AssertionError("no prompt set with rows that end at different times")


def check_rows(arch: str, same: bool, method: str, batch_size: int, seed: int):
    fam = family(arch, same)
    prompts = eos_prompts(fam, seed)
    want = ar_tokens(fam, prompts)
    got = generate_batch(fam, prompts, method, batch_size=batch_size, max_new_tokens=MAX_NEW)
    assert [g.token_ids for g in got] == want, (arch, same, method)
    for g in got:  # provenance and event log per row, the plan carrying the batch size
        assert len(g.provenance) == len(g.token_ids) and g.plan.batch_size == batch_size
        assert g.stats.n_tokens == len(g.token_ids) and g.events and g.method == method
    assert len({len(g.token_ids) for g in got}) > 1  # rows ended at different times


@pytest.mark.parametrize("arch", ["llama", "t5"])
@pytest.mark.parametrize("method", METHODS)
def test_rows_equal_batch1_ar(arch, method):
    check_rows(arch, True, method, 4, 11)  # drafters equal to the target: long ragged acceptances


@pytest.mark.parametrize("arch", ["llama", "t5"])
def test_independent_drafters_csd(arch):
    check_rows(arch, False, "csd", 3, 21)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["llama", "t5"])
@pytest.mark.parametrize("same", [False, True])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("batch_size", [1, 2, 5, 8])
def test_rows_equal_batch1_ar_grid(arch, same, method, batch_size):
    check_rows(arch, same, method, batch_size, 31 + batch_size)


def test_csd_events_equal_batch1():
    """A lenient cascade's per-row review log is the batch-1 log (greedy: the same reviews)."""
    fam = family("llama", False)
    prompts = mixed_prompts(5, 4)
    got = generate_batch(fam, prompts, "csd", lenience=3.0, max_new_tokens=MAX_NEW)
    for p, g in zip(prompts, got):
        one = generate(fam, p, "csd", lenience=3.0, max_new_tokens=MAX_NEW)
        assert g.token_ids == one.token_ids and g.provenance == one.provenance
        assert [(e.reviewer, e.tokens, e.n_accepted) for e in g.events] == \
               [(e.reviewer, e.tokens, e.n_accepted) for e in one.events]
        assert g.stats.calls == one.stats.calls  # each row counts the batched calls it took part in


def test_the_batch_batches_and_finished_rows_leave(monkeypatch):
    """Rows share forward calls, and a finished row is in no later call (its place goes to the next prompt)."""
    sizes = []
    real = batch_mod.batched_logits

    def spy(lms, seqs, ms):
        sizes.append((lms[0].name, len(lms)))
        return real(lms, seqs, ms)

    monkeypatch.setattr(batch_mod, "batched_logits", spy)
    fam = family("llama", True)
    prompts = eos_prompts(fam, 11)
    got = generate_batch(fam, prompts, "ar", batch_size=3, max_new_tokens=MAX_NEW)
    target = [n for name, n in sizes if name == "target"]
    assert max(target) == 3  # never more rows than the batch size
    assert sum(target) == sum(len(g.token_ids) for g in got)  # AR: one call per token per row, no call wasted
    assert len(target) < sum(target)  # rows shared calls
    assert target[-1] < 3  # the last rows ran on alone: finished rows had left


@pytest.mark.parametrize("arch", ["llama", "t5"])
def test_sampled_rows_equal_batch1_with_their_seed(arch):
    fam = family(arch, False, torch.float64)
    prompts = mixed_prompts(7, 5)
    got = generate_batch(fam, prompts, "csd", batch_size=3, lenience=4.0, temperature=1.0, seed=40,
                         max_new_tokens=MAX_NEW)
    for r, (p, g) in enumerate(zip(prompts, got)):
        one = generate(fam, p, "csd", lenience=4.0, temperature=1.0, seed=row_seed(40, r), max_new_tokens=MAX_NEW)
        assert g.token_ids == one.token_ids and g.plan.seed == 40 + r
    assert len({tuple(g.token_ids) for g in got}) == len(got)


V, N_TOK, PROMPT, N = 6, 2, [3, 4, 5, 3, 4, 5, 3, 4], 150


@pytest.mark.parametrize("arch,method,lam", [("llama", "csd", 3.0), ("t5", "sd", None)])
def test_sampled_rows_follow_the_target_law(arch, method, lam):
    """One prompt in N rows (seeds 0..N-1): the rows' first tokens follow the target's exact law."""
    fam = random_family(arch, vocab_size=V, n_drafters=1, seed=5, eos=None, dtype=torch.float64)
    with torch.no_grad():  # a few likely tokens per step (test_sampling_exact's scales)
        for m in {id(lm.model): lm.model for lm in fam.models}.values():
            m.get_output_embeddings().weight.mul_({"llama": 4.0, "t5": 0.001}[arch])
    p = exact_joint(fam, PROMPT, N_TOK, 1.0)
    got = generate_batch(fam, [PROMPT] * N, method, batch_size=16, lenience=lam, temperature=1.0, seed=0,
                         max_new_tokens=N_TOK + 2)
    emp = np.zeros(V ** N_TOK)
    for g in got:
        emp[np.ravel_multi_index(g.token_ids[:N_TOK], (V,) * N_TOK)] += 1 / N
    assert tv(emp, p) < noise_tv(p, N, 0.999, 4000)


def test_plan_batch_size():
    assert Plan.ar().batch_size == 1 and Plan.ar(batch_size=8).batch_size == 8
    assert Plan.from_dict(Plan.ar(batch_size=8).to_dict()).batch_size == 8
    for bad in (0, -1, 2.0, True, "4"):
        with pytest.raises(ValueError, match="batch_size"):
            Plan.ar(batch_size=bad)


def test_tree_methods_are_refused():
    with pytest.raises(ValueError, match="token tree, which batched generation does not run"):
        generate_batch(family("llama", False), [[3, 4]], "tree-sd")


def test_a_failing_call_ends_the_batch_with_its_error(monkeypatch):
    """An error in a batched forward reaches the caller; no row waits forever."""
    def broken(lms, seqs, ms):
        raise ValueError("the forward broke")

    monkeypatch.setattr(batch_mod, "batched_logits", broken)
    with pytest.raises(ValueError, match="the forward broke"):
        generate_batch(family("t5", False), mixed_prompts(2, 5), "csd", batch_size=2, max_new_tokens=4)


def test_cross_attention_is_computed_once_per_row(monkeypatch):
    """T5 rows keep their cross-attention keys and values: after a row's first call they are stacked, not
    recomputed from the encoder states (the cache passed in already holds them)."""
    seen = []
    real = batch_mod._stack_cross

    def spy(lms):
        cross = real(lms)
        seen.append(cross.get_seq_length() > 0)
        return cross

    monkeypatch.setattr(batch_mod, "_stack_cross", spy)
    fam = family("t5", True)
    prompts = mixed_prompts(4, 4)
    got = generate_batch(fam, prompts, "ar", batch_size=4, max_new_tokens=MAX_NEW)
    assert [g.token_ids for g in got] == ar_tokens(fam, prompts)
    assert seen[0] is False and all(seen[1:])  # one first call for all rows, then reuse
