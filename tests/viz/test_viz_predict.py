"""csd_lib.viz.predict.forecast_figure on a hand-made forecast: one line per SD drafter and the vertical
cascade, the best point of each starred, CSD's best as a level line."""
from csd_lib.viz.palette import LEVEL_COLORS, OKABE_ITO
from csd_lib.viz.predict import forecast_figure


def row(method, k, speedup, **extra):
    return dict(method=method, k=[[k]], speedup=speedup, **extra)


RES = dict(family="tiny-t5", device="cpu", rows=[
    row("ar", 0, 1.0),
    row("sd", 1, 1.2, drafter="base"), row("sd", 2, 1.5, drafter="base"), row("sd", 3, 1.4, drafter="base"),
    row("sd", 1, 1.1, drafter="small"), row("sd", 2, 1.3, drafter="small"),
    row("vertical", 2, 1.6), row("vertical", 4, 1.8), row("csd", 0, 0.0)],
    best={"csd": dict(k=[[2, 3], [0, 4]], speedup=2.05)})


def test_lines_stars_and_levels():
    fig = forecast_figure(RES)
    lines = [t for t in fig.data if t.showlegend is not False]
    stars = [t for t in fig.data if t.showlegend is False]
    assert [t.name for t in lines] == ["SD, base drafts", "SD, small drafts", "vertical: largest drafter + MaG"]
    assert [list(t.x) for t in lines] == [[1, 2, 3], [1, 2], [2, 4]]
    assert list(lines[0].y) == [1.2, 1.5, 1.4]
    assert [(s.x[0], s.y[0]) for s in stars] == [(2, 1.5), (2, 1.3), (4, 1.8)]  # each line's best k
    assert [t.line.color for t in lines] == [LEVEL_COLORS["base"], LEVEL_COLORS["small"], LEVEL_COLORS["mag-match"]]
    assert lines[0].line.dash != lines[1].line.dash and lines[2].line.dash == "dash"
    levels = {s.y0: s.line.color for s in fig.layout.shapes}
    assert levels == {2.05: OKABE_ITO["vermillion"], 1.0: OKABE_ITO["black"]}
    assert "CSD, best K [[2, 3], [0, 4]]: 2.05x" in [a.text for a in fig.layout.annotations]
    assert fig.layout.title.text == "Predicted speedup of tiny-t5 on cpu"
    assert forecast_figure(RES, title="mine").layout.title.text == "mine"



def test_review_cost_figure_crosses_where_the_speedup_falls_to_1():
    """A round's cost in AR steps over the tokens it keeps is the inverse speedup: the lines cross at the crossover."""
    import pytest
    from csd_lib.price.batch import batch_plans, predict_batches
    from csd_lib.price.costmodel import CallFit, CostModel
    from csd_lib.viz.predict import review_cost_figure
    cm = CostModel("test", "cpu", {"target": CallFit([1e-3, 2e-4, 1e-6, 0.0, 0.0]),
                                   "base": CallFit([3e-4, 5e-5, 0.0, 0.0, 0.0]),
                                   "small": CallFit([1e-4, 1e-5, 0.0, 0.0, 0.0])}, mag=1e-5)
    table = {("target", "base"): [0.8], ("target", "small"): [0.7], ("base", "small"): [0.7]}
    Bs = [1, 2, 4, 8, 16, 32, 64]
    plans = batch_plans(cm, table, ["base", "small"])
    res = predict_batches(cm, table, ["base", "small"], Bs, plans=plans)
    fig = review_cost_figure(cm, plans, Bs)
    cost = {t.name.split(":")[0]: list(t.y) for t in fig.data if "cost" in t.name}
    kept = {t.name.split(":")[0]: t.y[0] for t in fig.data if "keeps" in t.name}
    for m in ("sd", "csd"):
        speed = [r["speedup"] for r in res["rows"] if r["method"] == m]
        assert [kept[m.upper()] / c for c in cost[m.upper()]] == pytest.approx(speed, rel=1e-9)
    assert cost["SD"][-1] > cost["SD"][0]                 # the review's B x (k + 1) tokens stop being nearly free
    solid = [t for t in fig.data if "cost" in t.name]
    assert len({t.marker.symbol for t in solid}) == 2 and {t.line.dash for t in fig.data} == {"solid", "dot"}
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_batch_speedup_figure_marks_the_batch_asked_for():
    from csd_lib.price.batch import predict_batches
    from csd_lib.price.costmodel import CostModel
    from csd_lib.viz.predict import batch_speedup_figure
    cm = CostModel.constant({"target": 1.0, "base": 0.3, "small": 0.1, "mag": 0.0})
    res = predict_batches(cm, {("target", "base"): [0.8], ("target", "small"): [0.7], ("base", "small"): [0.7]},
                          ["base", "small"], [1, 2, 4, 8])
    assert 8 not in [s.x0 for s in batch_speedup_figure(res).layout.shapes]
    assert 8 in [s.x0 for s in batch_speedup_figure(res, at=8).layout.shapes]


def _cell(tps, speed, pred=None):
    c = dict(tokens_per_s=tps, tokens_per_s_ci95=[tps - 1, tps + 2], speedup=speed, speedup_ci95=[speed - 0.1, speed + 0.2])
    if pred is not None:
        c.update(predicted_tokens_per_s=pred, predicted_speedup=pred / tps * speed)
    return c


SUMMARY = {"cells": {"ar": {1: _cell(10, 1.0), 4: _cell(30, 1.0)},
                     "sd": {1: _cell(20, 2.0, 21), 4: _cell(27, 0.9, 25)},
                     "csd": {"1": _cell(25, 2.5), "4": _cell(45, 1.5)}},
           "crossover": {"sd": {"estimate": 3.5, "interval": [2.5, 4.0], "sizes": [1, 4]},
                         "csd": {"estimate": float("inf"), "interval": [3.0, float("inf")], "sizes": [1, 4]}}}


def test_batch_bench_figure_draws_medians_intervals_predictions_and_crossovers():
    import pytest
    from csd_lib.viz.predict import batch_bench_figure
    fig = batch_bench_figure(SUMMARY)
    names = [t.name for t in fig.data]
    assert names == ["AR, measured (median)", "SD, measured (median)", "SD, predicted", "CSD, measured (median)"]
    sd = fig.data[1]
    assert list(sd.x) == [1, 4] and list(sd.y) == [20, 27] and list(sd.error_y.array) == [2, 2]
    pred = fig.data[2]
    assert pred.line.dash == "dot" and pred.marker.symbol.endswith("-open") and list(pred.y) == [21, 25]
    speed = batch_bench_figure(SUMMARY, "speedup")
    assert not any(t.name.startswith("AR") for t in speed.data)               # AR is the line 1, not a series
    assert [s.x0 for s in speed.layout.shapes if s.x0 == s.x1] == [3.5]      # only a finite crossover is drawn
    assert [s.y0 for s in speed.layout.shapes if s.y0 == s.y1] == [1.0]
    assert [t.name for t in batch_bench_figure(SUMMARY, methods=["ar", "csd"]).data] == ["AR, measured (median)",
                                                                                    "CSD, measured (median)"]
    with pytest.raises(ValueError, match="tokens_per_s"):
        batch_bench_figure(SUMMARY, "walltime")
