"""Batch bench summary: medians over batches, the measured crossover and its interval, the prediction beside."""
import math

import pytest

from csd_lib.price.costmodel import CallFit, CostModel
from csd_lib.report.batches import (batch_summary, batch_summary_json, crossing, format_batch_table,
                                    measured_crossover)


def line(method, B, b, row, tps, tokens=(5, 6, 7, 8, 9), **kw):
    toks = list(range(3, 3 + 10))
    return {"example": b * B + row, "method": method, "batch_size": B, "batch": b, "row": row, "rep": 0,
            "tokens_per_s": tps, "token_ids": toks, "ttft": 0.01, "commit_times": [0.01, 0.02, 0.02, 0.05],
            "mismatch": None if method == "ar" else False, "load1": 1.0,
            "stats": {"n_tokens": 10, "calls": {"target": 10}, "nodes": {}, "target": "target"}, **kw}


def synthetic(speedup_at: dict[int, float], n: int = 16, spread: float = 0.0) -> list[dict]:
    """AR at 100 tokens/s per batch, 'sd' at speedup_at[B] x AR, each batch +- ``spread``."""
    recs = []
    for B, s in speedup_at.items():
        for b in range(n // B):
            wobble = spread * (1 if b % 2 else -1)
            for row in range(B):
                recs.append(line("ar", B, b, row, 100.0))
                recs.append(line("sd", B, b, row, 100.0 * (s + wobble)))
    return recs


def test_crossing_interpolates_in_log2_of_the_batch_size():
    assert crossing([1, 2, 4, 8], [1.5, 1.2, 1.1, 0.9]) == pytest.approx(2 ** (2 + 0.1 / 0.2))
    assert crossing([1, 2], [0.9, 0.8]) == 1.0
    assert crossing([1, 2, 4], [1.3, 1.2, 1.01]) == math.inf
    assert crossing([2, 4], [1.0, 0.5]) == 2.0


def test_the_measured_crossover_of_synthetic_records():
    s = batch_summary(synthetic({1: 1.6, 2: 1.4, 4: 1.2, 8: 0.8, 16: 0.6}, n=32, spread=0.05))
    cells = s["cells"]["sd"]
    assert [cells[B]["speedup"] for B in (1, 2, 4, 8, 16)] == pytest.approx([1.6, 1.4, 1.2, 0.8, 0.6])
    assert [cells[B]["batches"] for B in (1, 2, 4, 8, 16)] == [32, 16, 8, 4, 2]
    c = s["crossover"]["sd"]
    assert c["estimate"] == pytest.approx(2 ** 2.5)          # halfway from 1.2 at B = 4 to 0.8 at B = 8
    lo, hi = c["interval"]
    assert 4 < lo <= c["estimate"] <= hi < 8
    assert s["cells"]["ar"][4]["speedup"] == pytest.approx(1.0) and s["cells"]["sd"][4]["mismatches"] == 0


def test_a_method_that_never_falls_to_one_is_beyond_the_sizes():
    s = batch_summary(synthetic({1: 2.0, 2: 1.8, 4: 1.5}))
    assert s["crossover"]["sd"]["estimate"] == math.inf
    assert "> 4" in format_batch_table(s)
    assert batch_summary_json(s)["crossover"]["sd"]["estimate"] is None


def test_noise_widens_the_crossover_interval():
    tight = measured_crossover({1: [1.5] * 8, 2: [1.1] * 4, 4: [0.9] * 2})
    loose = measured_crossover({1: [1.5] * 8, 2: [1.4, 0.8, 1.4, 0.8], 4: [0.9, 1.3]})
    assert tight["interval"][0] == pytest.approx(tight["interval"][1]) == pytest.approx(tight["estimate"])
    assert loose["interval"][1] - loose["interval"][0] > 1.0


def test_the_prediction_sits_beside_the_measure():
    """One target call per token at 10 ms and 1 ms a token: AR at batch B is predicted at B / (10 + B) ms."""
    cm = CostModel("toy", "cpu", {"target": CallFit([0.010, 0.001, 0.0, 0.0, 0.0])})
    recs = synthetic({1: 1.0, 2: 1.0, 4: 1.0}, n=4)
    s = batch_summary(recs, cm)
    for B in (1, 2, 4):
        c = s["cells"]["ar"][B]
        want = 10 * B / (0.010 + 0.001 * B) / 10          # tokens over one round's ten calls
        assert c["predicted_tokens_per_s"] == pytest.approx(want)
        assert c["tokens_per_s_rel_err"] == pytest.approx(want / 100.0 - 1)
        assert s["cells"]["sd"][B]["predicted_speedup"] == pytest.approx(1.0)
