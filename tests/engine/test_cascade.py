"""csd_lib.engine.cascade: Algorithm 1 as a tree of drafters, prompt encoding, and one generation from a plan."""
from dataclasses import replace

import numpy as np
import pytest

from csd_lib.engine.cascade import Level, MaGLevel, build_cascade, encode_prompt, generate, run_plan
from csd_lib.engine.generation import TARGET_BONUS, TARGET_CORRECTION
from csd_lib.engine.mag import MaG
from csd_lib.engine.plan import Plan, make_plan
from csd_lib.engine.prompts import prompt_ids
from csd_lib.families.toy import random_family

K3 = [[2, 3, 4], [0, 1, 5], [0, 0, 6]]
PROMPTS = ([5, 6, 7, 5, 6], [9, 4, 9, 4, 9, 4])


@pytest.fixture(scope="module")
def fam():
    return random_family("t5", vocab_size=32, n_drafters=2, seed=7, eos=None)


@pytest.fixture(scope="module")
def llama():
    return random_family("llama", vocab_size=32, n_drafters=1, seed=8, eos=None)


def test_build_cascade_reads_k_row_by_row(fam):
    base, small = fam.drafters
    top = build_cascade(fam.target, [base, small, fam.mag], K3, lenience=3.0)
    assert top.top and top.lm is fam.target and top.budgets == [2, 3, 4] and top.thresholds == [2, 5, 9]
    assert top.lenience == 1.0  # the target's review is always strict
    lb, ls, lm = top.subs
    assert isinstance(lb, Level) and lb.lm is base and lb.budgets == [1, 5] and lb.lenience == 3.0
    assert isinstance(ls, Level) and ls.lm is small and ls.budgets == [6] and ls.lenience == 3.0
    assert isinstance(lm, MaGLevel) and lm.mag is fam.mag
    assert lb.subs == [ls, lm] and ls.subs == [lm]  # each level drafts with everything below it


def test_build_cascade_without_drafters_is_autoregressive(fam):
    top = build_cascade(fam.target, [], None)
    assert top.top and top.subs == [] and top.budgets == []


def test_build_cascade_rejects_mag_above_a_model_and_a_wrong_bigram(fam):
    base, small = fam.drafters
    with pytest.raises(ValueError, match="MaG is the bottom of the cascade"):
        build_cascade(fam.target, [base, fam.mag, small], K3)
    with pytest.raises(ValueError, match="bigram table has 31 entries but the models have 32 logits"):
        build_cascade(fam.target, [small, MaG(np.zeros(31, dtype=np.int32))], [[1, 2], [0, 3]])
    with pytest.raises(ValueError):
        build_cascade(fam.target, [base, small], K3)  # K must be 2x2 for two drafters


def test_encode_prompt_text_and_ids(fam):
    assert encode_prompt(fam, "w5 w6 w7") == prompt_ids(fam.tokenizer, "w5 w6 w7") == [5, 6, 7, 1]
    assert encode_prompt(fam, [3, 4]) == [3, 4]
    assert encode_prompt(fam, np.array([3, 4])) == [3, 4]
    with pytest.raises(ValueError, match="out of range"):
        encode_prompt(fam, [32])
    with pytest.raises(ValueError, match="the prompt is empty"):
        encode_prompt(fam, "   ")
    with pytest.raises(ValueError, match="is a name, not a loaded family"):
        encode_prompt("tiny-t5", "w5")


@pytest.mark.parametrize("method", ["sd", "mag", "staged", "csd"])
def test_greedy_methods_return_the_targets_tokens(fam, method):
    for p in PROMPTS:
        ar = run_plan(fam, make_plan(fam, "ar", max_new_tokens=24), p)
        g = run_plan(fam, make_plan(fam, method, max_new_tokens=24), p)
        assert g.token_ids == ar.token_ids and len(g.token_ids) == 24  # no EOS in this family: the full budget
        assert g.plan.method == method


