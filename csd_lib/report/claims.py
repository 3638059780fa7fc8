"""Claims of the notebooks: a verdict to print, and the ledger that lines claims up across settings.

A notebook states a measured direction through :mod:`csd_lib.report.intervals` and, where the lesson
expects one, prints its verdict on this run with :func:`expect` or :func:`holds`: a live run on a few
prompts illustrates and may disagree, so neither ever raises (laws are asserted by the notebooks
directly). Each claim can be written to a ledger (:func:`record`), one JSON line, for the claims sweep
(``scripts/claims_sweep.sh``). No model is loaded here; the ledger is the only I/O.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np

from .. import config
from ..fileio import read_jsonl
from .intervals import BROKEN, FEW, HIGHER, HOLDS, LOWER, SAME, UNDEFINED, UNSETTLED, Difference

NOT_CHECKED = "not checked: random weights"  # a claim about trained models, on a family with random weights
NOT_THIS_TIME = "not this time"  # a live run that disagrees with a claim: printed, never raised


def expect(d: Difference, expected: int, what: str, family=None, claim: str | None = None,
           notebook: str | None = None, data: dict | None = None) -> str:
    """The verdict of a claim with a direction on this run, to print; never raises.

    ``holds`` when ``d`` is beyond the noise in the ``expected`` direction (+1 higher, -1 lower);
    ``not this time: WHAT (interval)`` when it is beyond the noise the other way: a live run on a few
    prompts illustrates a lesson and may disagree with the evidence, it does not stop the notebook;
    else ``not settled``, ``too few`` or ``undefined``. On a family with random weights
    (:attr:`Family.random_weights`) the verdict is :data:`NOT_CHECKED`. With ``claim`` and ``notebook``
    the verdict is written to the ledger (:func:`record`, with ``expected``; ``data`` as there)."""
    _record_checked(claim, d, notebook, family, data, expected=expected)
    if family is not None and family.random_weights:
        return NOT_CHECKED
    v = d.claim(expected)
    return f"{NOT_THIS_TIME}: {what} ({d.interval()})" if v == BROKEN else v


def holds(condition: bool, what: str, family=None, claim: str | None = None, notebook: str | None = None,
          data: dict | None = None) -> str:
    """The verdict of a claim about trained models on this run, to print; never raises.

    ``'holds'``, or ``'not this time: WHAT'`` when ``condition`` is false: a live statistic illustrates,
    it never stops a notebook. Laws (identity with AR, exact sampling, lenience never rejecting what
    the strict review accepts) are asserted directly, never through this. On a family with random
    weights (shadow checkpoints, toy models) the verdict is :data:`NOT_CHECKED`. With ``claim`` and
    ``notebook`` the verdict is written to the ledger (:func:`record`; ``data`` as there).
    """
    _record_checked(claim, bool(condition), notebook, family, data, what=what)
    if family is not None and family.random_weights:
        return NOT_CHECKED
    return HOLDS if condition else f"{NOT_THIS_TIME}: {what}"


def _record_checked(claim, value, notebook, family, data, expected=None, what: str = "") -> None:
    """The ledger row of a claim that ``holds`` or ``expect`` checks (NOT_CHECKED when ``family``'s weights
    are random), under the run's setting (``config.FAMILY``, ``config.SEED``: the family a side check
    loads is not the setting); nothing without ``claim`` and ``notebook``, which come together."""
    if (claim is None) != (notebook is None):
        raise ValueError(f"pass claim and notebook together to record the claim in the ledger, or neither; "
                         f"got claim={claim!r}, notebook={notebook!r}")
    if claim is None:
        return
    row = claim_row(claim, value, notebook, expected=expected, data=data)
    if family is not None and family.random_weights:
        row.update(verdict=NOT_CHECKED, text=f"{NOT_CHECKED}; measured {row['text']}")
    elif row["verdict"] == BROKEN and what:
        row.update(text=f"broken: {what}")
    _append(row)


# -- the claims ledger: every computed claim of a notebook run, one JSON line each --------------
#
# ``record`` appends one line per claim to ``config.CLAIMS_LEDGER`` (env CSD_CLAIMS_LEDGER; unset:
# nothing is written), so that a sweep over families and prompt sets can line the same claim up
# across settings (``ledger_table``) and find where it turns (``contradictions``).

LEDGER_FIELDS = ("notebook", "claim", "family", "seed", "value", "lo", "hi", "n", "level", "direction",
                 "verdict", "text", "data")
_CLAIM_ID = re.compile(r"^[A-Za-z0-9_.:+-]+$")
MEASURED = "measured"  # the verdict of a plain number: no direction


def _finite_or_none(x) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _check_data(data) -> dict:
    """``data``: what a claim was judged at (e.g. ``{"position": 10}``), names to JSON scalars."""
    if data is None:
        return {}
    scalar = (str, int, float, bool, np.integer, np.floating, type(None))
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, scalar) for k, v in data.items()):
        raise ValueError(f"data must map names to numbers, strings, booleans or None (what the claim was judged at), "
                         f"got {data!r}")
    return {k: v.item() if isinstance(v, (np.integer, np.floating)) else v for k, v in data.items()}


def claim_row(claim_id: str, value, notebook: str, family_name: str | None = None, seed: int | None = None,
              expected: int | None = None, data: dict | None = None) -> dict:
    """One ledger row (fields ``LEDGER_FIELDS``) for a claim; ``family_name`` and ``seed`` default to
    ``config.FAMILY`` and ``config.SEED``.

    ``value`` is a :class:`Difference` (verdict ``Difference.verdict``, or ``Difference.claim(expected)``
    when an ``expected`` direction is given; ``direction`` its sign), a bool (a claim asserted: ``holds``
    or ``broken``) or a number (``measured``, no direction). NaN and infinities are written as null.
    ``data`` holds what the claim was judged at (e.g. the position), so that its id stays the same
    across prompt sets.
    """
    if not isinstance(claim_id, str) or not _CLAIM_ID.match(claim_id):
        raise ValueError(f"claim_id must be a non-empty name of letters, digits and _.:+- (no spaces), "
                         f"got {claim_id!r}")
    if not isinstance(notebook, str) or not notebook:
        raise ValueError(f"notebook must name the notebook that makes the claim, got {notebook!r}")
    row = dict(notebook=notebook, claim=claim_id, family=config.FAMILY if family_name is None else str(family_name),
               seed=config.SEED if seed is None else int(seed), value=None, lo=None, hi=None, n=None,
               level=None, direction=None, verdict=MEASURED, text="", data=_check_data(data))
    if isinstance(value, Difference):
        row.update(value=_finite_or_none(value.estimate), lo=_finite_or_none(value.lo), hi=_finite_or_none(value.hi),
                   n=value.n, level=value.level, direction=value.sign,
                   verdict=value.verdict if expected is None else value.claim(expected), text=value.says())
    elif expected is not None:
        raise ValueError(f"expected applies to a Difference, got {type(value).__name__}; record the Difference")
    elif isinstance(value, (bool, np.bool_)):
        row.update(verdict=HOLDS if value else BROKEN, text="holds" if value else "broken")
    elif isinstance(value, (int, float, np.integer, np.floating)):
        row.update(value=_finite_or_none(float(value)), text=f"{float(value):.6g}")
    else:
        raise ValueError(f"value must be a Difference, a bool or a number, got {type(value).__name__}")
    return row


def _append(row: dict, path=None) -> None:
    """Append ``row`` to the ledger at ``path`` (default ``config.CLAIMS_LEDGER``; None: nothing is written),
    in one ``os.write`` of the whole line to a file opened for appending, so that notebooks running in
    parallel never interleave their lines."""
    path = config.CLAIMS_LEDGER if path is None else path
    if path:
        line = (json.dumps(row, allow_nan=False) + "\n").encode("utf-8")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.write(fd, line) != len(line):
                raise OSError(f"short write to the claims ledger {path}")
        finally:
            os.close(fd)


def record(claim_id: str, value, notebook: str, family_name: str | None = None, seed: int | None = None,
           expected: int | None = None, path=None, data: dict | None = None) -> dict:
    """Append the claim's row (:func:`claim_row`) to the ledger at ``path`` (default
    ``config.CLAIMS_LEDGER``; None: nothing is written) and return it."""
    row = claim_row(claim_id, value, notebook, family_name, seed, expected, data)
    _append(row, path)
    return row


def read_ledger(path) -> list[dict]:
    """Every row of a ledger file, in order (blank lines skipped), read by :func:`csd_lib.fileio.read_jsonl`."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"no claims ledger at {p}; run the notebooks with CSD_CLAIMS_LEDGER={p}")
    rows = []
    for i, row in read_jsonl(p, "claims ledger", "the ledger holds one claim per line", item="a JSON line"):
        if not isinstance(row, dict) or any(f not in row for f in LEDGER_FIELDS):
            raise ValueError(f"{p}:{i} is not a claim row: it needs the fields {', '.join(LEDGER_FIELDS)}")
        rows.append(row)
    return rows


