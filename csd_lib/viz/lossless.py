"""Lossless sampling figures (notebook 07): exact target law beside empirical laws."""
from __future__ import annotations

import numpy as np

from ..trace import TARGET_CORRECTION
from .palette import LEVEL_COLORS, OKABE_ITO


def sampling_figure(exact, empirical: dict[str, "list[float]"], n_tokens: int, vocab: int, top: int = 24,
                    title: str = "first tokens: exact target law vs samples"):
    """Bars of the most likely joint outcomes: the exact law beside empirical laws (with TV)."""
    import plotly.graph_objects as go  # plotly: imported when a figure is drawn
    p = np.asarray(exact, dtype=float)
    idx = np.argsort(-p)[:top]
    names = ["-".join(map(str, np.unravel_index(int(i), (vocab,) * n_tokens))) for i in idx]
    fig = go.Figure()
    fig.add_bar(x=names, y=p[idx], name="exact (target)", marker_color=LEVEL_COLORS[TARGET_CORRECTION])
    palette = [OKABE_ITO[c] for c in ("blue", "reddish purple", "sky blue", "black")]
    for c, (name, e) in enumerate(empirical.items()):
        e = np.asarray(e, dtype=float)
        tv = 0.5 * np.abs(e - p).sum()
        fig.add_bar(x=names, y=e[idx], name=f"{name} (TV {tv:.3f})", marker_color=palette[c % len(palette)])
    fig.update_layout(title=title, barmode="group", xaxis_title="first tokens (ids)",
                      yaxis_title="probability", template="plotly_white")
    return fig
