"""Per-position acceptance: teacher-forced shortcut against a literal greedy reference."""
import math

import numpy as np
import pytest
import torch

from csd_lib.measure import curves as A
from csd_lib.zoo.recipes import make_model

TINY = dict(d_model=32, num_layers=1, num_heads=2, d_ff=64)


class ToyTok:
    """Maps text to ids by characters (enough for random tiny models)."""
    eos_token_id = 1

    def __call__(self, text, add_special_tokens=False, return_tensors=None):
        ids = [4 + (ord(c) % 200) for c in text]
        class R:  # noqa: D106
            input_ids = torch.tensor([ids]) if return_tensors == "pt" else ids
        return R()


@pytest.fixture(scope="module")
def tiny_models():
    torch.set_num_threads(1)
    out = {}
    for arch in ("t5", "llama"):
        out[arch] = [make_model(f"toy-{arch}-{s}", seed=s, arch=arch, **TINY).eval() for s in (0, 1)]
    return out


PROMPTS = ["abc def", "hello world!", "x"]


def slow_curve(drafter, conts, max_pos):
    """Definition: from each start, run the drafter greedily and count agreeing tokens."""
    runs = []
    for c in conts:
        y = c.output_ids
        r = []
        for s in range(len(y)):
            n = 0
            for j in range(len(y) - s):
                prefix = y[:s + j]
                if drafter.config.is_encoder_decoder:
                    dec = torch.tensor([[drafter.config.decoder_start_token_id] + prefix])
                    logits = drafter(input_ids=torch.tensor([c.prompt_ids]), decoder_input_ids=dec).logits
                else:
                    logits = drafter(input_ids=torch.tensor([c.prompt_ids + prefix])).logits
                if int(logits[0, -1].argmax()) != y[s + j]:
                    break
                n += 1
            r.append(n)
        runs.append(np.array(r))
    unc = []
    for i in range(1, max_pos + 1):
        ok = np.concatenate([r[:max(len(r) - i + 1, 0)] for r in runs])
        unc.append(float((ok >= i).mean()) if len(ok) else float("nan"))
    return unc


@pytest.mark.parametrize("arch", ["t5", "llama"])
def test_self_acceptance_is_one(tiny_models, arch):
    target = tiny_models[arch][0]
    c = A.acceptance_curve(target, target, ToyTok(), PROMPTS, max_new_tokens=12, max_pos=5)
    assert all(u == 1.0 for u in c["unconditional"])
    assert all(u == 1.0 for u in c["conditional"])
    assert c["counts"][0] == c["n_tokens"] and c["counts"] == sorted(c["counts"], reverse=True)
    assert c["alpha"] == pytest.approx(1.0)


@pytest.mark.parametrize("arch", ["t5", "llama"])
def test_matches_slow_reference(tiny_models, arch):
    target, drafter = tiny_models[arch]
    conts = A.greedy_continuations(target, ToyTok(), PROMPTS, max_new_tokens=10)
    fast = A.acceptance_curve(drafter, target, ToyTok(), PROMPTS, max_pos=6, continuations=conts)
    slow = slow_curve(drafter, conts, 6)
    np.testing.assert_allclose(fast["unconditional"], slow, equal_nan=True)


@pytest.mark.parametrize("arch", ["t5", "llama"])
def test_random_drafter_low_and_matches_slow(tiny_models, arch):
    """Against a diverse reviewer output (random ids) a random drafter is rarely accepted."""
    drafter = tiny_models[arch][1]
    g = torch.Generator().manual_seed(0)
    conts = [A.Continuation([5, 6, 7], torch.randint(4, 2048, (12,), generator=g).tolist())
             for _ in range(2)]
    fast = A.acceptance_curve(drafter, None, None, [], max_pos=4, continuations=conts)
    np.testing.assert_allclose(fast["unconditional"], slow_curve(drafter, conts, 4), equal_nan=True)
    assert fast["unconditional"][0] < 0.2


def test_curve_from_matches_by_hand():
    m = np.array([1, 1, 0, 1], dtype=bool)  # run lengths from each start: 2, 1, 0, 1
    c = A.curve_from_matches([m], max_pos=3)
    assert c["counts"] == [4, 3, 2]
    assert c["unconditional"] == [3 / 4, 1 / 3, 0 / 2]
    # conditional at 2: starts (eligible for 2: s=0,1,2) with >=1 accepted: s=0,1 ; with >=2: s=0
    assert c["conditional"][:2] == [3 / 4, 1 / 2]
    assert c["conditional"][2] == 0.0


def test_fit_geometric():
    assert A.fit_geometric([0.8 ** i for i in range(1, 11)]) == pytest.approx(0.8)
    assert A.fit_geometric([0.5, 0.0, float("nan")]) == pytest.approx(0.5)
    assert math.isnan(A.fit_geometric([0.0, 0.0]))


def test_family_curves_keys(tiny_models):
    t, d = tiny_models["llama"]
    curves = A.family_curves([t, d, d], ToyTok(), PROMPTS[:1], names=["T", "B", "S"],
                             max_new_tokens=6, max_pos=3)
    assert set(curves) == {"B->T", "S->T", "S->B"}
    assert curves["S->B"]["unconditional"][0] == 1.0  # identical models
