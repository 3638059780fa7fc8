"""Glossary links stay in the page (an HTML export keeps no link into another notebook), and every
notebook's glossary rows are notebook 00's, word for word."""
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
OWN_GLOSSARY = tuple(sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")))  # every notebook has an in-page glossary


def _markdown(name: str) -> list[str]:
    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


def _glossary_rows(name: str) -> list[str]:
    cell = next((m for m in _markdown(name) if '<a id="glossary"></a>' in m), None)
    assert cell is not None, f"{name} has no glossary cell with <a id=\"glossary\"></a>"
    return [ln for ln in cell.splitlines() if ln.startswith("| ") and not ln.startswith("| term ")]


@pytest.mark.parametrize("name", OWN_GLOSSARY)
def test_glossary_links_stay_in_the_page(name):
    text = "\n".join(_markdown(name))
    assert not re.search(r"\]\([^)]*\.ipynb#glossary\)", text), f"{name} links into another notebook's glossary"
    assert "](#glossary)" in text and len(_glossary_rows(name)) >= 5


@pytest.mark.parametrize("name", OWN_GLOSSARY[1:])
def test_glossary_rows_are_notebook_00s(name):
    ours = set(_glossary_rows("00_start_here"))
    stray = [row for row in _glossary_rows(name) if row not in ours]
    assert not stray, f"{name}'s glossary rows differ from notebook 00's: {stray}"
