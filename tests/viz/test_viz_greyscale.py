"""Every figure reads in greyscale: series differ by more than hue, axes have titles, heatmaps
use a lightness-monotone colour-blind-safe scale with the best cell marked."""
import itertools

import plotly.graph_objects as go
import pytest

from csd_lib import config, generate, random_family, viz
from csd_lib.price import ewif
from csd_lib.measure.records import read_records
from csd_lib.price.costs import load_costs
from csd_lib.report.summary import summarize

from test_palette import cie_lightness

K3 = [[5, 14, 10], [0, 1, 10], [0, 0, 10]]
RESULTS = config.RESULTS_DIR / "tiny-t5-synth-gsm8k.jsonl"
# the shape of csd_lib.price.predict.predict_for_device's result, as forecast_figure reads it
FORECAST = dict(family="toy", device="cpu", best=dict(csd=dict(speedup=1.8, k=[[3, 2], [0, 5]])),
                rows=[dict(method=m, drafter=d, k=[[k]], speedup=s) for m, d in
                      (("sd", "base"), ("sd", "small"), ("vertical", "base"))
                      for k, s in ((1, 1.2), (2, 1.4), (3, 1.3))])


def style(t) -> tuple:
    """What tells a trace apart once colour is gone: kind, mode, pattern, dash, symbol."""
    m, line = getattr(t, "marker", None), getattr(t, "line", None)
    pattern = m.pattern.shape if m is not None and "pattern" in m and m.pattern.shape else ""
    if t.type == "bar":
        return ("bar", pattern or "solid")
    return (t.type, t.mode or "", (line.dash or "solid") if line is not None and "lines" in (t.mode or "") else "",
            (m.symbol or "circle") if m is not None and "markers" in (t.mode or "") else "")


def legend_traces(fig) -> list:
    """The traces a reader tells apart in the legend (named, shown, not an overlay of a heatmap)."""
    out, seen = [], set()
    for t in fig.data:
        if t.showlegend is False or t.type == "heatmap" or not t.name:
            continue
        key = t.legendgroup + "|" + t.name if t.legendgroup else t.name
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def not_by_hue_alone(fig) -> list:
    """Pairs of legend entries that differ only by colour (empty when the figure reads in greyscale)."""
    ts = legend_traces(fig)
    return [(a.name, b.name) for a, b in itertools.combinations(ts, 2) if style(a) == style(b)]


def missing_axis_titles(fig) -> list:
    """Axes that carry data (any trace on them) and have no title."""
    used = set()
    for t in fig.data:
        if t.type in ("bar", "scatter", "heatmap"):
            used.add("xaxis" + (t.xaxis or "x")[1:])
            used.add("yaxis" + (t.yaxis or "y")[1:])
    out = []
    for ax in sorted(used):
        a = fig.layout[ax]
        if a.visible is False or (a.matches and a.showticklabels is False):  # hidden, or shares a titled axis
            continue
        if not (a.title and a.title.text):
            out.append(ax)
    return out


@pytest.fixture(scope="module")
def run():
    f = random_family("t5", vocab_size=32, n_drafters=2, seed=1)
    return f, generate(f, [5, 6, 7, 5, 6], "csd", max_new_tokens=24), generate(f, [5, 6, 7, 5, 6], "sd",
                                                                               max_new_tokens=24, k=3)


def grid_rows():
    return [dict(k11=a, k12=b, lenience=l, v=0.4 + 0.1 * a + 0.05 * b + 0.2 * l)
            for a in (2, 5, 8) for b in (0, 7, 14) for l in (1.0, 2.0)]


