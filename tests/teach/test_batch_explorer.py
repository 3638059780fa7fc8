"""csd_lib.teach.batch_explorer: the committed run's acceptance, plans with other draft lengths, the widget's
prediction on every move, and a small live batch run whose rows are batch-1 AR's tokens."""
import pytest

from csd_lib import config, load_family, load_task
from csd_lib.price.batch import LINEAR, batch_plans, predict_batches
from csd_lib.price.costs import load_costs
from csd_lib.teach.batch_explorer import (BATCHES, GPU_SATURATION, batch_explorer, committed_acceptance,
                                          live_batches, with_lengths)


@pytest.fixture(scope="module")
def priced():
    cm = load_costs("tiny-t5", path=config.RESULTS_DIR / "costs-tiny-t5-cpu.json")
    table, neural = committed_acceptance("tiny-t5")
    return cm, table, neural, batch_plans(cm, table, neural)


def test_committed_acceptance_has_every_pair_the_plans_price(priced):
    _, table, neural, _ = priced
    assert neural == ["base", "small"]
    assert all(0.0 <= table[p][0] <= 1.0 for p in (("target", "base"), ("base", "small"), ("target", "small")))
    with pytest.raises(ValueError, match="no committed benchmark run"):
        committed_acceptance("tiny-t5", task="no-such-task")


def test_with_lengths_replaces_only_what_is_given(priced):
    plans = priced[3]
    got = with_lengths(plans, sd_k=2, csd_n=1)
    assert got["sd"]["k"] == 2 and got["csd"]["n"] == 1 and got["csd"]["k"] == plans["csd"]["k"]
    assert plans["sd"]["k"] != 2 or plans["sd"] is not got["sd"]          # the given plans are left alone
    with pytest.raises(ValueError, match=">= 1"):
        with_lengths(plans, csd_k=0)


def test_moving_a_control_redraws_the_libraries_prediction(monkeypatch, priced):
    import csd_lib.teach.batch_explorer as ex
    cm, table, neural, plans = priced
    shown = []
    monkeypatch.setattr(ex, "show_in_output", lambda out, fig: shown.append(fig))
    box = batch_explorer(cm, table, neural, plans, batch=8)
    assert len(shown) == 1 and box.last == predict_batches(cm, table, neural, BATCHES, plans=plans)
    assert "B = 8" in box.words.value and 8 in [s.x0 for s in shown[0].layout.shapes]
    box.controls["sd_k"].value = 1
    box.controls["saturation"].value = GPU_SATURATION
    want = predict_batches(cm, table, neural, BATCHES, saturation=GPU_SATURATION, plans=with_lengths(plans, sd_k=1))
    assert len(shown) == 3 and box.last == want and box.last["saturation"] != LINEAR


def test_live_rows_are_batch_one_ar_and_ar_is_the_unit():
    fam = load_family("tiny-t5")
    prompts = [ex.prompt for ex in load_task(fam.task, "test", 3, seed=0)]
    res = live_batches(fam, prompts, batches=(1, 2), max_new_tokens=8)
    assert sorted(res["runs"]) == sorted((m, B) for m in ("ar", "sd", "csd") for B in (1, 2))
    for gens in res["runs"].values():
        assert [g.token_ids for g in gens] == [a.token_ids for a in res["ar1"]]  # the lossless law, per row
    assert all(r["speedup"] == 1.0 for r in res["rows"] if r["method"] == "ar")
    assert all(r["tokens"] == sum(len(a.token_ids) for a in res["ar1"]) and r["seconds"] > 0 for r in res["rows"])


def test_evidence_words_say_what_the_summary_holds():
    from csd_lib.teach.batch_explorer import evidence_words
    cell = lambda s: dict(speedup=s, speedup_ci95=[s - 0.1, s + 0.1])  # noqa: E731
    s = {"cells": {"sd": {"1": cell(2.0), "32": cell(1.2)}, "csd": {1: cell(1.5), 32: cell(1.6)}},
         "crossover": {"sd": {"estimate": 20.0, "interval": [10.0, float("inf")], "sizes": [1, 32]},
                       "csd": {"estimate": float("inf"), "interval": [12.0, float("inf")], "sizes": [1, 32]}}}
    text = evidence_words({"tiny-t5": s})
    assert "SD 2.00x [1.90, 2.10] at B = 1 falls to 1.20x at B = 32, crossover B ≈ 20.0 [10.0, > 32]" in text
    assert "CS Drafting 1.50x [1.40, 1.60] at B = 1 does not fall: it is 1.60x at B = 32, crossover > 32" in text
    assert evidence_words({}) == "No committed batch run in this checkout."
