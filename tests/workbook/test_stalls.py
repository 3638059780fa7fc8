"""Notebooks with widgets run headless without a stall (scripts/stall_check.py)."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "stall_check.py"


def run(*args, timeout):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


@pytest.mark.parametrize("args, says", [
    (["--families", "tiny-nope"], "'tiny-nope' is not an embedded family"),
    (["--notebooks", "42"], "'42' names 0 notebooks"),
    (["--runs", "0"], "--runs must be at least 1, got 0"),
    (["--cell-timeout", "-1"], "--cell-timeout and --max-lag must be positive"),
])
def test_bad_arguments_are_refused_before_any_kernel_starts(args, says):
    p = run(*args, timeout=60)
    assert p.returncode == 2 and says in p.stderr, p.stderr


@pytest.mark.slow
def test_notebooks_00_and_01_never_stall_on_either_family():
    """One headless execution of 00 and 01 per family, each cell under 60 s and answered on time.

    A stall (the client still waiting for an execute reply the kernel sent long ago) fails here,
    with the script's per-execution lines in the message. One run each: the full tier executes 00 and
    01 four more times per notebook (the site build, the claims sweep's three sets), each cell under a
    240 s limit, and the on-demand check (README: 30 runs each) hunts the rare stall.
    """
    p = run("--notebooks", "00,01", "--families", "tiny-t5,tiny-llama", "--runs", "1", "--cell-timeout", "60",
            timeout=3600)
    summary = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    assert p.returncode == 0 and summary.startswith("summary: 4 executions, 0 with a stall, 0 failed"), \
        p.stdout + p.stderr[-3000:]
