"""Numbers a document quotes from a claims ledger, rendered into the document between markers.

A document (docs/INSTRUCTOR.md) asks for claims with a marker line naming them by pattern::

    <!-- ledger: 01/conditional-change-* 03/lenience-* -->
    ...generated table...
    <!-- /ledger -->

:func:`render_blocks` rewrites every block from the ledger of the last sweep
(:func:`csd_lib.report.claims.read_ledger`), so a quoted number is always one the notebooks
recorded; a test re-renders the committed document and compares.
"""
from __future__ import annotations

import fnmatch
import re

_BLOCK = re.compile(r"(<!-- ledger: (?P<patterns>[^>]*?) -->\n)(?P<body>.*?)(<!-- /ledger -->)", re.S)


def _seeds(seeds) -> str:
    """'1-5' for a run of seeds, else '1, 3'."""
    s = sorted(set(seeds))
    return f"{s[0]}-{s[-1]}" if len(s) > 2 and s == list(range(s[0], s[-1] + 1)) else ", ".join(map(str, s))


def _verdicts(rows: list[dict]) -> str:
    """'lower at 4 of 5 seeds, no difference at 1' (verdicts by how often, most often first)."""
    count: dict[str, int] = {}
    for r in rows:
        count[r["verdict"]] = count.get(r["verdict"], 0) + 1
    order = sorted(count.items(), key=lambda kv: (-kv[1], kv[0]))
    head, rest = order[0], order[1:]
    return (f"{head[0]} at {head[1]} of {len(rows)} seeds" + "".join(f", {w} at {n}" for w, n in rest))


def _values(rows: list[dict]) -> str:
    """'-0.016 [-0.022, -0.009]' for one seed; 'from -0.020 to -0.011' over several (values only)."""
    vals = [r["value"] for r in rows if r["value"] is not None]
    if not vals:
        return "n/a"
    if len(rows) == 1:
        r = rows[0]
        ci = f" [{r['lo']:+.3f}, {r['hi']:+.3f}]" if r["lo"] is not None and r["hi"] is not None else ""
        return f"{r['value']:+.3f}{ci}"
    lo, hi = f"{min(vals):+.3f}", f"{max(vals):+.3f}"
    return f"{lo} at every seed" if lo == hi else f"from {lo} to {hi}"


def quoted_rows(rows: list[dict], patterns: list[str]) -> list[dict]:
    """The ledger rows whose ``notebook/claim`` matches one of ``patterns`` (fnmatch)."""
    return [r for r in rows if any(fnmatch.fnmatchcase(f"{r['notebook']}/{r['claim']}", p) for p in patterns)]


def ledger_block(rows: list[dict], patterns: list[str]) -> str:
    """A markdown table of the claims matching ``patterns``: per claim and family, the seeds, the verdicts
    and the range of values; the last row of a claim in a setting wins, as in the ledger table."""
    last: dict[tuple, dict] = {}
    for r in quoted_rows(rows, patterns):
        last[(r["notebook"], r["claim"], r["family"], r["seed"])] = r
    if not last:
        raise ValueError(f"the ledger holds no claim matching {' '.join(patterns)}")
    groups: dict[tuple, list[dict]] = {}
    for (nb, c, fam, _), r in sorted(last.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], kv[0][3] or 0)):
        groups.setdefault((nb, c, fam), []).append(r)
    lines = ["| claim | family | seeds | verdicts | values (95% intervals in the notebooks) |", "|---|---|---|---|---|"]
    for (nb, c, fam), rs in groups.items():
        lines.append(f"| `{nb}/{c}` | {fam} | {_seeds(r['seed'] for r in rs)} | {_verdicts(rs)} | {_values(rs)} |")
    return "\n".join(lines) + "\n"


def render_blocks(text: str, rows: list[dict]) -> str:
    """``text`` with every ledger block rebuilt from ``rows``."""
    if not _BLOCK.search(text):
        raise ValueError("no '<!-- ledger: PATTERNS -->' ... '<!-- /ledger -->' block in the document")
    return _BLOCK.sub(lambda m: m.group(1) + ledger_block(rows, m.group("patterns").split()) + m.group(4), text)


def _outside_blocks(text: str) -> str:
    """``text`` without its ledger blocks (what a test checks for numbers quoted by hand)."""
    return _BLOCK.sub("", text)
