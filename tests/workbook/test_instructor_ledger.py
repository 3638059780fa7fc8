"""docs/INSTRUCTOR.md quotes the notebooks' measured numbers only through the last sweep's ledger.

Its ledger blocks are rebuilt from the committed ledger and must come out unchanged; every other
number in the guide is the paper's (it is in docs/REFERENCE.md) or one of a few kinds that are not
measurements of a run (named below)."""
import re
from pathlib import Path

from csd_lib.report.claims import read_ledger
from csd_lib.report.ledger_doc import _outside_blocks, render_blocks

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "INSTRUCTOR.md"
LEDGER = ROOT / "results" / "claims-ledger.jsonl"
SWEEP = {(f, s) for f in ("tiny-t5", "tiny-llama", "tiny-t5-paper") for s in range(1, 6)}
NOT_MEASURED = {  # number as written -> why it is not a run's measurement
    "2312.11462": "the paper's arXiv id",
    "2.7": "128 tokens over 48: the arithmetic of two exercise sizes",
    "95%": "the level of every interval",
    "0.1": "paper Fig. 2's late ceiling, and solution 01's dip threshold (its code)",
    "0.7": "paper Fig. 2's position-1 range", "0.8": "paper Fig. 2's position-1 range",
    "1.5%": "the tolerance notebook 05 asserts", "30%": "the tolerance notebook 05 asserts",
    "2%": "the tolerance solution 03 asserts", "0.02": "the threshold solution 01 prints by",
    "1.125": "the paper's Table 3 ratio 63.81 / 56.72", "0.3": "an exercise's chosen cost", "0.05": "an exercise's chosen cost", "4.6": "the paper's Corollary 4.6",
}
RUN_TIMES = re.compile(r"^\s*\| \d\d_\w+ \| ")  # rows of the run-times table (seconds and load averages)
EXERCISE = re.compile(r"^\d\d\.\d$")         # exercise ids such as 04.1


def test_the_guides_ledger_blocks_are_the_last_sweeps():
    rows = read_ledger(LEDGER)
    assert {(r["family"], r["seed"]) for r in rows} == SWEEP, "the committed ledger is not a full 15-set sweep"
    text = GUIDE.read_text(encoding="utf-8")
    assert "<!-- ledger:" in text
    assert render_blocks(text, rows) == text, ("docs/INSTRUCTOR.md's ledger blocks differ from the ledger: run "
                                               "python scripts/claims_table.py results/claims-ledger.jsonl --doc docs/INSTRUCTOR.md")


def test_no_number_outside_the_blocks_is_a_measurement():
    paper = set(re.findall(r"\d+\.\d+%?|\d+%", (ROOT / "docs" / "REFERENCE.md").read_text(encoding="utf-8")))
    stray = []
    for line in _outside_blocks(GUIDE.read_text(encoding="utf-8")).splitlines():
        if RUN_TIMES.match(line):
            continue
        for num in re.findall(r"\d+\.\d+%?|\d+%", line):
            if num not in NOT_MEASURED and num not in paper and not EXERCISE.match(num):
                stray.append((num, line.strip()[:80]))
    assert not stray, f"numbers quoted by hand (quote them through a ledger block): {stray}"