def all_figures(run):
    """Every figure function of csd_lib.viz that draws several series, as notebooks call them."""
    f, csd, sd = run
    recs = read_records(RESULTS)
    cm = load_costs("tiny-t5", path=config.RESULTS_DIR / "costs-tiny-t5-cpu.json")
    summ = summarize(recs)
    curves = {"small->target": dict(unconditional=[0.8, 0.6, 0.4], conditional=[0.8, 0.75, 0.7], alpha=0.78),
              "base->target": dict(unconditional=[0.9, 0.8, 0.7], conditional=[0.9, 0.88, 0.87], alpha=0.9)}
    pts = [dict(label=m, swi=v["speedup_swi_ms"], wall=v["speedup_walltime"], task=t)
           for t in ("gsm8k", "mmlu") for m, v in summ.items() if m != "ar"]
    return {
        "bench": viz.bench_figure(summ),
        "parity": viz.parity_figure(pts, "swi", "wall", color="task", xlabel="SWI", ylabel="walltime"),
        "cost": viz.cost_figure(cm),
        "prediction": viz.prediction_figure(recs, cm),
        "time_share": viz.time_share_figure(recs, cm),
        "table1": viz.table1_figure({"previous-work": ewif.table1(), "model-size": ewif.table1()}),
        "ewif_k": viz.ewif_k_figure([(0.8, 0.05), (0.6, 0.1), (0.9, 0.2)]),
        "lines": viz.lines_figure([1, 2, 3], {"a: SWI": [1, 2, 3], "a: wall": [2, 3, 4], "b: SWI": [1, 1, 1],
                                              "b: wall": [0, 1, 2]}, "k11", "speedup",
                                  dash={"a: wall": "dot", "b: wall": "dot"}),
        "cor44": viz.cor44_figure(0.8, 0.6, 0.1, 5),
        "sampling": viz.sampling_figure([0.4, 0.3, 0.2, 0.1], {"SD": [0.38, 0.32, 0.2, 0.1],
                                                                "CSD": [0.41, 0.29, 0.2, 0.1]}, 2, 2),
        "acceptance": viz.acceptance_figure(curves),
        "acceptance_families": viz.acceptance_figure(
            {f"{fam}: {k}": v for fam in ("tiny-t5", "tiny-t5-paper") for k, v in curves.items()}, conditional=False),
        "calls": viz.calls_figure({"SD small (k=5)": [sd], "CSD base+small+MaG, l=2 on MaG too": [csd]}),
        "pair_acceptance": viz.pair_acceptance_figure({"sd": [sd], "csd": [csd]}),
        "match_length": viz.match_length_figure({"prompt": [0, 1, 2, 2, 3], "generated": [1, 1, 4, 25]}),
        "mag_hits": viz.mag_hits_figure([dict(variant="v1", hit_rate=0.5, mean_accepted=1.2),
                                         dict(variant="v2", hit_rate=0.3, mean_accepted=0.8)]),
        "planned_coverage": viz.planned_coverage_figure(K3, ["base", "small", "mag"]),
        "coverage": viz.coverage_figure(csd.events),
        "heatmap": viz.grid_heatmap(grid_rows(), "v"),
        "tree": viz.cascade_tree_figure(K3, ["base", "small", "mag"], lenience=2),
        "forecast": viz.forecast_figure(FORECAST),
        "draft_lengths": viz.draft_length_figure({"fixed": sd.draft_lengths(), "csd": csd.draft_lengths(), "x": [3, 1]}),
        "policy_evidence": viz.policy_evidence_figure(
            [dict(task=t, method="sd", policy="ewif", estimate=0.1, lo=0.0, hi=0.2, n=50) for t in ("a", "b")], "x",
            live={"sd, ewif": 0.3}),
    }


@pytest.fixture(scope="module")
def figures(run):
    return all_figures(run)


def test_the_checks_can_fail():
    fig = go.Figure([go.Bar(name="a", y=[1]), go.Bar(name="b", y=[2])])
    assert not_by_hue_alone(fig) == [("a", "b")]
    assert missing_axis_titles(fig) == ["xaxis", "yaxis"]
    fig = go.Figure([go.Scatter(name="a", y=[1], mode="lines"), go.Scatter(name="b", y=[2], mode="lines")])
    assert not_by_hue_alone(fig) == [("a", "b")]
    fig.data[1].line.dash = "dash"
    assert not_by_hue_alone(fig) == []


def test_every_series_differs_by_more_than_hue(figures):
    bad = {name: pairs for name, fig in figures.items() if (pairs := not_by_hue_alone(fig))}
    assert not bad, f"legend entries told apart by colour alone: {bad}"


def line_colour(t):
    return t.line.color if t.line is not None and t.line.color else getattr(t.marker, "color", None)


def marks(t) -> str:
    """The marker shape a legend swatch shows clearly (size 8 or more), else ''."""
    m = t.marker
    return (m.symbol or "circle") if "markers" in (t.mode or "") and m is not None and (m.size or 6) >= 8 else ""


def lines_alike(fig) -> list:
    """Pairs of line entries with one dash and width whose colours are within 15 CIE L* of each other and
    whose swatches show no clear marker shape that differs: a legend swatch is mostly line, so a small
    marker (the browser check measured size 7) does not tell two of them apart in grey."""
    ts = [t for t in legend_traces(fig) if t.type == "scatter" and "lines" in (t.mode or "")
          and isinstance(line_colour(t), str) and line_colour(t).startswith("#")]
    return [(a.name, b.name) for a, b in itertools.combinations(ts, 2)
            if (a.line.dash or "solid") == (b.line.dash or "solid") and (a.line.width or 2) == (b.line.width or 2)
            and abs(cie_lightness(line_colour(a)) - cie_lightness(line_colour(b))) < 15
            and not (marks(a) and marks(b) and marks(a) != marks(b))]


def test_the_line_check_can_fail():
    fig = viz.acceptance_figure({"f: base->target": dict(unconditional=[0.9, 0.8], conditional=[0.9, 0.9], alpha=0.9)})
    fig.add_scatter(x=[1, 2], y=[0.5, 0.4], mode="lines+markers", name="other", line=dict(color=viz.OKABE_ITO["blue"]),
                    marker=dict(symbol="square", size=7))
    assert lines_alike(fig) == [("f: base->target P(first i accepted)", "other")]


