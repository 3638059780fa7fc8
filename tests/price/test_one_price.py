"""One price: the tuner prices with pricing.price_plan; fits below MIN_R2 become measured constants."""
import logging

import numpy as np
import pytest

from csd_lib import random_family
from csd_lib.engine.cascade import encode_prompt
from csd_lib.price import predict as P
from csd_lib.price import tune as T
from csd_lib.price.costmodel import MIN_R2, CallFit, CostModel, fit_call, overhead_fit
from csd_lib.price.pricing import price_plan

PROMPTS = ["w5 w6 w7 w8 w5 w6", "w9 w10 w11 w9 w10 w11"]


def test_tuner_ranks_and_checks_with_price_plan(monkeypatch):
    f = random_family("llama", vocab_size=40, n_drafters=2, seed=2, drafter_is_target=True)
    cm = CostModel.constant({"target": 1.0, "base": 0.3, "small": 0.1, "mag": 0.01})
    seen = []

    def spy(plan, table, cost_model, tokens, start, **kw):
        seen.append((plan.k, cost_model, tokens, start))
        return price_plan(plan, table, cost_model, tokens, start, **kw)
    monkeypatch.setattr(T, "price_plan", spy)  # the ranking
    monkeypatch.setattr(P, "price_plan", spy)  # each measured configuration on its own acceptance
    cands = P.candidate_grid(2, k1=(1, 3), k2=(0, 5), k_inner=(1,), mag=f.mag.n, leniences=(2.0,))
    res = T.tune(f, PROMPTS, budget=2, candidates=cands, max_new_tokens=16, n_sim=300, progress=False, cost_model=cm)
    # every candidate priced once, then every measured configuration on its own acceptance
    assert len(seen) == len(cands) + res.n_measured
    assert all(c is cm for _, c, _, _ in seen)
    prompt = np.mean([len(encode_prompt(f, p)) for p in PROMPTS])
    assert all(s == pytest.approx(prompt) for *_, s in seen)  # Llama: the cache starts with the prompt
    for m in res.measured:
        assert m.predicted_own > 0 and m.predicted_wall > 0 and m.predicted_ar_wall > 0 and m.ar_wall > 0
    assert all(m.predicted is not None for m in res.measured[1:])


def test_a_poor_call_fit_becomes_the_median():
    rng = np.random.default_rng(0)
    n, L = np.meshgrid([1, 2, 4, 8, 16, 32], [10, 70, 130])
    t = 1e-3 * (1 + 0.3 * rng.standard_normal(n.size))      # noise, nothing n or L explains
    fit = fit_call(n.ravel(), L.ravel(), t)
    assert fit.coef == [pytest.approx(float(np.median(t))), 0.0, 0.0, 0.0, 0.0]
    assert "R² =" in fit.note and "median" in fit.note
    good = fit_call(n.ravel(), L.ravel(), 1e-3 + 1e-4 * n.ravel())
    assert good.note is None and good.r2 > MIN_R2


def test_a_poor_overhead_fit_becomes_one_constant_per_engine_call():
    counts = [[10, 0, 0], [20, 0, 0], [30, 0, 0], [40, 0, 1]]   # the time falls as calls rise: no linear model
    seconds = [0.04, 0.03, 0.02, 0.01]
    coef, r2, _, note = overhead_fit(counts, seconds)
    per = float(np.median([0.04 / 10, 0.03 / 20, 0.02 / 30, 0.01 / 41]))
    assert coef == [pytest.approx(per), 0.0, pytest.approx(per)] and "overhead fit" in note
    coef, r2, _, note = overhead_fit([[10, 5, 0], [20, 9, 0], [30, 20, 4], [40, 7, 1]],
                                     [0.010 + 0.001 * 5, 0.020 + 0.001 * 9, 0.030 + 0.02 + 0.004, 0.047 + 0.001])
    assert note is None and r2 > 0.99


def test_fit_notes_are_stored_and_old_files_warned(caplog):
    cm = CostModel("x", "cpu", {"target": CallFit.constant(1e-3)}, CallFit([1e-4, 0, 0, 0], -3.0, 1.0, "replaced"),
                   fit_notes={"overhead": "replaced"})
    assert CostModel.from_dict(cm.to_dict()).fit_notes == {"overhead": "replaced"}
    old = cm.to_dict()
    del old["fit_notes"]
    old["review"].pop("note")
    with caplog.at_level(logging.WARNING, logger="csd_lib"):
        back = CostModel.from_dict(old)
    assert "re-measure" in back.fit_notes["overhead"] and "re-measure" in caplog.text


def test_non_negative_overhead_fit_refits_the_other_terms():
    """Clipping a negative least-squares coefficient at 0 leaves the others as fitted beside it; the
    non-negative fit drops that term and refits the rest (here: per call alone)."""
    from csd_lib.price.costmodel import least_squares
    X = np.array([[10, 30, 0], [20, 50, 0], [30, 90, 0], [40, 100, 0], [50, 160, 0]], dtype=float)
    y = 1e-3 * X[:, 0] - 2e-5 * X[:, 1]                           # rows "cost" negative time
    assert np.linalg.lstsq(X, y, rcond=None)[0][1] < 0
    coef, r2, _ = least_squares(X, y, nonneg=True)
    alone = float(X[:, 0] @ y / (X[:, 0] @ X[:, 0]))               # least squares on calls alone
    assert coef[1] == 0.0 and coef[0] == pytest.approx(alone, rel=1e-9) and r2 > 0.9
