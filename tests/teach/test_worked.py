"""Notebook 00's worked review: token counts stop at the output's end, and the picked round has a real rejection."""
import pytest
import torch

from csd_lib import random_family
from csd_lib.teach.worked import find_review_round, pick_review_round, round_probs, round_tokens


def test_round_tokens_skip_what_was_cut_after_eos():
    # rounds tile 0..12; the output was cut to 10 tokens (EOS at 9): the last round kept 3 drafted + 1 target
    rounds = [(0, [5, 6, 7, 8], 2), (3, [1, 2, 3, 4], 4), (8, [9, 9, 9, 9], 3)]
    assert round_tokens(rounds, 12) == (9, 3)
    assert round_tokens(rounds, 10) == (8, 2)   # positions 10, 11 (two drafted tokens, the target's) are cut
    with pytest.raises(ValueError, match="tile"):
        round_tokens([(0, [1, 2], 1), (5, [1], 0)], 7)
    with pytest.raises(ValueError, match="starts outside"):
        round_tokens([(9, [1], 0)], 4)


@pytest.fixture(scope="module")
def fam():
    return random_family("llama", vocab_size=16, n_drafters=1, seed=3, eos=1)


@pytest.fixture(scope="module")
def trained():
    """The same kind of family, flagged as trained: find_review_round searches further prompts only there."""
    f = random_family("llama", vocab_size=16, n_drafters=1, seed=3, eos=1)
    for lm in f.models:
        lm.random_weights = False
    assert not f.random_weights
    return f


def test_round_probs_are_the_models_distributions(fam):
    prompt, prefix, draft = [3, 4, 5], [6, 7], [8, 9, 10]
    p, q = round_probs(fam, fam.drafters[0], prompt, prefix, draft)
    assert p.shape == (4, 16) and q.shape == (3, 16)
    with torch.no_grad():
        want_p = torch.softmax(fam.target.model(input_ids=torch.tensor([prompt + prefix + draft])).logits[0, -4:].float(), -1)
        want_q = torch.softmax(fam.drafters[0].model(input_ids=torch.tensor([prompt + prefix + draft[:-1]])).logits[0, -3:].float(), -1)
    assert torch.allclose(p, want_p, atol=1e-6) and torch.allclose(q, want_q, atol=1e-6)


def test_pick_prefers_a_rejection_before_eos(fam):
    out = [5, 6, 7, 8, 9, 1]                                  # EOS (1) at position 5
    rounds = [(0, [5, 6, 7], 3), (4, [9, 2, 2], 1)]           # round 2 rejects at position 5, the EOS position
    w = pick_review_round(fam, fam.drafters[0], [3, 4], out, rounds)
    assert w.index == 1 and w.rejects_before_eos and w.n_kept == 1 and w.p.shape == (4, 16)
    accepted_only = pick_review_round(fam, fam.drafters[0], [3, 4], [5, 6, 7, 8], [(0, [5, 6, 7], 3)])
    assert accepted_only.index == 0 and not accepted_only.rejects_before_eos and "no drafted token" in accepted_only.why


def test_pick_skips_rejections_past_the_end(fam):
    # the output was cut at EOS (position 2): round 2's rejection at position 4 lies past the end
    out, rounds = [5, 1, 1], [(0, [5, 2], 1)]
    w = pick_review_round(fam, fam.drafters[0], [3, 4], out, rounds)
    assert w.rejects_before_eos                                # position 1 <= EOS at 1
    cut = pick_review_round(fam, fam.drafters[0], [3, 4], [5, 1], [(0, [5, 1, 7, 7], 3)])
    assert not cut.rejects_before_eos                          # rejected at 3, after EOS at 1


def _device_checked(model):
    """Make ``model`` raise when a forward gets a tensor on another device than its weights."""
    dev = next(model.parameters()).device

    def check(_module, args, kwargs):
        for t in list(args) + list(kwargs.values()):
            if isinstance(t, torch.Tensor) and t.device != dev:
                raise RuntimeError(f"input on {t.device}, model on {dev}")
    return model.register_forward_pre_hook(check, with_kwargs=True)


def _notebook_functions(name: str) -> dict:
    """The functions a notebook's cells define (not the setup cell), executed into a namespace."""
    import ast
    import json
    from pathlib import Path
    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / name).read_text(encoding="utf-8"))
    ns = {"torch": torch}
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "_setup()" not in "".join(cell["source"]):
            defs = [n for n in ast.parse("".join(cell["source"])).body if isinstance(n, ast.FunctionDef)]
            exec(compile(ast.Module(defs, []), name, "exec"), ns)
    return ns


