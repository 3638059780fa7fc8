"""csd_lib.viz.costs: the cost model's fits over its timings, and predictions of a constructed run."""
import numpy as np
import pytest

from csd_lib.engine.plan import Plan
from csd_lib.price.costmodel import CallFit, CostModel
from csd_lib.price.ewif import ewif_sd
from csd_lib.viz.costs import cost_figure, prediction_figure, time_share_figure
from csd_lib.viz.palette import model_color, series_style

FITS = {"target": CallFit([1e-3, 1e-4, 1e-6, 0.0, 0.0], r2=0.987), "small": CallFit([2e-4, 1e-5, 0.0, 0.0, 0.0],
                                                                                    r2=0.912)}
SAMPLES = [[name, n, L, float(fit(n, L)) * (1.02 if n == 4 else 1.0)] for name, fit in FITS.items()
           for L in (0, 64) for n in (1, 4, 8)]
CM = CostModel("tiny-t5", "cpu", FITS, samples=SAMPLES)


def test_cost_figure_one_panel_per_model_points_and_fit():
    fig = cost_figure(CM)
    assert [a.text for a in fig.layout.annotations] == ["target (the line explains 99% of the spread)", "small (the line explains 91% of the spread)"]
    assert fig.layout.title.text == "tiny-t5 on cpu: cost of one forward call"
    assert [t.name for t in fig.data] == ["L = 0 measured", "L = 0 fit", "L = 64 measured", "L = 64 fit"] * 2
    measured, fit = fig.data[2], fig.data[3]  # target at L = 64
    assert list(measured.x) == [1, 4, 8]
    assert list(measured.y) == pytest.approx([1e3 * s[3] for s in SAMPLES if s[0] == "target" and s[2] == 64])
    assert list(fit.x) == list(range(1, 9))
    assert list(fit.y) == pytest.approx(1e3 * (1e-3 + 1e-4 * np.arange(1, 9) + 64e-6))
    assert measured.marker.color == series_style(1)["color"] == fit.line.color  # one style per L
    assert [t.showlegend for t in fig.data] == [True] * 4 + [False] * 4  # the legend once


def sd_run(k=3):
    stats = dict(n_tokens=400, wall_time=1.0, calls={"target": 100, "small": 300}, params={"target": 10, "small": 1},
                 forward_time={"target": 1.0, "small": 0.3},
                 acceptance={"target<-small": {"reached": [200, 100, 50], "accepted": [100, 50, 25]}})
    ar = dict(n_tokens=400, wall_time=2.0, calls={"target": 400}, params={"target": 10}, forward_time={"target": 1.8},
              acceptance={})
    line = dict(family="tiny-t5", task="synth-gsm8k", token_ids=[1] * 400, cache_start=1)
    return [dict(example=i, method=m, stats=s, plan=p.to_dict(), **line) for i in (0, 1)
            for m, s, p in (("ar", ar, Plan.ar()), ("sd", stats, Plan.sd(k)))]


def test_prediction_figure_places_each_method_by_measured_and_predicted():
    cm = CostModel.constant({"target": 0.01, "small": 0.001})
    fig = prediction_figure(sd_run(), cm, title="pvm")
    pts = fig.data[0]
    assert list(pts.text) == ["ar", "sd"] and fig.layout.title.text == "pvm"
    assert list(pts.x) == pytest.approx([1.0, 2.0])  # measured: AR 2.0 s over SD 1.0 s
    assert pts.y[0] == 1.0 and pts.y[1] == pytest.approx(ewif_sd(0.5, 3, 0.1), rel=0.03)


def test_time_share_figure_stacks_each_models_share():
    cm = CostModel.constant({"target": 0.01, "small": 0.001})
    fig = time_share_figure(sd_run(), cm)
    assert [t.name for t in fig.data] == ["target", "small"] and all(list(t.x) == ["sd"] for t in fig.data)
    # per target review: one target call (1) and three drafter calls (3 x 0.1)
    assert [t.y[0] for t in fig.data] == pytest.approx([100 / 1.3, 30 / 1.3], abs=1.0)
    assert sum(t.y[0] for t in fig.data) == pytest.approx(100.0)
    assert [t.marker.color for t in fig.data] == [model_color("target"), model_color("small")]
