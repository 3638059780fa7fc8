"""The claims ledger of a sweep as a table of claims x settings, and its contradictions.

    python scripts/claims_table.py LEDGER

LEDGER is the JSON-lines file that notebooks wrote with ``csd_lib.report.claims.record`` (env
CSD_CLAIMS_LEDGER). Prints one line per claim (notebook/claim id) and one column per setting
(family:seed), then the contradictions: a claim broken anywhere, or one claim higher beyond the
noise in one setting and lower beyond the noise in another of the same family. Exit status 1 when
there is any, 2 for a missing or malformed ledger, else 0 (an empty ledger included).
"""
import argparse
import sys

from csd_lib.report.claims import contradictions, ledger_table, read_ledger


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ledger", help="JSON-lines claims ledger (CSD_CLAIMS_LEDGER of the notebook runs)")
    args = ap.parse_args(argv)
    try:
        rows = read_ledger(args.ledger)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
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
