"""The lessons' answers drawn: one series per family, each answer's interval as its error bar, the live run apart."""
import pytest

from csd_lib.viz.answers import answer_figure, answer_label
from csd_lib.viz.palette import series_style


def _row(fam, task, est, lo, hi, pair=None):
    return dict(family=fam, task=task, estimate=est, lo=lo, hi=hi, n=50, **({"pair": pair} if pair else {}))


def test_each_family_is_one_series_with_its_intervals():
    rows = [_row("tiny-t5", "synth-gsm8k", 0.5, 0.4, 0.7), _row("tiny-t5", "synth-mmlu", -0.1, -0.3, 0.1),
            _row("tiny-llama", "synth-gsm8k", 0.2, 0.1, 0.25, pair="base<-small")]
    fig = answer_figure(rows, "t", "difference", here={answer_label(rows[0]): 0.9})
    t5, llama, live = fig.data
    assert (t5.name, llama.name, live.name) == ("tiny-t5", "tiny-llama", "your prompts")
    assert list(t5.error_x.array) == pytest.approx([0.2, 0.2]) and list(t5.error_x.arrayminus) == pytest.approx([0.1, 0.2])
    assert list(llama.y) == ["tiny-llama, synth-gsm8k, base<-small"] and list(live.y) == ["tiny-t5, synth-gsm8k"]
    assert t5.marker.color == series_style(0)["color"] != llama.marker.color  # one palette colour per family
    assert t5.marker.symbol != llama.marker.symbol                             # and a marker that survives grey
    assert fig.layout.shapes[0].x0 == 0                                        # the line of no difference


def test_no_answer_is_a_clear_error():
    with pytest.raises(ValueError, match="at least one answer"):
        answer_figure([], "t", "x")
