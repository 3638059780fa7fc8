"""csd_lib.teach.ratio_explorer: the factor slider redraws the sentence and the figure with the scaled drafters."""
import pytest

from csd_lib import config
from csd_lib.measure.records import read_records
from csd_lib.price.costs import load_costs
from csd_lib.price.predict import ratio_sweep
from csd_lib.teach.ratio_explorer import ratio_explorer


@pytest.fixture(scope="module")
def sweep():
    cm = load_costs("tiny-t5", path=config.RESULTS_DIR / "costs-tiny-t5-cpu.json")
    return ratio_sweep(read_records(config.RESULTS_DIR / "tiny-t5-synth-gsm8k.jsonl"), cm, ratios=(0.1,), n_sim=300)


def test_moving_the_slider_redraws_at_the_scaled_cost(monkeypatch, sweep):
    import csd_lib.teach.ratio_explorer as ex
    shown = []
    monkeypatch.setattr(ex, "show_in_output", lambda out, fig: shown.append((out, fig)))
    box = ratio_explorer(sweep)
    assert len(shown) == 1 and shown[0][0] is box.out and box.words.value == sweep.sentence()
    assert not any(t.name.startswith("drafters x") for t in shown[0][1].data)
    box.slider.value = 0.1
    point = next(t for t in shown[1][1].data if t.name.startswith("drafters x"))
    f = box.slider.value
    assert list(point.y) == list(sweep.at(f).values()) and point.x[0] == pytest.approx(f * sweep.measured)
    assert "as dear as here" in box.words.value
