"""Cost-model figures (notebooks 05, 06, BENCHMARKS.md): the fitted cost per call, predicted against
measured walltime, and predicted speedups against the drafters' cost ratio."""
from __future__ import annotations

import numpy as np

from ..engine.methods import REFERENCE
from ..price.costmodel import CostModel
from ..price.predict import paper_ratios
from ..report.summary import predicted_vs_measured
from .bench import parity_figure
from .palette import OKABE_ITO, bar_pattern, level_pattern, model_color, series_style


def cost_figure(cost_model: CostModel, title: str | None = None):
    """Measured ms per call against tokens scored, one panel per model, fitted lines over points."""
    import plotly.graph_objects as go  # optional dependency (figures)
    from plotly.subplots import make_subplots  # plotly: imported when a figure is drawn
    names = list(cost_model.forward)
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=[
        f"{nm} (the line explains {cost_model.forward[nm].r2:.0%} of the spread)" for nm in names])
    for j, nm in enumerate(names, 1):
        rows = [s for s in cost_model.samples if s[0] == nm and s[1] > 0]
        for i, L in enumerate(sorted({r[2] for r in rows})):
            pts = sorted((r[1], r[3]) for r in rows if r[2] == L)
            ns = np.array([p[0] for p in pts])
            st = series_style(i)  # one colour, symbol and dash per context length L
            fig.add_trace(go.Scatter(x=ns, y=[1e3 * p[1] for p in pts], mode="markers",
                                     marker=dict(color=st["color"], symbol=st["symbol"], size=7),
                                     name=f"L = {L} measured", legendgroup=str(L), showlegend=j == 1), row=1, col=j)
            grid = np.arange(1, ns.max() + 1)
            fig.add_trace(go.Scatter(x=grid, y=1e3 * cost_model.forward[nm](grid, L), mode="lines",
                                     line=dict(color=st["color"], dash=st["dash"]),
                                     name=f"L = {L} fit", legendgroup=str(L), showlegend=j == 1), row=1, col=j)
        fig.update_xaxes(title_text="tokens scored per call (n)", row=1, col=j)
        fig.update_yaxes(title_text="ms per call", row=1, col=j)
    fig.update_layout(title=title or f"{cost_model.family} on {cost_model.device}: cost of one forward call",
                      template="plotly_white", height=380)
    return fig


def prediction_figure(records: list[dict], cost_model: CostModel, title: str = ""):
    """Predicted (EWIF with this cost model) against measured median walltime speedup, one point per method."""
    pv = predicted_vs_measured(records, cost_model)
    pts = [dict(label=m, measured=v["speedup_walltime_median"], predicted=v["predicted_walltime"])
           for m, v in pv.items()]
    return parity_figure(pts, "measured", "predicted", xlabel="measured walltime speedup (median over examples)",
                         ylabel="predicted by EWIF + cost model", title=title or "walltime: predicted vs measured")


def time_share_figure(records: list[dict], cost_model: CostModel, title: str = ""):
    """Stacked bars: the share of each method's predicted time that each model takes (where the time goes)."""
    import plotly.graph_objects as go  # optional dependency (figures)
    pv = {m: v for m, v in predicted_vs_measured(records, cost_model).items() if m != REFERENCE}
    names = list(dict.fromkeys(n for v in pv.values() for n in v["cost_share"]))
    fig = go.Figure([go.Bar(name=n, x=list(pv), y=[100 * v["cost_share"].get(n, 0.0) for v in pv.values()],
                            marker=dict(color=model_color(n), line=dict(color="#000000", width=1),
                                        pattern=bar_pattern(level_pattern(n), model_color(n))))
                     for n in names])
    fig.update_layout(barmode="stack", xaxis_title="method", yaxis_title="% of predicted time",
                      yaxis_range=[0, 100], template="plotly_white",
                      title=title or "where the time goes (cost model)")
    return fig


