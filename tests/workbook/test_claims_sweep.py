"""scripts/claims_sweep.sh: the plan it runs, and one clear error for bad arguments (nothing runs)."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "claims_sweep.sh"


def sweep(*args):
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_default_plan_is_both_families_on_seeds_1_to_5():
    r = sweep("--dry-run")
    assert r.returncode == 0, r.stderr
    sets = [line.split(":")[0].split(maxsplit=1)[1] for line in r.stdout.splitlines()]
    assert sets == [f"{f} seed={s}" for f in ("tiny-t5", "tiny-llama") for s in range(1, 6)]
    assert all(line.count(".ipynb") == len(list((ROOT / "notebooks").glob("*.ipynb"))) for line in r.stdout.splitlines())


def test_skip_and_notebook_subset():
    r = sweep("--dry-run", "--families", "tiny-t5,tiny-llama", "--seeds", "1,2", "--skip", "tiny-t5:2,tiny-llama:1",
              "--notebooks", "00,07")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "run  tiny-t5 seed=1: notebooks/00_start_here.ipynb notebooks/07_lossless.ipynb"
    assert lines[1:3] == ["skip tiny-t5 seed=2", "skip tiny-llama seed=1"] and lines[3].startswith("run  tiny-llama seed=2:")


def test_test_sh_full_runs_two_prompt_sets_per_family():
    text = (ROOT / "scripts" / "test.sh").read_text()
    assert "claims_sweep.sh --families tiny-t5 --seeds 2" in text
    assert "claims_sweep.sh --families tiny-llama --seeds 1,3" in text


@pytest.mark.parametrize("args,says", [
    (["--seeds", "x"], "--seeds"), (["--seeds", "1,,2"], "--seeds"), (["--seeds"], "--seeds needs"),
    (["--families", "gpt2"], "embedded family"), (["--skip", "tiny-t5"], "FAMILY:SEED"),
    (["--skip", "nope:1"], "FAMILY:SEED"), (["--notebooks", "9"], "no single notebook"),
    (["--notebooks", "0"], "no single notebook"), (["--fast"], "unknown argument"),
])
def test_bad_arguments_get_one_error_line(args, says):
    r = sweep(*args)  # no --dry-run: a bad argument must stop it before anything is set up or run
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and says in r.stderr
