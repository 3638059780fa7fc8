"""Notebook 10's figures: per-round draft lengths per policy, and each policy's committed answer with its interval."""
from csd_lib.viz.palette import series_style
from csd_lib.viz.policies import draft_length_figure, policy_evidence_figure

ROWS = [dict(task=t, method=m, policy=p, estimate=e, lo=e - 0.1, hi=e + 0.2, n=50)
        for t, e in (("synth-gsm8k", 0.3), ("synth-mmlu", -0.2)) for m in ("sd", "csd") for p in ("schedule", "ewif")]


def test_draft_length_figure_draws_each_policys_rounds_apart_in_greyscale():
    fig = draft_length_figure({"fixed": [16, 16, 2], "schedule": [16, 15, 3, 2]})
    assert [list(t.y) for t in fig.data] == [[16, 16, 2], [16, 15, 3, 2]]
    assert list(fig.data[1].x) == [1, 2, 3, 4] and fig.data[1].name == "schedule (4 rounds)"
    a, b = fig.data
    assert a.line.dash != b.line.dash and a.marker.symbol != b.marker.symbol   # not by hue alone
    assert a.line.color == series_style(0)["color"]
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_policy_evidence_figure_has_one_series_per_task_with_its_intervals_and_the_live_values():
    fig = policy_evidence_figure(ROWS, "tokens per target call", live={"csd, ewif": 0.5})
    gsm, mmlu, live = fig.data
    assert list(gsm.y) == ["sd, schedule", "sd, ewif", "csd, schedule", "csd, ewif"] and list(gsm.x) == [0.3] * 4
    assert [round(v, 6) for v in mmlu.error_x.array] == [0.2] * 4 and [round(v, 6) for v in mmlu.error_x.arrayminus] == [0.1] * 4
    assert gsm.marker.symbol != mmlu.marker.symbol and gsm.marker.color != mmlu.marker.color
    assert list(live.x) == [0.5] and live.marker.symbol.endswith("-open")
    assert "95% interval" in fig.layout.xaxis.title.text
    assert len(policy_evidence_figure(ROWS, "x").data) == 2                     # no live run: the committed answers only
