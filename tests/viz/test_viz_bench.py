"""csd_lib.viz.bench: speedup bars and parity scatters from hand-made summaries."""
import plotly.graph_objects as go
import pytest

from csd_lib.viz.bench import bench_figure, parity_figure
from csd_lib.viz.palette import series_style

SUMMARY = {"ar": dict(speedup_walltime=1.0, speedup_swi_ms=1.0, speedup_swi_pw=1.0),
           "sd": dict(speedup_walltime=1.4, speedup_swi_ms=2.25, speedup_swi_pw=3.0),
           "csd": dict(speedup_walltime=1.9, speedup_swi_ms=3.5, speedup_swi_pw=None)}


def test_bench_figure_three_series_without_ar():
    fig = bench_figure(SUMMARY, title="t")
    assert isinstance(fig, go.Figure) and fig.layout.title.text == "t"
    assert [t.name for t in fig.data] == ["walltime (measured)", "SWI model-size", "SWI previous-work"]
    assert all(list(t.x) == ["sd", "csd"] for t in fig.data)
    assert list(fig.data[1].y) == [2.25, 3.5] and list(fig.data[1].text) == ["2.25", "3.50"]
    assert list(fig.data[2].text) == ["3.00", ""]  # a missing value has no label
    assert [t.marker.color for t in fig.data] == [series_style(i)["color"] for i in range(3)]
    assert [s.y0 for s in fig.layout.shapes] == [1.0]  # the AR line


def test_parity_figure_groups_and_diagonal():
    pts = [dict(label="a", m=1.2, p=1.5, fam="t5"), dict(label="b", m=2.0, p=1.8, fam="t5"),
           dict(label="c", m=0.5, p=0.7, fam="llama")]
    fig = parity_figure(pts, "m", "p", color="fam", title="pvm")
    groups, diag = fig.data[:-1], fig.data[-1]
    assert [g.name for g in groups] == ["t5", "llama"] and list(groups[0].text) == ["a", "b"]
    assert [g.marker.symbol for g in groups] == [series_style(0)["symbol"], series_style(1)["symbol"]]
    assert diag.name == "y = x" and list(diag.x) == list(diag.y) == [0.5, 2.0]
    assert fig.layout.xaxis.title.text == "m" and fig.layout.yaxis.title.text == "p"
    one = parity_figure([dict(label="x", m=3.0, p=2.0)], "m", "p", xlabel="measured")
    assert list(one.data[-1].x) == [1.0, 3.0]  # the diagonal always reaches 1 (AR)
    assert not one.data[0].showlegend and one.layout.xaxis.title.text == "measured"


def test_itl_figure_draws_each_timed_method_s_gaps():
    from csd_lib.viz import itl_figure
    from csd_lib.viz.palette import series_style
    stats = {"n_tokens": 4, "wall_time": 1.0}
    recs = [dict(example=0, method="ar", stats=stats, commit_times=[0.1, 0.2, 0.3, 0.4]),
            dict(example=0, method="csd", stats=stats, commit_times=[0.2, 0.2, 0.2, 0.5]),
            dict(example=1, method="csd", stats=stats, commit_times=[0.4, 0.4, 0.6, 0.6]),
            dict(example=0, method="hf-pld", stats=stats)]  # no commit times: left out
    fig = itl_figure(recs)
    assert [t.name.split()[0] for t in fig.data] == ["ar", "csd"]
    ar, csd = fig.data
    assert list(ar.x) == pytest.approx([100.0] * 3) and list(ar.y) == pytest.approx([1 / 3, 2 / 3, 1])
    assert list(csd.x) == pytest.approx([0, 0, 0, 0, 200, 300])  # both examples' gaps pooled, sorted, in ms
    assert "TTFT median 300.0 ms" in csd.name  # of 0.2 and 0.4 s
    assert (ar.line.dash, ar.line.color) != (csd.line.dash, csd.line.color) and ar.line.dash != csd.line.dash
    assert csd.line.color == series_style(1)["color"]
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
