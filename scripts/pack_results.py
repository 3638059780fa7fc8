"""Pack the committed runs that only the reports read (Table 3 runs, runs of another machine class) as
``results/<name>.jsonl.gz``, so that the repository stays small enough to travel to a lent GPU machine.

    python scripts/pack_results.py            every results/*-trees.jsonl and results/<family>-<task>.<key>.jsonl
    python scripts/pack_results.py FILE ...   those files

Every reader (``read_records``, BENCHMARKS.md, notebook 08) takes a packed file where the plain one is
missing, and ``bench`` writes a packed run out again before it resumes it. Prints one line per file.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from csd_lib.measure.records import pack

ROOT = Path(__file__).resolve().parent.parent


def default_files(results: Path) -> list[Path]:
    """Table 3 runs and runs of another machine class (two dots in the name: ``<run>.<machine key>.jsonl``)."""
    return sorted({*results.glob("*-trees.jsonl"), *results.glob("*.*.jsonl")})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", type=Path, help="results files (default: the reports' runs in results/)")
    args = p.parse_args(argv)
    files = args.files or default_files(ROOT / "results")
    missing = [f for f in files if not f.is_file()]
    if missing:
        print(f"pack_results: not a file: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    for f in files:
        size = f.stat().st_size
        packed = pack(f)
        print(f"packed {f.name}: {size / 2 ** 20:.2f} MiB -> {packed.stat().st_size / 2 ** 20:.2f} MiB ({packed.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
