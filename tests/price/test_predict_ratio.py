"""The cost-ratio lesson: predictions against the drafters' cost ratio, priced by the one price."""
import pytest

from csd_lib import config
from csd_lib.measure.records import read_records
from csd_lib.price.costmodel import scaled
from csd_lib.price.costs import load_costs
from csd_lib.price.predict import cost_ratios, paper_ratios, ratio_sweep, run_shape, run_table
from csd_lib.price.pricing import price_plan
from csd_lib.viz import cost_ratio_figure

RUN = config.RESULTS_DIR / "tiny-t5-synth-gsm8k.jsonl"


@pytest.fixture(scope="module")
def sweep():
    cm = load_costs("tiny-t5", path=config.RESULTS_DIR / "costs-tiny-t5-cpu.json")
    return ratio_sweep(read_records(RUN), cm, ratios=(0.02, 0.1, 1.0), n_sim=400)


def test_the_figure_at_the_measured_ratio_is_price_plan(sweep):
    fig = cost_ratio_figure(sweep)
    here = next(t for t in fig.data if t.name == "this machine")
    assert list(here.x) == [sweep.measured] * 3
    cm = sweep.cost_model
    for (method, (recs, plan)), y in zip(sweep.plans.items(), here.y):
        toks, start = run_shape(recs, cm)
        assert y == price_plan(plan, run_table(recs, plan), cm, toks, start, n_sim=400)["speedup"], method
    ratio = float(cm.forward[sweep.drafter](1, cm.cache_length) / cm.forward["target"](1, cm.cache_length))
    assert sweep.measured == pytest.approx(ratio) and sweep.drafter == "base"


def test_a_scaled_drafter_is_priced_as_a_scaled_cost_model(sweep):
    recs, plan = sweep.plans["csd"]
    cm = scaled(sweep.cost_model, {"base": 0.5, "small": 0.5})
    toks, start = run_shape(recs, cm)
    assert sweep.at(0.5)["csd"] == price_plan(plan, run_table(recs, plan), cm, toks, start, n_sim=400)["speedup"]
    cheap, dear = sweep.at(0.1), sweep.at(2.0)
    assert cheap["sd"] > dear["sd"] and cheap["csd"] > dear["csd"]  # dearer drafters: less speedup
    assert cheap["csd"] / cheap["sd"] < dear["csd"] / dear["sd"]   # ... and more left for the cascade to save


def test_the_sentence_follows_the_prediction(sweep):
    p = sweep.at(1.0)
    gain = p["csd"] / p["sd"]
    words = sweep.sentence()
    assert ("beats SD by" in words) == (gain > 1.05) and f"base costs {sweep.measured:.2f} of a target step" in words
    assert f"{gain:.2f}x" in words or "ties" in words or "loses" in words


def test_ratios_and_the_paper_on_the_axis():
    steps = {"target": {1: 0.01, 10: 0.02}, "base": {1: 0.004, 10: 0.005}}
    assert cost_ratios(steps) == {"base": {1: pytest.approx(0.4), 10: pytest.approx(0.25)}}
    marks = paper_ratios()
    assert sorted((round(r, 5), role) for r, role in marks.values()) == [
        (round(77 / 11100, 5), "smallest"), (round(248 / 11100, 5), "largest"), (0.04, "largest")]
    assert all(("small" in name) == (role == "smallest") for name, (_, role) in marks.items())


def test_the_paper_marks_sit_on_the_axis_of_the_drafter_they_price(sweep):
    """Base's ratios on the bottom axis (base's); small's where this family's small costs 77M / 11.1B of a
    target step, which the top axis (small's ratio at the same factor) reads directly."""
    import numpy as np
    cm = sweep.cost_model
    small = float(cm.forward["small"](1, cm.cache_length) / cm.forward["target"](1, cm.cache_length))
    assert sweep.smallest == "small" and sweep.smallest_share == pytest.approx(small / sweep.measured)
    fig = cost_ratio_figure(sweep)
    lines = {sh.name: sh.x0 for sh in fig.layout.shapes if sh.name}
    assert lines[next(n for n in lines if n.startswith("FLAN-T5-base"))] == pytest.approx(248 / 11100)
    at = lines[next(n for n in lines if n.startswith("FLAN-T5-small"))]
    assert at * sweep.smallest_share == pytest.approx(77 / 11100)  # small's own ratio there is the paper's
    top, bottom = fig.layout.xaxis2, fig.layout.xaxis
    assert top.side == "top" and "small's one-token step" in top.title.text and "base's" in bottom.title.text
    assert np.allclose(np.subtract(top.range, bottom.range), np.log10(sweep.smallest_share))
