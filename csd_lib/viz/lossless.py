"""Lossless sampling figures (notebook 07): exact target law beside empirical laws."""
from __future__ import annotations

import numpy as np

from ..engine.generation import TARGET_CORRECTION
from .palette import LEVEL_COLORS, OKABE_ITO, bar_pattern

# the empirical laws: colours away from the target's orange, each with its own pattern
_EMPIRICAL = [(OKABE_ITO["blue"], "/"), (OKABE_ITO["black"], "."), (OKABE_ITO["sky blue"], "x"),
              (OKABE_ITO["reddish purple"], "\\")]


def sampling_figure(exact, empirical: dict[str, "list[float]"], n_tokens: int, vocab: int, top: int = 24,
                    title: str = "first tokens: exact target law vs samples"):
    """Bars of the most likely joint outcomes: the exact law beside empirical laws (with TV).

    The exact law is solid, each empirical law has its own colour and fill pattern (greyscale-safe).
    """
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    p = np.asarray(exact, dtype=float)
    idx = np.argsort(-p)[:top]
    names = ["-".join(map(str, np.unravel_index(int(i), (vocab,) * n_tokens))) for i in idx]
    fig = go.Figure()
    col = LEVEL_COLORS[TARGET_CORRECTION]
    fig.add_bar(x=names, y=p[idx], name="exact (target)",
                marker=dict(color=col, line=dict(color="#000000", width=1), pattern=bar_pattern("", col)))
    for c, (name, e) in enumerate(empirical.items()):
        e = np.asarray(e, dtype=float)
        tv = 0.5 * np.abs(e - p).sum()
        col, shape = _EMPIRICAL[c % len(_EMPIRICAL)]
        fig.add_bar(x=names, y=e[idx], name=f"{name} (TV {tv:.3f})",
                    marker=dict(color=col, line=dict(color="#000000", width=1), pattern=bar_pattern(shape, col)))
    fig.update_layout(title=title, barmode="group", xaxis_title=f"first {n_tokens} tokens (ids joined by '-')",
                      xaxis=dict(type="category", tickangle=-45), yaxis_title="probability",
                      yaxis_tickformat=".2f", template="plotly_white",
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0))
    return fig
