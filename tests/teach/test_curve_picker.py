"""Notebook 01's curve picker: every control redraws the figure in its Output, as widget state."""
import pytest

pytest.importorskip("ipywidgets")
from csd_lib.teach.curve_picker import curve_picker  # noqa: E402


def _curve(a):
    return {"unconditional": [a ** i for i in range(1, 6)], "conditional": [a] * 5, "alpha": a, "counts": [9] * 5}


CURVES = {("t1", "base"): _curve(0.9), ("t1", "small"): _curve(0.5), ("t2", "base"): _curve(0.8),
          ("t2", "small"): _curve(0.4)}


def _names(box):
    assert len(box.out.outputs) == 1  # the Output shows one figure, set as state
    return {tr.name for tr in box.figure.data if tr.name}, box.figure


def test_controls_redraw_the_chosen_curves():
    box = curve_picker(CURVES, ["base", "small"], ["t1", "t2"], "fam")
    names, _ = _names(box)
    assert any("base" in n for n in names) and any("small" in n for n in names)
    box.drafter.value = "small"
    names, shown = _names(box)
    assert names and all("base" not in n for n in names)
    box.task.value = "t2"
    assert box.figure.layout.title.text == "fam on t2"
    n_with = len(_names(box)[0])
    box.conditional.value = False
    assert len(_names(box)[0]) < n_with  # the conditional curves are gone


def test_missing_curves_are_named():
    with pytest.raises(ValueError, match="missing"):
        curve_picker({("t1", "base"): _curve(0.9)}, ["base", "small"], ["t1"], "fam")