RATIO_NAMES = {"sd": "SD", "vertical": "vertical (largest drafter + MaG)", "csd": "CSD"}


def cost_ratio_figure(sweep, point: tuple[float, dict] | None = None, title: str | None = None):
    """EWIF's predicted speedups against the largest drafter's cost ratio (:func:`csd_lib.price.predict.ratio_sweep`),
    one line per method, with this machine's ratio (markers named 'this machine'), the paper's FLAN-T5
    ratios (vertical lines in the legend: base's on the bottom axis, small's where this family's smallest
    drafter costs as much, read on the top axis) and ``point`` = (factor, {method: speedup}) for the drafters
    scaled by a factor."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    here = sweep.ratios.index(sweep.measured)
    for i, (m, ys) in enumerate(sweep.speedups.items()):
        st = series_style(i)
        fig.add_trace(go.Scatter(x=sweep.ratios, y=ys, mode="lines", name=RATIO_NAMES[m],
                                 line=dict(color=st["color"], dash=st["dash"]), legendgroup=m))
    fig.add_trace(go.Scatter(x=[sweep.measured] * len(sweep.speedups), y=[ys[here] for ys in sweep.speedups.values()],
                             mode="markers", name="this machine", text=[RATIO_NAMES[m] for m in sweep.speedups],
                             marker=dict(color=OKABE_ITO["reddish purple"], symbol="star", size=13)))
    if point is not None:
        factor, pred = point
        fig.add_trace(go.Scatter(x=[factor * sweep.measured] * len(pred), y=list(pred.values()), mode="markers",
                                 name=f"drafters x{factor:.2g}", text=[RATIO_NAMES[m] for m in pred],
                                 marker=dict(color=OKABE_ITO["vermillion"], symbol="diamond-open", size=12)))
    on_top = " (top axis)" if sweep.smallest != sweep.drafter else ""
    marks = {name + (f": {sweep.smallest} at that cost{on_top}" if role == "smallest" else ""):
             sweep.position(r, role) for name, (r, role) in paper_ratios().items()}
    colors = (OKABE_ITO["bluish green"], OKABE_ITO["bluish green"], OKABE_ITO["blue"])
    for (name, x), color, dash in zip(marks.items(), colors, ("dot", "dash", "longdashdot")):
        fig.add_vline(x=x, line=dict(color=color, dash=dash), name=name, showlegend=True)
    fig.add_vline(x=sweep.measured, line=dict(color=OKABE_ITO["reddish purple"], dash="dashdot"),
                  annotation_text=f"this machine ({sweep.measured:.2f})", annotation_position="bottom right")
    xs = [*sweep.ratios, *marks.values(), *([point[0] * sweep.measured] if point else [])]
    span = [np.log10(min(xs) / 1.3), np.log10(max(xs) * 1.3)]
    fig.update_xaxes(type="log", range=span, title=f"{sweep.drafter}'s one-token step / the target's: the largest "
                                                   f"drafter's cost ratio c (one factor scales every drafter)")
    if sweep.smallest != sweep.drafter:  # the top axis: the smallest drafter's ratio at the same factor
        top = [v + np.log10(sweep.smallest_share) for v in span]
        low = min(min(ys) for ys in sweep.speedups.values())
        fig.add_trace(go.Scatter(x=[10 ** v for v in top], y=[low, low], xaxis="x2", mode="markers",
                                 name=f"{sweep.smallest}'s axis", marker=dict(opacity=0), showlegend=False,
                                 hoverinfo="skip"))
        fig.update_layout(xaxis2=dict(type="log", overlaying="x", side="top", range=top,
                                      title=f"{sweep.smallest}'s one-token step / the target's at the same factor"))
    fig.update_yaxes(title="predicted speedup over AR (EWIF, walltime)")
    fig.update_layout(title=title or f"{sweep.family}: the cost ratio decides whether the cascade pays",
                      hovermode="closest", margin=dict(t=120))
    return fig
