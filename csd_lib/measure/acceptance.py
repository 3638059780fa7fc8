"""Acceptance tables from generations' stats: per (reviewer, proposer), the conditional acceptance per block
position, the one rule that fills the pairs a run never exercised, and measured seconds per call.
"""
from __future__ import annotations

import numpy as np

from ..engine.plan import MAG


def _nan_fill(values: list[float]) -> list[float]:
    """Fill unobserved positions (NaN) from the nearest observed neighbour, left first."""
    a = np.asarray(values, dtype=float)
    if np.all(np.isnan(a)):
        return [0.0] * len(a)
    idx = np.where(~np.isnan(a))[0]
    for i in np.where(np.isnan(a))[0]:
        left = idx[idx < i]
        a[i] = a[left[-1]] if left.size else a[idx[0]]
    return a.tolist()


def acceptance_table(stats: list[dict], min_reached: int = 3) -> dict:
    """{(reviewer, proposer): conditional acceptance per block position} pooled over generations.

    ``stats``: each generation's stats as a dict (``g.stats.to_dict()``, a bench record's ``stats``).

    Positions reached fewer than ``min_reached`` times take their nearest observed
    neighbour. The row ends with the pooled rate over all reached positions (the i.i.d.
    estimate), which ``ewif.predict_speedup`` repeats beyond the row: a candidate that
    drafts further than the runs did is priced with that, not with the last, thinly
    observed position.
    """
    pooled: dict[str, tuple[list[int], list[int]]] = {}
    for run in stats:
        for key, st in run["acceptance"].items():
            r, a = pooled.setdefault(key, ([], []))
            for i, (x, y) in enumerate(zip(st["reached"], st["accepted"])):
                while len(r) <= i:
                    r.append(0)
                    a.append(0)
                r[i] += x
                a[i] += y
    table = {}
    for key, (r, a) in pooled.items():
        reviewer, proposer = key.split("<-")
        cond = [y / x if x >= min_reached else float("nan") for x, y in zip(r, a)]
        tail = [sum(a) / sum(r)] if sum(r) else []
        table[(reviewer, proposer)] = _nan_fill(cond + tail)
    return table


def complete_table(table: dict, levels: list[str], default: float = 0.3) -> dict:
    """Give every (reviewer, lower level) pair a row, for pairs that the runs never exercised.

    A probe configuration may never let a level draft for some reviewer (e.g. MaG for the
    target when the neural drafters already fill the budget). Such a pair takes the
    proposer's row under another reviewer (the one with the lowest mean, when several were
    measured: what a proposer's tokens earn depends mostly on the proposer), else the
    worst row of that reviewer, else ``default``; the pessimistic fill keeps the ranking
    from favouring configurations nobody measured.
    """
    out = dict(table)
    for i, reviewer in enumerate(levels):
        seen = [v for (r, _), v in table.items() if r == reviewer]
        worst = min(seen, key=lambda v: v[0]) if seen else [default]
        for proposer in levels[i + 1:]:
            same = [v for (r, p), v in table.items() if p == proposer and r != reviewer]
            out.setdefault((reviewer, proposer), min(same, key=np.mean) if same else worst)
    return out


def latency_costs(stats: list[dict]) -> dict:
    """Measured seconds per forward call, relative to the target's (MaG costs 0); ``stats`` as
    :func:`acceptance_table` takes them."""
    calls: dict[str, int] = {}
    time_: dict[str, float] = {}
    for st in stats:
        for n, c in st["calls"].items():
            calls[n] = calls.get(n, 0) + c
            time_[n] = time_.get(n, 0.0) + st["forward_time"].get(n, 0.0)
    per = {n: time_[n] / calls[n] for n in calls if calls[n] and n != MAG}
    costs = {n: v / per["target"] for n, v in per.items()}
    costs[MAG] = 0.0
    return costs
