"""The lessons' evidence figures: one point per task with its interval, open markers for a live run, curves per task."""
from csd_lib.viz.lesson_evidence import decay_evidence_figure, evidence_figure
from csd_lib.viz.palette import series_style

ROWS = [dict(task="synth-gsm8k", estimate=0.1, lo=0.05, hi=0.2, n=50, pair="target<-base", curve=[0.9, 0.8, 0.6]),
        dict(task="synth-mmlu", estimate=-0.1, lo=-0.3, hi=0.02, n=50, pair="target<-base", curve=[0.7, 0.4])]


def test_evidence_figure_draws_each_interval_and_the_live_points():
    fig = evidence_figure(ROWS, "tokens per call", live={"your 4 prompts": 0.3})
    pts = [t for t in fig.data if t.error_x.array is not None]
    assert [t.y[0] for t in pts] == ["synth-gsm8k", "synth-mmlu"]
    assert list(pts[0].error_x.array) == [0.2 - 0.1] and list(pts[1].error_x.arrayminus) == [-0.1 + 0.3]
    live = fig.data[-1]
    assert live.x[0] == 0.3 and live.marker.symbol.endswith("-open")
    assert pts[0].marker.color != pts[1].marker.color and pts[0].marker.symbol != pts[1].marker.symbol  # apart in greyscale
    assert pts[0].marker.color == series_style(0)["color"]
    assert "95% interval" in fig.layout.xaxis.title.text


def test_decay_evidence_figure_has_one_curve_per_task():
    fig = decay_evidence_figure(ROWS)
    assert [list(t.y) for t in fig.data] == [[0.9, 0.8, 0.6], [0.7, 0.4]]
    assert list(fig.data[1].x) == [1, 2] and fig.data[0].line.dash != fig.data[1].line.dash