@pytest.mark.parametrize("arch", ["llama", "t5"])
def test_notebook_00_and_the_pick_make_tensors_on_the_models_device(arch):
    """With torch's default device one that no model uses, every forward input must still sit on its model's
    device: a tensor made without ``device=`` fails here as it would beside a model on a GPU."""
    fam = random_family(arch, vocab_size=32, n_drafters=1, seed=1, eos=1, dtype=torch.float32)
    sd_by_hand = _notebook_functions("00_start_here.ipynb")["sd_by_hand"]
    hooks = [_device_checked(lm.model) for lm in fam.models]
    torch.set_default_device("meta")
    try:
        out, rounds = sd_by_hand(fam.target.model, fam.drafters[0].model, [3, 4, 5, 6], 4, 12, 1)
        w = pick_review_round(fam, fam.drafters[0], [3, 4, 5, 6], out, rounds)
    finally:
        torch.set_default_device("cpu")
        for h in hooks:
            h.remove()
    assert w.p.device == fam.target.device and len(out) >= 1


def test_find_looks_past_a_prompt_with_nothing_rejected(trained):
    fam = trained
    def run(ids):  # a stand-in for sd_by_hand: the first prompt accepts everything, the second rejects
        return ([5, 6, 7, 8], [(0, [5, 6, 7], 3)]) if ids == [3, 4] else ([5, 6, 7, 8, 9, 1], [(0, [5, 6, 7, 2], 3), (4, [9, 2, 2], 1)])
    w = find_review_round(fam, fam.drafters[0], [[3, 4], [4, 3]], run)
    assert w.prompt == 1 and w.rejects_before_eos and w.prompt_ids == (4, 3) and w.out == (5, 6, 7, 8, 9, 1)
    only = find_review_round(fam, fam.drafters[0], [[3, 4]], run)
    assert only.prompt == 0 and not only.worked
    with pytest.raises(ValueError, match="at least one"):
        find_review_round(fam, fam.drafters[0], [], run)


def test_find_reuses_the_first_run_and_stops_on_random_weights(fam, trained):
    calls = []

    def run(ids):
        calls.append(ids)
        return [5, 6, 7, 8, 9, 1], [(0, [5, 6, 7, 2], 3), (4, [9, 2, 2], 1)]
    first = ([5, 6, 7, 8], [(0, [5, 6, 7], 3)])                # nothing rejected: the next prompt is run
    w = find_review_round(trained, trained.drafters[0], [[3, 4], [4, 3]], run, first_run=first)
    assert calls == [[4, 3]] and w.prompt == 1
    calls.clear()
    assert fam.random_weights
    w = find_review_round(fam, fam.drafters[0], [[3, 4], [4, 3]], run, first_run=first)
    assert calls == [] and w.prompt == 0                       # random weights: the first prompt only


def test_without_a_nontrivial_rejection_the_pick_takes_the_closest_and_says_so(fam, monkeypatch):
    import csd_lib.teach.worked as worked
    sure = {0: 1e-6, 4: 2e-4}                 # the rejected token's p(x) in the round starting there: both ~0

    def probs(family, drafter, prompt_ids, prefix, draft):
        p, q = torch.full((len(draft) + 1, 16), 1e-7), torch.full((len(draft), 16), 1e-7)
        p[:, 0] = 1.0
        p[:, draft] = sure[len(prefix)]       # every drafted token: the target's p(x) ~0, the drafter's q(x) 0.5
        q[:, draft] = 0.5
        return p, q
    monkeypatch.setattr(worked, "round_probs", probs)
    out = [5, 6, 7, 8, 9, 2, 3, 4]
    w = pick_review_round(fam, fam.drafters[0], [3, 4], out, [(0, [5, 6, 7, 9], 3), (4, [9, 2, 2, 9], 1)])
    assert w.rejects_before_eos and not w.worked and w.index == 1   # the larger margin, not the first
    assert abs(w.margin - 2e-4) < 1e-9 and "closest" in w.why and "nearly certain" in w.why


def test_greedy_keeps_marks_tokens_after_the_rejection_not_reviewed():
    from csd_lib.teach.worked import greedy_keeps
    assert greedy_keeps(2, 4) == ["yes", "yes", "no", "not reviewed"]
    assert greedy_keeps(4, 4) == ["yes"] * 4 and greedy_keeps(0, 1) == ["no"]
    with pytest.raises(ValueError, match="n_kept"):
        greedy_keeps(5, 4)


def test_probability_tolerance_follows_the_coarsest_dtype():
    from csd_lib.teach.worked import probs_tolerance
    assert probs_tolerance(torch.float32) == probs_tolerance(torch.float64, torch.float32) == 1e-4
    assert probs_tolerance(torch.float32, torch.bfloat16) > probs_tolerance(torch.float16) > 1e-3  # bf16/fp16 differ by ~1e-3
    with pytest.raises(ValueError, match="dtype"):
        probs_tolerance()
