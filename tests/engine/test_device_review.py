"""The review runs on the model's device: logits stay there; on CUDA every method still writes AR's tokens."""
import pytest
import torch

from csd_lib import generate, random_family

PROMPT = [3, 4, 5, 6, 3, 4, 5, 6]
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_logits_stay_on_the_models_device():
    lm = random_family("llama", vocab_size=32, n_drafters=1, seed=0).target
    lm.start(PROMPT)
    assert lm.logits(PROMPT + [7, 8], 2).device == lm.device


def _to(fam, device):
    for m in {id(lm.model): lm.model for lm in fam.models}.values():
        m.to(device)
    for lm in fam.models:
        lm.device = torch.device(device)
    return fam


@cuda
@pytest.mark.parametrize("arch", ["llama", "t5"])
def test_cuda_review_is_lossless_and_seeded(arch):
    fam = _to(random_family(arch, vocab_size=48, n_drafters=2, seed=2, dtype=torch.float32), "cuda")
    ar = generate(fam, PROMPT, "ar", max_new_tokens=24).token_ids
    for method in ("sd", "mag", "staged", "csd"):
        for mag_lenience in ((None,) if method != "csd" else (True, False)):
            kw = {} if mag_lenience is None else {"mag_lenience": mag_lenience}
            assert generate(fam, PROMPT, method, max_new_tokens=24, **kw).token_ids == ar, (method, mag_lenience)
    # seeded sampling draws on the CPU from the few values it needs: a seed repeats itself
    a = generate(fam, PROMPT, "csd", temperature=1.0, seed=3, max_new_tokens=24)
    b = generate(fam, PROMPT, "csd", temperature=1.0, seed=3, max_new_tokens=24)
    assert a.token_ids == b.token_ids


@pytest.fixture
def default_device_no_model_uses():
    """torch's default device set to 'meta' while the models sit on the CPU: a tensor the engine
    makes without naming its device lands on 'meta' and fails at its first use, as a CPU tensor fed
    to a CUDA model would (on this CPU-only machine every device is the CPU)."""
    yield lambda: torch.set_default_device("meta")
    torch.set_default_device(None)


@pytest.mark.parametrize("name", ["tiny-t5", "tiny-llama"])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_the_engine_makes_every_tensor_on_its_device(name, temperature, default_device_no_model_uses):
    from csd_lib import load_family
    fam = load_family(name)
    methods = ["ar", "sd", "mag", "csd"] + (["staged"] if len(fam.drafters) >= 2 else [])
    prompt = "Question: Tom has 3 pens and buys 4 more. How many pens? Answer:"
    want = {m: generate(fam, prompt, m, max_new_tokens=20, temperature=temperature, seed=5).token_ids
            for m in methods}
    default_device_no_model_uses()
    got = {m: generate(fam, prompt, m, max_new_tokens=20, temperature=temperature, seed=5).token_ids
           for m in methods}
    assert got == want


def _inputs_on_device(module):
    """A forward pre-hook on ``module`` that raises when a tensor argument sits off its weights' device."""
    dev = next(module.parameters()).device

    def check(_module, args, kwargs):
        for t in [*args, *kwargs.values()]:
            if isinstance(t, torch.Tensor) and t.device != dev:
                raise RuntimeError(f"{type(_module).__name__} got an input on {t.device}, its weights are on {dev}")
    return module.register_forward_pre_hook(check, with_kwargs=True)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_the_tree_methods_make_every_tensor_on_its_device(temperature, default_device_no_model_uses):
    """tree-sd, csd-tree and medusa (tiny-llama's heads) under a default device no model uses: every forward's
    inputs sit on its model's device, and each method writes what it writes on the models' own default."""
    from csd_lib import load_family
    fam = load_family("tiny-llama")
    assert fam.medusa is not None
    methods = ["tree-sd", "csd-tree", "medusa"]
    prompt = "Question: Tom has 3 pens and buys 4 more. How many pens? Answer:"
    run = lambda m: generate(fam, prompt, m, max_new_tokens=12, temperature=temperature, seed=5)  # noqa: E731
    want = {m: run(m).token_ids for m in methods}
    hooks = [_inputs_on_device(m) for m in ({id(lm.model): lm.model for lm in fam.models} | {0: fam.medusa}).values()]
    default_device_no_model_uses()
    try:
        got = {m: run(m) for m in methods}
    finally:
        for h in hooks:
            h.remove()
    assert {m: g.token_ids for m, g in got.items()} == want
    assert all(g.stats.calls["target"] >= 1 and len(g.token_ids) >= 1 for g in got.values())
