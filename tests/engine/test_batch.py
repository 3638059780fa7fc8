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
from test_sampling_exact import CI_CASES, N_TOK, PROMPT, QUANTILE, REPS, V, Case, case_law, outcome
from test_sampling_exact import family as law_family

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


# The batch-1 enumeration's helpers (tests/engine/test_sampling_exact.py): its families, cases and exact laws.
LAW_CASES = [next(c for c in CI_CASES if c.eos and (c.method, c.arch) == key)
             for key in (("csd", "t5"), ("csd", "llama"), ("sd", "llama"))]
SHORT = PROMPT[:3]  # the other prompt of each batch: another length, so rows are padded differently


def folded_law(c: Case, prompt: list[int]) -> np.ndarray:
    """The exact law of ``prompt``'s first N_TOK tokens under case ``c``'s family, EOS folded in (V**N_TOK,)."""
    f = law_family(c.arch, c.nd, c.same, c.eos, c.fam_seed)
    p = exact_joint(f, prompt, N_TOK, c.T)
    return np.bincount([outcome(np.unravel_index(i, (V,) * N_TOK), f.target.eos_token_id) for i in range(p.size)],
                       weights=p, minlength=p.size)


@pytest.mark.parametrize("c", LAW_CASES, ids=[c.id for c in LAW_CASES])
def test_sampled_rows_follow_their_prompts_law(c):
    """Two prompts of different lengths, each in ``c.n`` rows of one batched run (seeds 0..2n-1, rows ending
    at EOS at different times): each prompt's rows follow that prompt's exact law under the target."""
    f = law_family(c.arch, c.nd, c.same, c.eos, c.fam_seed)
    prompts = [PROMPT, SHORT] * c.n
    got = generate_batch(f, prompts, c.method, batch_size=16, k=c.k, lenience=c.lenience, temperature=c.T,
                         seed=0, max_new_tokens=N_TOK + 2, mag_lenience=c.mag_lenience if c.method == "csd" else None)
    for which, prompt, p in ((0, PROMPT, case_law(c)), (1, SHORT, folded_law(c, SHORT))):
        emp = np.zeros(V ** N_TOK)
        for g in got[which::2]:
            emp[outcome(g.token_ids, f.target.eos_token_id)] += 1 / c.n
        assert tv(emp, p) < noise_tv(p, c.n, QUANTILE, REPS), (c.id, which)
    assert len({len(g.token_ids) for g in got}) > 1  # rows ended at different times


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


def test_the_encoder_runs_once_for_the_rows_that_start_together():
    """T5: one encoder forward over the rows that start together (padded, masked), batch 1 for a row that takes
    a finished row's place; the rows' tokens stay their batch-1 tokens."""
    fam = family("t5", False)
    prompts = eos_prompts(fam, 11)
    seen = []
    hook = fam.target.model.get_encoder().register_forward_hook(
        lambda mod, args, kwargs, out: seen.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True)
    try:
        got = generate_batch(fam, prompts, "csd", batch_size=4, max_new_tokens=MAX_NEW)
    finally:
        hook.remove()
    assert [g.token_ids for g in got] == ar_tokens(fam, prompts)
    assert seen[0] == (4, max(len(p) for p in prompts[:4]))  # the first four rows: one call, padded
    assert sum(b for b, _ in seen) == len(prompts) and len(seen) < len(prompts)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny-t5", "tiny-llama"])
def test_named_families_rows_equal_batch1_ar(name):
    """The embedded trained families, held-out prompts of mixed lengths, an EOS some rows reach: every row is its
    prompt's batch-1 AR output (fp32 on the CPU)."""
    from csd_lib import load_family
    from csd_lib.families.tasks import load_task
    fam = load_family(name)
    prompts = [e.prompt for e in load_task(fam.task, "test", 5)]
    want = ar_tokens(fam, prompts)
    counts = {t: sum(t in o[1:] for o in want) for o in want for t in o[1:]}
    fam.target.eos_token_id = min(counts, key=lambda t: (abs(counts[t] - 2), t))  # in about 2 of the 5 rows
    want = ar_tokens(fam, prompts)
    got = generate_batch(fam, prompts, "csd", batch_size=3, max_new_tokens=MAX_NEW)
    assert [g.token_ids for g in got] == want and len({len(t) for t in want}) > 1
