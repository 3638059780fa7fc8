"""Notebook 00's worked review: token counts stop at the output's end, and the picked round has a real rejection."""
import pytest
import torch

from csd_lib import random_family
from csd_lib.teach.worked import pick_review_round, round_probs, round_tokens


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
