"""Count the phrases that read a live comparison as a verdict ("no different beyond the noise", "not settled")
in executed notebooks' outputs, the appendix excluded.

Usage: python scripts/count_verdicts.py NOTEBOOK_OR_DIR... [--max N] [--label TEXT]
One line per notebook, then the total; with --max, exit 1 when the total is above N. Notebooks committed
without outputs count 0: point it at executed copies (jupyter nbconvert --execute --to notebook).
"""
import argparse
import json
import sys
from pathlib import Path

from csd_lib.report.words import verdict_phrases


def notebooks(paths) -> list[Path]:
    """The .ipynb files named or inside the folders named, sorted, without those whose name holds 'appendix'."""
    out = []
    for p in map(Path, paths):
        out += sorted(p.glob("*.ipynb")) if p.is_dir() else [p]
    return [p for p in out if "appendix" not in p.name]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="executed notebooks, or folders of them")
    ap.add_argument("--max", type=int, help="fail (exit 1) when the total is above this")
    ap.add_argument("--label", default="", help="a name for the set, printed with the total")
    args = ap.parse_args()
    found = notebooks(args.paths)
    missing = [p for p in found if not p.is_file()]
    if missing or not found:
        print(f"error: no notebook at {', '.join(map(str, missing)) or ' '.join(args.paths)}", file=sys.stderr)
        return 2
    total = 0
    for p in found:
        n = verdict_phrases(json.loads(p.read_text(encoding="utf-8")))
        total += n
        print(f"{p.name}: {n}")
    over = args.max is not None and total > args.max
    print(f"verdict phrases{' in ' + args.label if args.label else ''}: {total}"
          + (f" (more than {args.max})" if over else ""))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
