"""csd_lib.teach.ewif_explorer: the sliders redraw the figure through the Output widget's state."""
import pytest

from csd_lib.price import ewif
from csd_lib.teach.ewif_explorer import ewif_explorer
from csd_lib.viz.ewif import sd_vs_cascade_figure


def test_figure_holds_sd_and_the_cascade():
    fig = sd_vs_cascade_figure(0.8, 0.05, 0.5, k_max=12)
    assert fig.data[0].y[0] == ewif.ewif_sd(0.8, 1, 0.05)
    assert fig.data[1].y[2] == pytest.approx(ewif.ewif_vc(0.8, 0.5, 10, 3, 0.05, 0.0))
    assert len(fig.data[0].x) == 12


def test_moving_a_slider_redraws_the_output(monkeypatch):
    import csd_lib.teach.ewif_explorer as ex
    shown = []
    monkeypatch.setattr(ex, "show_in_output", lambda out, fig: shown.append((out, fig)))
    box = ewif_explorer()
    assert len(shown) == 1 and shown[0][0] is box.out
    box.sliders["alpha"].value = 0.6
    assert len(shown) == 2 and shown[1][1].data[0].y[0] == ewif.ewif_sd(0.6, 1, 0.05)
