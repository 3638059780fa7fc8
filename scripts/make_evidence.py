"""Answer each lesson's question from the committed benchmark runs and write results/evidence.json.

Usage: python scripts/make_evidence.py [--out PATH] [--runs]   (default results/evidence.json, written atomically)
--runs first writes the missing run files of notebooks 05-08's questions under results/evidence/ (CSD at
lenience 1, drafter + MaG; report.evidence.make_lesson_runs: minutes on a CPU).
Each row: family, task, question, the difference with its 95% interval over the run's prompts, and the
verdict. tests/report/test_evidence.py recomputes the file from the runs and compares.
"""
import argparse
import sys
from pathlib import Path

from csd_lib import config
from csd_lib.fileio import write_atomic
from csd_lib.report.evidence import evidence_json, evidence_rows, make_lesson_runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=config.RESULTS_DIR / "evidence.json")
    ap.add_argument("--runs", action="store_true", help="write the missing run files under results/evidence/ first")
    args = ap.parse_args()
    if args.runs:
        for path in make_lesson_runs():
            print(f"run file {path}")
    rows = evidence_rows()
    if not rows:
        print(f"no committed benchmark run under {config.RESULTS_DIR}; run python -m csd_lib bench first", file=sys.stderr)
        return 1
    write_atomic(args.out, evidence_json(rows), "evidence file")
    print(f"wrote {len(rows)} answers to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
