"""csd_lib.price.predict: EWIF predictions from a run's own records, on a constructed SD run whose
acceptance is 0.5 at every position, so that Cor 4.2 gives the answer by hand."""
from types import SimpleNamespace

import pytest

from csd_lib.engine.plan import Plan
from csd_lib.measure.records import BenchRecord
from csd_lib.price.costmodel import CostModel
from csd_lib.price.ewif import ewif_sd
from csd_lib.price.predict import (predict_from_runs, predict_metrics_from_runs, prediction_limits, run_model_size_costs,
                                   run_shape, run_table)

PARAMS = {"target": 1000, "small": 100}  # the drafter costs c = 0.1 of the target by size


def sd_record(example, tokens=400, cache_start=1, k=3):
    # per target review SD drafts k tokens (k drafter calls); the target accepts each with probability 0.5
    stats = dict(n_tokens=tokens, wall_time=1.0, calls={"target": 100, "small": 300}, params=PARAMS,
                 forward_time={"target": 100 * 0.01, "small": 300 * 0.001},  # 10 ms and 1 ms per call
                 acceptance={"target<-small": {"reached": [200, 100, 50], "accepted": [100, 50, 25]}})
    return BenchRecord(example, "sd", family="tiny-t5", stats=stats, plan=Plan.sd(k), cache_start=cache_start)


RUN = [sd_record(0), sd_record(1)]
C = 0.1


def test_run_table_pools_acceptance_and_fills_every_pair():
    table = run_table(RUN, RUN[0].plan)
    assert table == {("target", "small"): pytest.approx([0.5, 0.5, 0.5, 0.5])}  # 3 positions + the pooled rate
    csd = Plan.csd(["small", "mag"], [[2, 3], [0, 4]])
    filled = run_table(RUN, csd)  # MaG never drafted in this run: its pairs are filled, not missing
    assert set(filled) == {("target", "small"), ("target", "mag"), ("small", "mag")}


def test_model_size_costs_from_the_records():
    assert run_model_size_costs(RUN) == {"target": 1.0, "small": 0.1, "mag": 0.0}


def test_run_shape_means_and_missing_start():
    cm = SimpleNamespace(cache_length=64.0)
    assert run_shape([sd_record(0, tokens=10, cache_start=1), sd_record(1, tokens=20, cache_start=None)], cm) == \
        (15.0, (1 + 64) / 2)


def test_predicted_swi_is_cor_4_2():
    p = predict_metrics_from_runs(RUN)
    by_hand = ewif_sd(0.5, 3, C)  # (1 - 0.5**4) / ((1 - 0.5) (3 c + 1)) = 0.9375 / 0.65
    assert by_hand == pytest.approx(0.9375 / 0.65)
    assert p["predicted_swi_ms"] == pytest.approx(by_hand, rel=0.03)
    # without a cost model the walltime prediction prices calls by measured seconds: 1 ms / 10 ms = c again
    assert p["latency_costs"] == pytest.approx({"target": 1.0, "small": 0.1, "mag": 0.0})
    assert p["predicted_walltime"] == pytest.approx(by_hand, rel=0.03) and p["cost_share"] == {}


def test_predicted_walltime_with_a_constant_cost_model():
    cm = CostModel.constant({"target": 0.01, "small": 0.001})
    pw = predict_from_runs(RUN, cm)
    # 400-token generations: only the last step's wasted draft separates them from the unbounded Cor 4.2
    assert pw["speedup"] == pytest.approx(ewif_sd(0.5, 3, C), rel=0.03)
    # per review: 1 target call and 3 drafter calls of a tenth of its cost
    assert pw["cost_share"] == pytest.approx({"target": 1 / 1.3, "small": 0.3 / 1.3}, abs=0.01)
    assert predict_metrics_from_runs(RUN, cm)["predicted_walltime"] == pw["speedup"]
    # another K priced on the same acceptance
    assert predict_from_runs(RUN, cm, plan=Plan.sd(1))["speedup"] == pytest.approx(ewif_sd(0.5, 1, C), rel=0.03)


def test_ar_predicts_no_speedup():
    ar = [BenchRecord(0, "ar", stats=dict(n_tokens=10, wall_time=1.0, calls={"target": 10}, params={"target": 1},
                                          forward_time={"target": 0.5}, acceptance={}), plan=Plan.ar())]
    p = predict_metrics_from_runs(ar)
    assert p["predicted_swi_ms"] == 1.0 and p["predicted_walltime"] == 1.0


def test_prediction_limits_finds_the_best_draft_length():
    cm = CostModel.constant({"target": 0.01, "small": 0.001})
    out = prediction_limits(RUN, cm, sd_ks=(1, 2, 6), n_sim=2000)
    # Cor 4.2 at alpha 0.5, c 0.1: k=1 1.364, k=2 1.458, k=6 1.240; the run's own k=3: 1.442
    assert set(out) == {"sd"}
    assert out["sd"]["best_swi"]["k"] == [[2]] and out["sd"]["best_walltime"]["k"] == [[2]]
    assert out["sd"]["preset"]["k"] == [[3]]
    assert out["sd"]["preset"]["swi_ms"] == pytest.approx(ewif_sd(0.5, 3, C), rel=0.04)
