"""The device forecast (``python -m csd_lib predict``, notebook 05): predicted speedup against draft length."""
from __future__ import annotations

from ..engine.mag import MATCH
from ..engine.methods import CSD, SD
from .palette import LEVEL_COLORS, OKABE_ITO, SERIES_DASHES, SERIES_SYMBOLS, level_color


def forecast_figure(res: dict, title: str | None = None):
    """Predicted speedup over AR against draft length k: SD with each drafter, the vertical cascade
    (largest drafter + MaG), and the best CSD K of the grid as a line; best points starred.

    ``res``: :func:`csd_lib.price.predict.predict_for_device`'s result. Colours: the palette's drafter colours
    (Okabe-Ito), and line styles besides, so the lines read without colour.
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    fig = go.Figure()
    series = {}
    for r in res["rows"]:
        if r["method"] == SD.name:
            series.setdefault((f"SD, {r['drafter']} drafts", r["drafter"], "solid"), []).append(r)
        elif r["method"] == "vertical":
            series.setdefault(("vertical: largest drafter + MaG", MATCH, "dash"), []).append(r)
    for n, ((name, level, dash), rows) in enumerate(series.items()):
        color = level_color(level) if level in LEVEL_COLORS else OKABE_ITO["black"]
        ks = [r["k"][0][0] for r in rows]
        # SD lines differ by dash and symbol too (one per drafter), not by colour alone
        fig.add_scatter(x=ks, y=[r["speedup"] for r in rows], mode="lines+markers", name=name,
                        line=dict(color=color, dash=dash if dash != "solid" else SERIES_DASHES[2 * n % 6]),
                        marker=dict(symbol=SERIES_SYMBOLS[n % len(SERIES_SYMBOLS)], size=7))
        b = max(rows, key=lambda r: r["speedup"])
        fig.add_scatter(x=[b["k"][0][0]], y=[b["speedup"]], mode="markers", showlegend=False,
                        marker=dict(size=13, symbol="star", color=color),
                        hovertemplate=f"best k={b['k'][0][0]}: %{{y:.2f}}x<extra></extra>")
    csd = res["best"]["csd"]
    fig.add_hline(y=csd["speedup"], line=dict(color=OKABE_ITO["vermillion"], dash="dot"),
                  annotation_text=f"CSD, best K {csd['k']}: {csd['speedup']:.2f}x")
    fig.add_hline(y=1.0, line=dict(color=OKABE_ITO["black"], dash="dot"), annotation_text="AR")
    fig.update_layout(title=title or f"Predicted speedup of {res['family']} on {res['device']}",
                      xaxis_title="k (tokens drafted per target review)", yaxis_title="predicted speedup over AR",
                      template="plotly_white")
    return fig


def batch_speedup_figure(res: dict, title: str | None = None, at: int | None = None):
    """Predicted speedup over AR at the same batch size against B, one line per method, the crossovers marked.

    ``res``: :func:`csd_lib.price.batch.predict_batches`' result; ``at``: a batch size to mark (a widget's). Each
    method takes the palette's series style (Okabe-Ito colour, dash and marker), so the lines read without colour;
    B on a log-2 axis.
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    from .palette import series_style
    fig = go.Figure()
    names = {"ar": "AR", "sd": "SD", "csd": "CSD"}
    for i, method in enumerate(names):
        rows = sorted((r for r in res["rows"] if r["method"] == method), key=lambda r: r["batch"])
        st = series_style(i)
        fig.add_scatter(x=[r["batch"] for r in rows], y=[r["speedup"] for r in rows], mode="lines+markers",
                        name=names[method], line=dict(color=st["color"], dash=st["dash"]),
                        marker=dict(symbol=st["symbol"], size=8, color=st["color"]),
                        hovertemplate=f"{names[method]}, B=%{{x}}: %{{y:.2f}}x<extra></extra>")
        x = res["crossover"].get(method, {}).get("bisect")
        if x is not None:
            fig.add_vline(x=x, line=dict(color=st["color"], dash="dot"),
                          annotation_text=f"{names[method]} crossover B≈{x:.1f}")
    if at is not None:
        fig.add_vline(x=at, line=dict(color=OKABE_ITO["black"], width=1), annotation_text=f"B = {at}",
                      annotation_position="bottom right")
    sat = "linear cost per token fed" if res["saturation"] == 1.0 else f"saturation {res['saturation']:g} tokens"
    fig.update_layout(title=title or f"Predicted speedup over AR at the same batch size ({sat})",
                      xaxis=dict(title="batch size B (rows per call)", type="log", dtick=0.30103),
                      yaxis_title="predicted speedup over AR at B", template="plotly_white")
    return fig


