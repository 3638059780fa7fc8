"""Do two bench runs of one configuration agree under a competing load?

Starts one busy process per core, then runs the same short bench (default: tiny-t5, synth-gsm8k,
n 12, sd and csd, 48 new tokens, one torch thread) twice with ``--clock cpu`` and once with
``--clock wall``, all under that load, and prints each run's CSD-over-SD ratio (median over
examples of SD's time over CSD's, each example's fastest round, bootstrap 95% interval; SD's and
CSD's speedups over AR in the same round), its clock and load, and whether the two CPU-time runs' intervals overlap. The busy processes are
stopped at the end, also on an error. Meant to run on a loaded machine; about 5-8 minutes on 2 cores.

    python scripts/clock_check.py [--n 12] [--max-new-tokens 48] [--busy N] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's csd_lib, as `python -m csd_lib` in ROOT imports

from csd_lib.measure.records import read_records  # noqa: E402
from csd_lib.report.bench_stats import speedup_ratio  # noqa: E402
from csd_lib.report.summary import conditions_line, run_conditions  # noqa: E402

BUSY = "while True: pass"


def bench(args, clock: str, out: Path) -> list[dict]:
    cmd = [sys.executable, "-m", "csd_lib", "bench", "--family", args.family, "--task", args.task, "--n", str(args.n),
           "--methods", "sd,csd", "--max-new-tokens", str(args.max_new_tokens), "--threads", "1",
           "--clock", clock, "--costs", "none", "--out", str(out)]
    print(f"$ {' '.join(cmd[1:])}", flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True, timeout=args.timeout, stdout=sys.stdout, stderr=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    return read_records(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", default="tiny-t5")
    ap.add_argument("--task", default="synth-gsm8k")
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 1, help="competing busy processes (default: one per core)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds allowed to each bench run")
    ap.add_argument("--keep", default=None, help="write the three results files here instead of a temporary folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.busy)]
        print(f"competing load: {args.busy} busy process(es), pids {[p.pid for p in busy]}", flush=True)
        cis = {}
        try:
            for name, clock in (("cpu-1", "cpu"), ("cpu-2", "cpu"), ("wall", "wall")):
                recs = bench(args, clock, folder / f"{name}.jsonl")
                r, cis[name] = speedup_ratio(recs, recs)  # CSD over SD in one run
                print(f"{name}: CSD over SD {r:.2f} [{cis[name][0]:.2f}-{cis[name][1]:.2f}]; "
                      f"{conditions_line(run_conditions(recs))}", flush=True)
        finally:
            for p in busy:
                p.kill()
                p.wait()
    (lo1, hi1), (lo2, hi2) = cis["cpu-1"], cis["cpu-2"]
    overlap = max(lo1, lo2) <= min(hi1, hi2)
    print(f"the two --clock cpu runs' intervals {'overlap' if overlap else 'do NOT overlap'}: "
          f"[{lo1:.2f}-{hi1:.2f}] and [{lo2:.2f}-{hi2:.2f}]")
    return 0 if overlap else 1


if __name__ == "__main__":
    sys.exit(main())