def test_line_entries_differ_in_dash_or_lightness(figures):
    bad = {name: pairs for name, fig in figures.items() if (pairs := lines_alike(fig))}
    assert not bad, f"line entries alike in greyscale: {bad}"


def test_every_axis_with_data_has_a_title(figures):
    bad = {name: axes for name, fig in figures.items() if (axes := missing_axis_titles(fig))}
    assert not bad, f"axes without a title: {bad}"


def test_bars_of_several_series_carry_patterns(figures):
    for name in ("bench", "time_share", "table1", "sampling", "calls", "match_length", "coverage"):
        shapes = [t.marker.pattern.shape or "" for t in legend_traces(figures[name]) if t.type == "bar"]
        assert len(shapes) >= 2 and len(set(shapes)) == len(shapes), (name, shapes)


def test_figure_colours_come_from_the_palette(figures):
    okabe = {c.lower() for c in viz.OKABE_ITO.values()}
    for name in ("bench", "parity", "cost", "table1", "ewif_k", "lines", "sampling"):
        for t in legend_traces(figures[name]):
            col = t.marker.color if t.type == "bar" or "lines" not in (t.mode or "") else t.line.color
            if t.name in ("y = x", "paper (Table 1)"):
                continue
            assert isinstance(col, str) and col.lower() in okabe, (name, t.name, col)


def test_heatmap_scale_is_lightness_monotone_and_the_best_cell_marked(figures):
    fig = figures["heatmap"]
    scale = [c for _, c in fig.layout.coloraxis.colorscale]
    ls = [cie_lightness(c) for c in scale]
    assert all(b > a for a, b in zip(ls, ls[1:])), ls
    assert fig.layout.coloraxis.colorbar.title.text == "v"
    rows = grid_rows()
    best = max(rows, key=lambda r: r["v"])
    marks = [t for t in fig.data if t.type == "scatter"]
    assert marks and {(m.x[0], m.y[0]) for m in marks} == {(str(best["k12"]), str(best["k11"]))}
    starred = [txt for h in fig.data if h.type == "heatmap" for row in h.text for txt in row if "\u2605" in txt]
    assert starred == [f"\u2605 {best['v']:.2f}"]
    below = [txt for h in fig.data if h.type == "heatmap" for row in h.text for txt in row if "\u25bc" in txt]
    assert len(below) == sum(r["v"] < 1.0 for r in rows) > 0
    assert 300 <= fig.layout.height <= 700 and 400 <= fig.layout.width <= 1100
    low = viz.grid_heatmap(rows, "v", best="min", zmid=None)
    assert [txt for h in low.data if h.type == "heatmap" for row in h.text for txt in row if "\u2605" in txt] == \
        [f"\u2605 {min(r['v'] for r in rows):.2f}"]
    with pytest.raises(ValueError, match="best"):
        viz.grid_heatmap(rows, "v", best="top")


def test_series_styles_are_distinct_and_separate_in_lightness():
    styles = [viz.series_style(i) for i in range(6)]
    for key in ("color", "dash"):
        assert len({s[key] for s in styles}) == 6, key
    assert len({viz.series_style(i)["pattern"] for i in range(8)}) == 8
    assert len({viz.series_style(i)["symbol"] for i in range(8)}) == 8
    ls = [cie_lightness(s["color"]) for s in styles]
    assert min(abs(a - b) for a, b in zip(ls[:5], ls[1:5])) >= 15, ls  # the first five neighbours
    assert len({viz.level_pattern(lv) for lv in viz.LEVEL_ORDER}) == len(viz.LEVEL_ORDER)
    assert viz.level_pattern("mag") == viz.LEVEL_PATTERN["mag-match"]


def test_calls_figure_labels_never_overlap(run):
    f, csd, sd = run
    fig = viz.calls_figure({"SD small (k=5)": [sd], "CSD base+small+MaG, l=2 on MaG too": [csd]})
    assert all(max(map(len, str(x).split("<br>"))) <= 18 for x in fig.data[0].x)
    ratio = next(t for t in fig.data if t.type == "scatter")
    # the tokens-per-call strip is its own axis above the bars' axis
    assert ratio.yaxis == "y2" and fig.layout.yaxis2.domain[0] > fig.layout.yaxis.domain[1]
    assert fig.layout.yaxis.tickformat == ",d"


def test_parity_labels_of_neighbours_alternate_above_and_below():
    pts = [dict(label=m, x=1.0, y=v) for m, v in (("a", 1.30), ("b", 1.31), ("c", 1.32))]
    fig = viz.parity_figure(pts, "x", "y")
    assert list(fig.data[0].textposition) == ["top center", "bottom center", "top center"]