def review_cost_figure(cm, plans: dict, batches, saturation: float = 1.0, L=None, title: str | None = None):
    """Why the speedup falls with B: one round of SD and of the cascade priced in AR steps at the same B (the
    cost model's seconds of the round over those of AR's call of B x 1 tokens; the target's review feeds
    B x (k + 1)), beside the tokens a row keeps per round (flat in B). A method beats AR while its tokens per
    round stay above its round's cost; the lines cross at its crossover.

    ``cm``: a :class:`~csd_lib.price.costmodel.CostModel`; ``plans``: :func:`csd_lib.price.batch.batch_plans`'.
    Each method has its own colour and marker; costs are solid lines, tokens dotted and labelled at the right end,
    so the figure reads in greyscale.
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    from ..price.batch import ar_rate, method_rate
    from .palette import series_style
    fig = go.Figure()
    Bs = sorted(batches)
    for i, (method, name) in enumerate(((SD.name, "SD"), (CSD.name, "CSD")), start=1):
        st, p = series_style(i), plans[method]
        rates = [method_rate(method, cm, p, B, L, saturation) for B in Bs]
        steps = [r.round_seconds / ar_rate(cm, B, L, saturation).round_seconds for r, B in zip(rates, Bs)]
        fed = [B * (p["k"] + 1) for B in Bs] if method == SD.name else None
        fig.add_scatter(x=Bs, y=steps, mode="lines+markers", name=f"{name}: one round's cost, in AR steps",
                        line=dict(color=st["color"], dash="solid", width=2),
                        marker=dict(symbol=st["symbol"], size=8, color=st["color"]),
                        customdata=fed, hovertemplate=(f"{name}, B=%{{x}}: a round costs %{{y:.2f}} AR steps"
                                                       + (" (the review feeds %{customdata} tokens)" if fed else "")
                                                       + "<extra></extra>"))
        tokens = rates[0].tokens_per_round
        fig.add_scatter(x=[Bs[0], Bs[-1]], y=[tokens, tokens], mode="lines+text", name=f"{name}: tokens a row keeps per round",
                        line=dict(color=st["color"], dash="dot", width=2), text=["", f"{name} keeps {tokens:.2f}"],
                        textposition="top left", hoverinfo="skip")
    sat = "linear cost per token fed" if saturation == 1.0 else f"saturation {saturation:g} tokens"
    fig.update_layout(title=title or f"Why speculation stops paying: a round's cost against the tokens it keeps ({sat})",
                      xaxis=dict(title="batch size B (SD's review feeds B x (k + 1) tokens)", type="log", dtick=0.30103),
                      yaxis_title="AR steps (AR's call of B x 1 tokens = 1)", template="plotly_white",
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0))
    return fig


def batch_bench_figure(summary: dict, value: str = "tokens_per_s", title: str | None = None, methods=None):
    """A batch bench's measured medians against the batch size, each with its interval, and the cost model's
    prediction beside them; with ``value`` 'speedup' the line 1 (AR) and each method's measured crossover.

    ``summary``: a batch summary (``cells``: {method: {batch size: cell}}, ``crossover``: {method: {'estimate',
    'interval', 'sizes'}}; JSON keys accepted); ``methods``: those drawn (None: all). Each method keeps the palette's series style (colour, marker): the
    measured line solid with error bars, the predicted one dotted with open markers, so it reads in greyscale.
    """
    import math

    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    from ..engine.methods import REFERENCE
    from ..engine.methods import label as method_label
    from .palette import series_style
    if value not in ("tokens_per_s", "speedup"):
        raise ValueError(f"value is 'tokens_per_s' or 'speedup', got {value!r}")
    fig = go.Figure()
    methods = [m for m in summary["cells"] if (methods is None or m in methods)
               and (value == "tokens_per_s" or m != REFERENCE)]
    for i, m in enumerate(methods):
        st, name = series_style(i if value == "tokens_per_s" else i + 1), method_label(m).upper()
        cells = sorted(((int(B), c) for B, c in summary["cells"][m].items()), key=lambda x: x[0])
        Bs = [B for B, _ in cells]
        ys = [c[value] for _, c in cells]
        ci = [c.get(f"{value}_ci95") or [y, y] for (_, c), y in zip(cells, ys)]
        fig.add_scatter(x=Bs, y=ys, mode="lines+markers", name=f"{name}, measured (median)",
                        line=dict(color=st["color"], dash="solid", width=2),
                        marker=dict(symbol=st["symbol"], size=9, color=st["color"]),
                        error_y=dict(type="data", symmetric=False, array=[hi - y for (lo, hi), y in zip(ci, ys)],
                                     arrayminus=[y - lo for (lo, hi), y in zip(ci, ys)], color=st["color"]))
        pred = [c.get(f"predicted_{value}") for _, c in cells]
        if any(p is not None and math.isfinite(p) for p in pred):
            fig.add_scatter(x=Bs, y=pred, mode="lines+markers", name=f"{name}, predicted",
                            line=dict(color=st["color"], dash="dot", width=2),
                            marker=dict(symbol=f"{st['symbol']}-open", size=9, color=st["color"]))
        x = summary.get("crossover", {}).get(m, {}).get("estimate")
        if value == "speedup" and x is not None and math.isfinite(x):
            fig.add_vline(x=x, line=dict(color=st["color"], dash="dash"),
                          annotation_text=f"{name} crossover B≈{x:.1f}")
    if value == "speedup":
        fig.add_hline(y=1.0, line=dict(color="#000000", dash="dot"), annotation_text="AR")
    what = "tokens per second over the batch" if value == "tokens_per_s" else "speedup over AR at the same batch size"
    fig.update_layout(title=title or f"Measured {what} against the batch size (error bars: 95% interval)",
                      xaxis=dict(title="batch size B (rows per call)", type="log", dtick=0.30103),
                      yaxis_title=what, template="plotly_white",
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0))
    return fig
