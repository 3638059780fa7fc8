"""scripts/claims_sweep.sh: the plan it runs, and one clear error for bad arguments (nothing runs)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from csd_lib.report.claims import contradictions, ledger_table, read_ledger, record
from csd_lib.report.intervals import paired_difference

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "claims_sweep.sh"


def sweep(*args):
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def plan_lines(stdout):
    return [line for line in stdout.splitlines() if line.startswith(("run ", "skip "))]


def test_default_plan_is_the_three_tiny_families_on_seeds_1_to_5():
    r = sweep("--dry-run")
    assert r.returncode == 0, r.stderr
    sets = [line.split(":")[0].split(maxsplit=1)[1] for line in plan_lines(r.stdout)]
    assert sets == [f"{f} seed={s}" for f in ("tiny-t5", "tiny-llama", "tiny-t5-paper") for s in range(1, 6)]
    assert all(line.count(".ipynb") == len(list((ROOT / "notebooks").glob("*.ipynb"))) for line in plan_lines(r.stdout))
    assert r.stdout.splitlines()[-1] == "ledger (a fresh temporary file), then: python scripts/claims_table.py LEDGER"


def test_dry_run_names_the_ledger_and_creates_nothing(tmp_path):
    ledger = tmp_path / "claims.jsonl"
    r = sweep("--dry-run", "--seeds", "1", "--ledger", str(ledger))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].startswith(f"ledger {ledger}, then:") and not ledger.exists()


def test_verdict_counting_is_a_flag_and_its_maximum_is_checked():
    r = sweep("--dry-run", "--seeds", "1", "--max-verdicts", "5")
    assert r.returncode == 0, r.stderr
    assert "verdict phrases counted per set, at most 5" in r.stdout
    assert "verdict phrases" not in sweep("--dry-run", "--seeds", "1").stdout      # printed only when asked
    bad = sweep("--max-verdicts", "five")
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --max-verdicts needs a non-negative integer"


def test_skip_and_notebook_subset():
    r = sweep("--dry-run", "--families", "tiny-t5,tiny-llama", "--seeds", "1,2", "--skip", "tiny-t5:2,tiny-llama:1",
              "--notebooks", "00,07")
    assert r.returncode == 0, r.stderr
    lines = plan_lines(r.stdout)
    assert lines[0] == "run  tiny-t5 seed=1: notebooks/00_start_here.ipynb notebooks/07_lossless.ipynb"
    assert lines[1:3] == ["skip tiny-t5 seed=2", "skip tiny-llama seed=1"] and lines[3].startswith("run  tiny-llama seed=2:")


def test_test_sh_full_runs_two_prompt_sets_per_family():
    text = (ROOT / "scripts" / "test.sh").read_text()
    assert "claims_sweep.sh --families tiny-t5 --seeds 2" in text
    assert "claims_sweep.sh --families tiny-llama --seeds 1,3" in text


@pytest.mark.parametrize("args,says", [
    (["--seeds", "x"], "--seeds"), (["--seeds", "1,,2"], "--seeds"), (["--seeds"], "--seeds needs"),
    (["--families", "gpt2"], "embedded family"), (["--skip", "tiny-t5"], "FAMILY:SEED"),
    (["--skip", "nope:1"], "FAMILY:SEED"), (["--notebooks", "42"], "no single notebook"),
    (["--notebooks", "0"], "no single notebook"), (["--fast"], "unknown argument"),
    (["--ledger"], "--ledger needs"), (["--ledger", "/no/such/dir/claims.jsonl"], "existing directory"),
])
def test_bad_arguments_get_one_error_line(args, says):
    r = sweep(*args)  # no --dry-run: a bad argument must stop it before anything is set up or run
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and says in r.stderr


# -- the table after the sweep: claims x settings, and its contradictions (constructed ledgers) --

TABLE = ROOT / "scripts" / "claims_table.py"


def table(path):
    return subprocess.run([sys.executable, str(TABLE), str(path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def ledger(tmp_path, rows):
    path = tmp_path / "claims.jsonl"
    for claim, value, family, seed, *expected in rows:
        record(claim, value, "03_vertical_cascade", family_name=family, seed=seed,
               expected=expected[0] if expected else None, path=path)
    return path


UP = paired_difference([1, 2, 3, 4, 5, 6], [0] * 6)
DOWN = paired_difference([0] * 6, [1, 2, 3, 4, 5, 6])
FLAT = paired_difference([1, -2, 3, -4, 5, -6], [0] * 6)
FEW = paired_difference([1, 2], [0, 0])


def test_a_ledger_that_agrees_with_itself_passes_and_shows_every_setting(tmp_path):
    path = ledger(tmp_path, [("swi-up", UP, "tiny-t5", 1), ("swi-up", FLAT, "tiny-t5", 2), ("swi-up", FEW, "tiny-t5", 3),
                             ("swi-up", DOWN, "tiny-llama", 1),    # another family may differ: another regime
                             ("mag-rate", UP, "tiny-t5", 1, +1), ("decays", True, "tiny-t5", 2), ("k", 0.25, "tiny-t5", 1)])
    rows = read_ledger(path)
    assert contradictions(rows) == []
    text = ledger_table(rows).splitlines()
    assert text[0].split() == ["claim", "tiny-llama:1", "tiny-t5:1", "tiny-t5:2", "tiny-t5:3"]
    cells = {line.split()[0]: line.split()[1:] for line in text[1:]}
    assert cells["03_vertical_cascade/swi-up"] == ["-", "-3.5", "+", "+3.5", "=", "-0.5", "few", "+1.5"]
    assert cells["03_vertical_cascade/mag-rate"] == ["holds", "+3.5"] and cells["03_vertical_cascade/decays"] == ["holds"]
    r = table(path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "7 claims recorded; no contradiction" in r.stdout


def test_a_claim_turned_between_prompt_sets_or_broken_fails_the_table(tmp_path):
    path = ledger(tmp_path, [("swi-up", UP, "tiny-t5", 1), ("swi-up", DOWN, "tiny-t5", 4), ("swi-up", UP, "tiny-t5", 5),
                             ("mag-rate", DOWN, "tiny-llama", 2, +1), ("decays", False, "tiny-t5", 1)])
    bad = contradictions(read_ledger(path))
    assert "03_vertical_cascade/swi-up on tiny-t5: higher beyond the noise at seed 1, 5, lower beyond the noise at seed 4" in bad
    assert any(b.startswith("03_vertical_cascade/mag-rate is broken on tiny-llama seed 2: lower") for b in bad)
    assert any(b.startswith("03_vertical_cascade/decays is broken on tiny-t5 seed 1") for b in bad) and len(bad) == 3
    r = table(path)
    assert r.returncode == 1 and "3 contradictions:" in r.stdout and "BROKEN" in r.stdout


def test_the_table_says_what_is_wrong_with_a_bad_ledger(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = table(empty)
    assert r.returncode == 0 and "no claims recorded" in r.stdout
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"notebook": "x"}\n')
    r = table(broken)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "broken.jsonl:1 is not a claim row" in r.stderr
    broken.write_text('{"notebook": "x"}\nnot json\n')
    r = table(broken)
    assert r.returncode == 2 and "broken.jsonl:2 is not a JSON line" in r.stderr and len(r.stderr.splitlines()) == 1
    assert table(tmp_path / "missing.jsonl").returncode == 2