_CELL = {HIGHER: "+", LOWER: "-", SAME: "=", UNSETTLED: "=", FEW: "few", UNDEFINED: "n/a", HOLDS: "holds",
         BROKEN: "BROKEN", MEASURED: "", NOT_CHECKED: "n/c"}


def _cell(row: dict) -> str:
    word = _CELL.get(row["verdict"], row["verdict"])
    val = "" if row["value"] is None else f"{row['value']:+.3g}" if row["direction"] is not None else f"{row['value']:.3g}"
    return " ".join(w for w in (word, val) if w) or "-"


def ledger_table(rows: list[dict]) -> str:
    """Claims (notebook/claim, one line each) by settings (family:seed, one column each), as text.

    A cell is the verdict (``+`` higher, ``-`` lower, ``=`` no difference beyond the noise, ``few``
    too few prompts, ``n/a`` undefined, ``holds``/``BROKEN`` for a claim with an expected direction, ``n/c``
    not checked on random weights) and the value; the last row of a claim in a setting wins.
    """
    settings = sorted({(r["family"], r["seed"]) for r in rows}, key=lambda s: (s[0], s[1]))
    claims = sorted({(r["notebook"], r["claim"]) for r in rows})
    cells = {((r["notebook"], r["claim"]), (r["family"], r["seed"])): _cell(r) for r in rows}
    head = ["claim"] + [f"{f}:{s}" for f, s in settings]
    body = [[f"{nb}/{c}"] + [cells.get(((nb, c), s), "") for s in settings] for nb, c in claims]
    widths = [max(len(line[j]) for line in [head] + body) for j in range(len(head))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() for line in [head] + body)


def contradictions(rows: list[dict]) -> list[str]:
    """What a sweep must not show: a claim ``broken`` anywhere, or one claim (notebook and claim id) higher
    beyond the noise in one setting and lower beyond the noise in another of the same family."""
    out = [f"{r['notebook']}/{r['claim']} is broken on {r['family']} seed {r['seed']}: {r['text']}"
           for r in rows if r["verdict"] == BROKEN]
    seen: dict[tuple, dict[int, list]] = {}
    for r in rows:
        if r["direction"] in (1, -1):
            seen.setdefault((r["notebook"], r["claim"], r["family"]), {}).setdefault(r["direction"], []).append(r["seed"])
    for (nb, c, fam), by in sorted(seen.items()):
        if 1 in by and -1 in by:
            up, down = (", ".join(str(s) for s in sorted(set(by[d]))) for d in (1, -1))
            out.append(f"{nb}/{c} on {fam}: higher beyond the noise at seed {up}, lower beyond the noise at seed {down}")
    return out
