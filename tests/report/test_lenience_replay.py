"""csd_lib.report.lenience_replay.replay_lenience: a run's greedy reviews decided again under other leniences.

The replay is trusted because at the run's own lenience it gives back exactly what the run
accepted (every review, every pair statistic); from there, a higher lenience never accepts fewer
tokens in the same review. Random T5 and Llama families (their output layers scaled down, so that
p(x) is soft enough for lenience to matter), both rules for MaG's tokens, and tiny-t5.
"""
import dataclasses
import functools

import numpy as np
import pytest
import torch

from csd_lib import generate, load_family, random_family
from csd_lib.families import tasks
from csd_lib.report.intervals import rate_difference
from csd_lib.report.lenience_replay import replay_lenience

K = [[3, 2, 4], [0, 2, 5], [0, 0, 6]]
LAMS = (1.0, 1.5, 3.0, 10.0, 1e6)
SOFT = {"t5": 0.003, "llama": 0.5}   # output-layer scale that leaves p(x) between ~0.001 and ~0.9


@functools.lru_cache(maxsize=None)
def soft_family(arch):
    fam = random_family(arch, vocab_size=48, n_drafters=2, seed=0, eos=None)
    with torch.no_grad():
        for lm in [fam.target] + fam.drafters:
            lm.model.get_output_embeddings().weight.mul_(SOFT[arch])
    return fam


def prompts():
    rng = np.random.default_rng(7)
    rand, motif = rng.integers(3, 48, 12).tolist(), rng.integers(3, 48, 5).tolist()
    return [rand, motif * 4]


def check_replay(runs, lams=LAMS):
    """The properties every replay has; returns it."""
    rep = replay_lenience(runs, lams)
    rows = {(g, e.step): i for i, (g, _) in enumerate(rep.reviews) for e in [runs[g].events[rep.reviews[i][1]]]}
    assert len(rows) == sum(len(g.events) for g in runs)
    for gi, g in enumerate(runs):   # at its own lenience the replay is the run, review by review and pair by pair
        own = rep.accepted[[rows[(gi, e.step)] for e in g.events], lams.index(g.plan.lenience)]
        assert own.tolist() == [e.n_accepted for e in g.events]
        assert rep.pair_stats(g.plan.lenience, gi) == g.stats.acceptance
    order = np.argsort(lams)
    assert (np.diff(rep.accepted[:, order], axis=1) >= 0).all() and rep.monotone and rep.violations() == []
    for pair in rep.pairs():
        acc = [rep.totals(pair)[j][0] for j in order]
        assert acc == sorted(acc), (pair, acc)
        h, t = rep.counts(pair, lams[-1])
        assert (sum(h), sum(t)) == rep.totals(pair)[-1] and len(h) == len(runs)
    for i, (gi, step) in enumerate(rep.reviews):   # the target is strict under every lenience
        e = runs[gi].events[step]
        strict = e.depth == 0 or (not runs[gi].plan.mag_lenience and set(e.proposers) <= {"mag"})
        if strict:
            assert len(set(rep.accepted[i].tolist())) <= 1, (e, rep.accepted[i])
    return rep


@pytest.mark.parametrize("arch", ["t5", "llama"])
@pytest.mark.parametrize("mag_lenience", [False, True])
def test_replay_reproduces_the_runs_and_never_accepts_fewer_with_more_lenience(arch, mag_lenience):
    fam = soft_family(arch)
    runs = []
    for p in prompts():
        ar = generate(fam, p, "ar", max_new_tokens=40).token_ids
        for lam in (1.0, 3.0):
            g = generate(fam, p, "csd", k=K, lenience=lam, max_new_tokens=40, mag_lenience=mag_lenience)
            assert g.token_ids == ar
            assert all(len(e.is_argmax) == len(e.px) == len(e.qx) == len(e.tokens) for e in g.events)
            runs.append(g)
    rep = check_replay(runs)
    # not vacuous: lenience does accept more somewhere, and MaG's tokens follow the plan's rule
    assert (rep.accepted[:, LAMS.index(1e6)] > rep.accepted[:, 0]).any()
    mag_only = [i for i, (g, s) in enumerate(rep.reviews)
                if runs[g].events[s].depth > 0 and set(runs[g].events[s].proposers) == {"mag"}]
    assert mag_only
    changed = (rep.accepted[mag_only, -1] > rep.accepted[mag_only, 0]).any()
    assert changed == mag_lenience
    # replayed at l = 1, the strict runs are themselves
    strict = runs[0::2]
    assert replay_lenience(strict, [1.0]).accepted[:, 0].tolist() == [e.n_accepted for g in strict for e in g.events]


@pytest.mark.parametrize("mag_lenience", [False, True])
def test_tiny_t5_replay_same_contexts(mag_lenience):
    fam = load_family("tiny-t5")
    runs = [generate(fam, ex.prompt, "csd", lenience=lam, max_new_tokens=48, mag_lenience=mag_lenience)
            for ex in tasks.load_task("synth-gsm8k", "test", 2) for lam in (1.0, fam.default_lenience)]
    lams = (1.0, 2.0, fam.default_lenience, 1e3)
    rep = check_replay(runs, lams)
    lead = f"{fam.drafters[0].name}<-{fam.drafters[1].name}"   # base<-small: a lenient neural pair
    acc = [a for a, _ in rep.totals(lead)]
    assert acc[-1] > acc[0], acc          # tiny-t5's drafters agree so well that only a large l shows it
    mag = [a for a, _ in rep.totals(f"{fam.drafters[1].name}<-mag")]
    assert (mag[-1] > mag[0]) == mag_lenience, mag
    # the per-prompt counts of the same contexts are what rate_difference takes (4 runs: a t interval)
    d = rate_difference(*rep.counts(lead, 1e3), *rep.counts(lead, 1.0))
    assert d.n == len(runs) and d.method == "t" and d.estimate > 0 and d.lo <= d.estimate <= d.hi


def test_replay_refuses_what_it_cannot_trust():
    fam = soft_family("llama")
    g = generate(fam, prompts()[0], "csd", k=K, lenience=3.0, max_new_tokens=24)
    with pytest.raises(ValueError, match="was not replayed"):
        replay_lenience(g, [1.0]).counts("base<-small", 3.0)
    with pytest.raises(ValueError, match="lenience must be"):
        replay_lenience(g, [0.5])
    sampled = generate(fam, prompts()[0], "csd", k=K, lenience=3.0, max_new_tokens=24, temperature=1.0, seed=1)
    assert all(e.px == [] and e.is_argmax == [] and e.qx == [] for e in sampled.events)
    with pytest.raises(ValueError, match="only greedy reviews replay"):
        replay_lenience(sampled, [1.0])
    e = next(e for e in g.events if e.tokens)
    old = dataclasses.replace(g, events=[dataclasses.replace(x, px=[], is_argmax=[], qx=[]) if x is e else x
                                         for x in g.events])
    with pytest.raises(ValueError, match="logged no per-token"):
        replay_lenience(old, [1.0])
    tampered = dataclasses.replace(g, events=[dataclasses.replace(x, n_accepted=x.n_accepted + 1) if x is e else x
                                              for x in g.events])
    with pytest.raises(ValueError, match="does not reproduce its run"):
        replay_lenience(tampered, [1.0])
