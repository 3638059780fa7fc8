"""Words for measured numbers, so that notebook prose follows its own output: a direction from two
numbers (:func:`compare`, :func:`trend`), a share as a percentage, and K in the paper's notation."""
from __future__ import annotations

import math

from ..engine.plan import MAG


def compare(a: float, b: float, tol: float = 0.0, more: str = "higher", less: str = "lower",
            same: str = "about the same") -> str:
    """``more`` if a > b + tol, ``less`` if a < b - tol, else ``same`` (nan compares as ``same``)."""
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}; pass the size of a difference to ignore")
    if math.isnan(a) or math.isnan(b):
        return same
    if a > b + tol:
        return more
    if a < b - tol:
        return less
    return same


def trend(values, tol: float = 0.0, up: str = "rises", down: str = "falls", flat: str = "stays flat") -> str:
    """Direction of a sequence from its first value to the mean of the rest (nan entries skipped).

    ``tol`` is the change to ignore, so a curve that wobbles by less than ``tol`` "stays flat".
    """
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if len(vals) < 2:
        raise ValueError(f"trend needs at least two finite values, got {list(values)}; measure more positions")
    rest = sum(vals[1:]) / (len(vals) - 1)
    return compare(rest, vals[0], tol, more=up, less=down, same=flat)


def pct(x: float, digits: int = 0) -> str:
    """0.125 -> '12.5%' with ``digits`` decimals."""
    return f"{100 * x:.{digits}f}%"


def paper_k_entries(k, drafters: list[str]) -> list[dict]:
    """The entries of a K matrix in the paper's notation (Table 5: k11, k12, k22, ...).

    Args:
        k: the square K matrix of increments (row 0 = the target's review).
        drafters: the neural drafters' names, largest first; MaG is the last column.

    Returns one dict per entry on or above the diagonal: ``name`` (``k{row}{col}``, 1-based as
    in the paper), ``value``, ``reviewer`` (who reviews the block that row fills) and
    ``drafter`` (who drafts that segment, helped by the levels below it).
    """
    levels = list(drafters) + [MAG]
    n = len(levels)
    if len(k) != n or any(len(row) != n for row in k):
        raise ValueError(f"K must be {n}x{n} for drafters {levels}, got {k}; one row and column per level")
    reviewers = ["target"] + list(drafters)
    return [dict(name=f"k{i + 1}{j + 1}", value=k[i][j], reviewer=reviewers[i], drafter=levels[j])
            for i in range(n) for j in range(i, n)]


VERDICT_PHRASES = ("no different beyond the noise", "not settled")  # a live comparison read as a verdict


def verdict_phrases(notebook: dict) -> int:
    """How often :data:`VERDICT_PHRASES` occur in an executed notebook's outputs (its JSON, as a dict):
    text, stream and markdown/plain display data; sources are not read."""
    texts = []
    for cell in notebook.get("cells", []):
        for out in cell.get("outputs", []):
            texts.append(out.get("text", ""))
            data = out.get("data", {})
            texts += [data.get(kind, "") for kind in ("text/plain", "text/markdown", "text/html")]
    text = "\n".join("".join(t) if isinstance(t, list) else t for t in texts).lower()
    return sum(text.count(p) for p in VERDICT_PHRASES)
