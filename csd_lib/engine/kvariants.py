"""K matrices derived from another: entries replaced by their paper names, the horizontal tail or MaG removed.

The one home of the K edits that notebooks 04 and 06 make. "base + MaG" (paper Table 2, the
committed ``-vertical`` runs) is :func:`csd_lib.engine.plan.vertical_k`; :func:`without_tail` keeps
the rows below the top one, so only the largest drafter drafts for the target, still helped by the
smaller ones.
"""
from __future__ import annotations

import re

from .plan import vertical_k

_NAME = re.compile(r"k(\d)(\d)$")


def k_with(k, **entries) -> list[list[int]]:
    """A copy of ``k`` with entries replaced by their names in the paper's notation (``k11`` is
    ``k[0][0]``, ``k23`` is ``k[1][2]``); a name outside the matrix or below its diagonal is a ValueError."""
    out = [list(row) for row in k]
    for name, value in entries.items():
        m = _NAME.match(name)
        i, j = (int(m.group(1)) - 1, int(m.group(2)) - 1) if m else (-1, -1)
        if not (0 <= i <= j < len(out)):
            raise ValueError(f"{name!r} is not an entry on or above the diagonal of this {len(out)}x{len(out)} K; "
                             f"use k11 .. k{len(out)}{len(out)}")
        out[i][j] = int(value)
    return out


def without_tail(k) -> list[list[int]]:
    """``k`` with the top row after its first entry set to 0: only the largest drafter drafts for the
    target (the horizontal cascade removed), the rows below unchanged."""
    out = [list(row) for row in k]
    out[0][1:] = [0] * (len(out[0]) - 1)
    return out


def without_mag(k) -> list[list[int]]:
    """``k`` with MaG's column (the last) set to 0 in every row: the smallest neural drafter drafts alone."""
    return [list(row[:-1]) + [0] for row in k]


def variants(k) -> dict[str, list[list[int]]]:
    """The default K, the K without the horizontal tail and the K without MaG, by name."""
    return {"default K": [list(r) for r in k], "vertical only": without_tail(k), "no MaG": without_mag(k)}


def base_mag_k(family, task: str | None = None) -> list[list[int]]:
    """K of paper Table 2's "base + MaG" run, as the committed ``-vertical`` results ran it:
    :func:`~csd_lib.engine.plan.vertical_k` at SD's draft length for ``task`` (``family.sd_k_for``)."""
    return vertical_k(family.sd_k_for(task), len(family.drafters) + 1, family.mag.n)
