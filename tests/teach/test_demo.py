"""csd_lib.teach.demo.run_demo: the README's first command, on one prompt of the embedded tiny-t5 family."""
import pytest

from csd_lib.price.tuned import machine_class, save_tuned
from csd_lib.teach.demo import DEMO_METHODS, run_demo


def test_run_demo_prints_identity_trace_and_table(capsys):
    summary = run_demo("tiny-t5", n_prompts=1, max_new_tokens=12)
    out, err = capsys.readouterr()
    # no tuned setting (tests/conftest.py): the demo says the command and its time, and asks nothing off a terminal
    assert f"K, k and policy: the preset (no tuned setting for machine class {machine_class()}; `python -m csd_lib " \
           f"tune --family tiny-t5` takes about " in err and "[y/N]" not in out + err
    assert list(summary) == DEMO_METHODS  # tiny-t5 has two drafters: staged runs too
    for m in DEMO_METHODS[1:]:
        assert summary[m]["n"] == 1 and summary[m]["mismatches"] == 0 and summary[m]["errors"] == 0
        assert f"  {m:<7} 1/1 prompts identical" in out
    assert out.startswith("family tiny-t5: target ")
    assert "Per-level provenance: " in out and "legend: " in out
    assert "\x1b[" not in out  # captured output is no terminal: no colour codes
    table = out[out.index("method "):].splitlines()
    assert [r.split()[0] for r in table[2:2 + len(DEMO_METHODS)]] == DEMO_METHODS
    lat = table[2 + len(DEMO_METHODS):]  # the latency block: its title, head, rule, one row per method
    assert lat[0].startswith("latency") and [r.split()[0] for r in lat[3:]] == DEMO_METHODS


@pytest.mark.slow  # a demo in its own process (about 20 s); the captured run above is the fast twin
def test_demo_into_a_file_has_no_colour_codes(tmp_path):
    """``demo > f``: the file holds text, not ANSI codes."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    with open(tmp_path / "f", "w") as f:
        r = subprocess.run([sys.executable, "-m", "csd_lib", "demo", "--n", "1", "--max-new-tokens", "8"], stdout=f,
                           stderr=subprocess.PIPE, text=True, cwd=root, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"})
    out = (tmp_path / "f").read_text()
    assert r.returncode == 0 and "legend: " in out and "\x1b[" not in out, r.stderr


def test_run_demo_uses_the_settings_tuned_for_this_machine_class(capsys):
    k = [[2, 3, 10], [0, 1, 10], [0, 0, 10]]
    path = save_tuned({"family": "tiny-t5", "machine_class": machine_class(), "date": "2026-12-07T23:00:00+00:00",
                       "csd": {"k": k, "lenience": 2.0, "draft_policy": "ewif", "confidence": None},
                       "sd": {"k": 6, "draft_policy": "ewif", "confidence": None}})
    summary = run_demo("tiny-t5", n_prompts=1, max_new_tokens=12)
    out, err = capsys.readouterr()
    assert f"K, k and policy: tuned on 2026-12-07 for machine class {machine_class()} ({path})" in err
    assert f"K={k}, lenience=2.0" in out
    assert all(summary[m]["mismatches"] == 0 for m in DEMO_METHODS[1:])
