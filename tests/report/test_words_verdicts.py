"""Verdict phrases are counted in an executed notebook's outputs only, and the checker script skips the appendix."""
import json
import subprocess
import sys

from csd_lib.report.words import verdict_phrases

NB = {"cells": [
    {"cell_type": "code", "source": ["print('no different beyond the noise')"],
     "outputs": [{"output_type": "stream", "name": "stdout", "text": ["SWI: no different beyond the noise (+1 [-1, 2])\n"]}]},
    {"cell_type": "code", "source": [], "outputs": [{"output_type": "display_data",
                                                     "data": {"text/markdown": "* a: Not settled\n* b: not settled beyond the noise"}}]},
    {"cell_type": "markdown", "source": ["not settled in the prose is not counted"]}]}


def test_phrases_are_counted_in_outputs_not_in_sources():
    assert verdict_phrases(NB) == 3
    assert verdict_phrases({"cells": [dict(c, outputs=[]) for c in NB["cells"] if c["cell_type"] == "code"]}) == 0


def test_the_checker_prints_each_notebook_skips_the_appendix_and_enforces_a_maximum(tmp_path):
    for name in ("01_a.ipynb", "02_b.ipynb", "09_appendix_x.ipynb"):
        (tmp_path / name).write_text(json.dumps(NB), encoding="utf-8")
    run = lambda *a: subprocess.run([sys.executable, "scripts/count_verdicts.py", str(tmp_path), *a],  # noqa: E731
                                    capture_output=True, text=True)
    ok = run("--label", "tiny-t5 seed 0")
    assert ok.returncode == 0 and ok.stdout.splitlines() == ["01_a.ipynb: 3", "02_b.ipynb: 3", "verdict phrases in tiny-t5 seed 0: 6"]
    over = run("--max", "5")
    assert over.returncode == 1 and "more than 5" in over.stdout
    assert run("--max", "6").returncode == 0
    missing = subprocess.run([sys.executable, "scripts/count_verdicts.py", str(tmp_path / "nothing.ipynb")], capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.startswith("error:")
