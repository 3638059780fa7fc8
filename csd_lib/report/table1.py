"""The paper's Table 1 against the rows :func:`csd_lib.price.ewif.table1` computes: how far each cost model
lands, which one the paper's numbers follow, and how the paper's literal row fares.
"""
from __future__ import annotations


def gaps(t1: dict[str, list[dict]]) -> dict[str, tuple[float, float]]:
    """{cost model: (smallest, largest) relative difference to the paper's quoted EWIF} over the rows it quotes."""
    out = {}
    for cm, rows in t1.items():
        d = [r["rel_diff"] for r in rows if r["rel_diff"] is not None]
        if not d:
            raise ValueError(f"cost model {cm!r} has no row the paper quotes; pass ewif.table1(...) rows")
        out[cm] = (min(d), max(d))
    return out


def closest(t1: dict[str, list[dict]]) -> str:
    """The cost model whose largest miss (absolute relative difference) of the paper's numbers is smallest."""
    return min(gaps(t1).items(), key=lambda kv: max(abs(v) for v in kv[1]))[0]


def literal_row(t1: dict[str, list[dict]]) -> dict[tuple[str, str], tuple[float, float]]:
    """{(cost model, dataset): (EWIF of base on token 1 and small on tokens 2-3, EWIF of the better drafter
    alone)}: the paper's literal reading of its horizontal row against either drafter at its best k."""
    out = {}
    for cm, rows in t1.items():
        by = {(r["dataset"], r["drafters"]): r["ewif"] for r in rows}
        for ds in sorted({d for d, _ in by}):
            out[cm, ds] = (by[ds, "base1+small2"], max(by[ds, "base"], by[ds, "small"]))
    return out
