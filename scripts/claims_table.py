"""The claims ledger of a sweep as a table of claims x settings, and its contradictions.

    python scripts/claims_table.py LEDGER
    python scripts/claims_table.py LEDGER --doc docs/INSTRUCTOR.md   (also rebuild the doc's ledger blocks)

LEDGER is the JSON-lines file that notebooks wrote with ``csd_lib.report.claims.record`` (env
CSD_CLAIMS_LEDGER). Prints one line per claim (notebook/claim id) and one column per setting
(family:seed), then the contradictions: a claim broken anywhere, or one claim higher beyond the
noise in one setting and lower beyond the noise in another of the same family. Exit status 1 when
there is any, 2 for a missing or malformed ledger, else 0 (an empty ledger included).
With --doc, every ``<!-- ledger: PATTERNS -->`` block of that file is rebuilt from the ledger
(csd_lib.report.ledger_doc) and the file rewritten atomically.
"""
import argparse
import sys

from csd_lib.fileio import write_atomic
from csd_lib.report.claims import contradictions, ledger_table, read_ledger
from csd_lib.report.ledger_doc import render_blocks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ledger", help="JSON-lines claims ledger (CSD_CLAIMS_LEDGER of the notebook runs)")
    ap.add_argument("--doc", help="a markdown file whose ledger blocks are rebuilt from LEDGER")
    args = ap.parse_args(argv)
    try:
        rows = read_ledger(args.ledger)
        if args.doc:
            with open(args.doc, encoding="utf-8") as f:
                doc = render_blocks(f.read(), rows)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.doc:
        write_atomic(args.doc, doc, what="--doc")
        print(f"rebuilt the ledger blocks of {args.doc}", file=sys.stderr)
    if not rows:
        print(f"no claims recorded in {args.ledger}")
        return 0
    print(ledger_table(rows))
    bad = contradictions(rows)
    print(f"\n{len(rows)} claims recorded; " + (f"{len(bad)} contradictions:" if bad else "no contradiction"))
    for line in bad:
        print(f"  {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
