"""tiny-t5-paper: drafters in the paper's Fig. 2 regime.

Bands (synth-gsm8k, greedy, lenience 1, unconditional P(first i accepted) from every start):
target <- base at position 1 in [0.70, 0.80] (FLAN-T5-XXL <- base in the paper's Fig. 2),
small below base, and position 30 at most 0.1 for both drafters.
"""
import json
import math

import pytest
import torch

from csd_lib.measure import curves
from csd_lib import config, generate, load_family
from csd_lib.families import tasks

FAMILY, TARGET = "tiny-t5-paper", "tiny-t5-target"
BASE, SMALL = "tiny-t5-paper-base", "tiny-t5-paper-small"
CARD = config.MODELS_DIR / f"{FAMILY}-card.json"
BASE_POS1 = (0.70, 0.80)
SMALL_POS1_MIN = 0.50
POS30_MAX = 0.10
# The quick re-measure uses the first N_QUICK of the card's 20 test prompts. Its position-1 value
# pools ~N_QUICK * 80 starts, but the starts of one prompt are correlated, so the tolerance is
# three standard errors of a mean over prompts: the per-prompt position-1 rate has sd 0.05 (base)
# and 0.04 (small) over the card's prompts; with 0.06, 3 * 0.06 / sqrt(5) = 0.08 (four disjoint
# groups of 5 prompts gave 0.74-0.77 for base, 0.56-0.59 for small).
N_QUICK = 5
TOL = 3 * 0.06 / math.sqrt(N_QUICK)


def _curves(acc: dict) -> tuple[list[float], list[float]]:
    return acc[f"{BASE}->{TARGET}"]["unconditional"], acc[f"{SMALL}->{TARGET}"]["unconditional"]


def _check_bands(base, small, tol=0.0):
    assert BASE_POS1[0] - tol <= base[0] <= BASE_POS1[1] + tol, base[0]
    assert SMALL_POS1_MIN - tol <= small[0] < base[0], (small[0], base[0])
    assert base[29] <= POS30_MAX + tol and small[29] <= POS30_MAX + tol, (base[29], small[29])
    # the curves fall: every position at most the one before (P(first i) is monotone by construction)
    assert all(b <= a + 1e-12 for a, b in zip(base, base[1:]))


def test_committed_measurement_is_in_the_papers_regime():
    res = json.loads(CARD.read_text())
    base, small = _curves(res["acceptance"]["synth-gsm8k"])
    assert len(base) == len(small) == 30
    _check_bands(base, small)
    # the drafters are the paper's ordering of sizes too: small is the smaller and faster one
    m = res["models"]
    assert m[SMALL]["params"] < m[BASE]["params"] < m[TARGET]["params"]


def test_manifest_reuses_the_shipped_target_and_tokenizer():
    spec = json.loads((config.MODELS_DIR / f"{FAMILY}.json").read_text())
    assert spec["target"] == TARGET and spec["drafters"] == [BASE, SMALL]
    tok_target = (config.MODELS_DIR / TARGET / "tokenizer.json").read_text()
    for name in (BASE, SMALL):
        assert (config.MODELS_DIR / name / "tokenizer.json").read_text() == tok_target


def test_prepare_reuses_a_shipped_tokenizer(tmp_path, monkeypatch):
    from csd_lib.zoo import train as T
    shipped = config.MODELS_DIR / TARGET
    tok, data = T.prepare(tmp_path / "a", n_per_task=10, tokenizer_dir=shipped)
    ref = T.load_tokenizer(shipped)
    assert tok.get_vocab() == ref.get_vocab()
    ex = tasks.corpus("train", 10)[0]
    assert data["train"]["prompt"][0] == ref(ex.prompt, add_special_tokens=False)["input_ids"]
    # a runs folder prepared with another tokenizer is refused, not silently mixed
    monkeypatch.setattr(config, "data_dir", lambda: None)
    T.prepare(tmp_path / "b", n_per_task=10, vocab_size=300)
    with pytest.raises(ValueError, match="differs"):
        T.prepare(tmp_path / "b", n_per_task=10, tokenizer_dir=shipped)


def test_snapshots_are_saved_every_n_steps(tmp_path):
    from csd_lib.zoo import train as T
    _, data = T.prepare(tmp_path / "runs", n_per_task=10, tokenizer_dir=config.MODELS_DIR / TARGET)
    tiny = dict(arch="t5", d_model=16, num_layers=1, num_heads=2, d_ff=32)
    T.train_model("toy", data, tmp_path / "toy", steps=4, batch=2, lr=1e-3, device="cpu", progress=False,
                  overrides=tiny, snapshot_every=2)
    assert sorted(p.name for p in (tmp_path / "toy").glob("snap-*.pt")) == ["snap-000002.pt", "snap-000004.pt"]


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_quick_remeasure_lands_in_the_bands(family):
    prompts = [e.prompt for e in tasks.load_task("synth-gsm8k", "test", N_QUICK)]
    tok = family.tokenizer
    target = family.target.model
    conts = curves.greedy_continuations(target, tok, prompts, max_new_tokens=128)
    base, small = (curves.acceptance_curve(d.model, target, tok, prompts, max_pos=30,
                                               continuations=conts)["unconditional"]
                   for d in family.drafters)
    _check_bands(base, small, tol=TOL)


@torch.no_grad()
def test_csd_equals_ar_greedy(family):
    for ex in tasks.load_task("synth-gsm8k", "test", 2):
        ar = generate(family, ex.prompt, "ar", max_new_tokens=48)
        for method in ("csd", "sd"):
            assert generate(family, ex.prompt, method, max_new_tokens=48).token_ids == ar.token_ids, method
