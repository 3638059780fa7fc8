"""csd_lib.teach.demo.run_demo: the README's first command, on one prompt of the embedded tiny-t5 family."""
import pytest

from csd_lib.teach.demo import DEMO_METHODS, run_demo


def test_run_demo_prints_identity_trace_and_table(capsys):
    summary = run_demo("tiny-t5", n_prompts=1, max_new_tokens=12)
    out = capsys.readouterr().out
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