def test_each_target_review_commits_its_accepted_draft_plus_one(fam):
    g = generate(fam, PROMPTS[0], "csd", k=K3, lenience=2.0, max_new_tokens=30)
    top = [e for e in g.events if e.depth == 0]
    assert g.stats.calls["target"] == len(top)
    assert sum(e.n_accepted + 1 for e in top) == g.stats.n_tokens == 30
    assert [e.start for e in top] == list(np.cumsum([0] + [e.n_accepted + 1 for e in top[:-1]]))
    for e in top:  # the target reviews what base, small and MaG drafted, strictly
        assert set(e.proposers) <= {"base", "small", "mag"} and e.lenience == 1.0
    assert all(e.lenience == 2.0 for e in g.events if e.depth > 0)
    own = [p for p in g.provenance if p in (TARGET_CORRECTION, TARGET_BONUS)]
    assert len(own) == len(top)
    assert g.stats.calls["mag"] > 0 and g.stats.params["mag"] == 0


def test_ar_makes_one_target_call_per_token(fam):
    g = generate(fam, PROMPTS[1], "ar", max_new_tokens=9)
    assert g.stats.calls == {"target": 9} and g.events and all(e.tokens == [] for e in g.events)


def test_sampling_is_reproducible_with_a_seed(llama):
    plan = make_plan(llama, "csd", temperature=1.0, seed=11, max_new_tokens=12)
    a, b = run_plan(llama, plan, PROMPTS[0]), run_plan(llama, plan, PROMPTS[0])
    assert a.token_ids == b.token_ids and a.plan.seed == 11
    others = {tuple(run_plan(llama, replace(plan, seed=s), PROMPTS[0]).token_ids) for s in (12, 13)}
    assert others != {tuple(a.token_ids)}  # another seed draws other tokens


def test_run_plan_refuses_a_prompt_past_the_model_limit(llama):
    limit = llama.target.max_length
    assert limit == 512
    plan = make_plan(llama, "sd", max_new_tokens=20)
    with pytest.raises(ValueError, match=rf"the prompt \(500 tokens\) plus max_new_tokens \(20\) exceeds .* {limit}"):
        run_plan(llama, plan, [4] * 500)
    assert len(run_plan(llama, replace(plan, max_new_tokens=4), [4] * 500).token_ids) == 4


def test_one_model_on_two_levels_is_refused(fam):
    plan = Plan("staged", ("small", "small"), [[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="model 'small' appears twice in the cascade"):
        run_plan(fam, plan, PROMPTS[0])


def test_a_greedy_review_reads_the_logits_once(fam, monkeypatch):
    """One pass over each review's logits (one host transfer on a GPU): the event log reuses the numbers
    the review decided with, and they are the reviewer's own."""
    import math
    import sys

    import torch

    from csd_lib.engine.review import greedy_logps
    calls = []
    counted = lambda logits, tokens: calls.append(len(tokens)) or greedy_logps(logits, tokens)  # noqa: E731
    for name, mod in list(sys.modules.items()):  # wherever the engine holds the function, by any import
        if name.startswith("csd_lib.engine") and getattr(mod, "greedy_logps", None) is greedy_logps:
            monkeypatch.setattr(mod, "greedy_logps", counted)
    g = generate(fam, PROMPTS[0], "csd", k=K3, lenience=2.0, max_new_tokens=30)
    assert len(calls) == len(g.events) and any(calls)  # one per review, drafted tokens or not
    lm = fam.target
    for e in (e for e in g.events if e.tokens and e.depth == 0):  # the target's reviews start at committed output
        seq = lm.start(encode_prompt(fam, PROMPTS[0])) + g.token_ids[:e.start] + e.tokens  # what it scored
        with torch.no_grad():
            lp = torch.log_softmax(lm.logits(seq, len(e.tokens)).double(), -1)[:-1]  # (m, V)
        lm.release()
        assert e.is_argmax == [int(lp[i].argmax()) == t for i, t in enumerate(e.tokens)]
        assert e.px == pytest.approx([math.exp(float(lp[i, t])) for i, t in enumerate(e.tokens)], rel=1e-4)
