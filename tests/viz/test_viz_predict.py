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

