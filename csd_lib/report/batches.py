"""The summary of a batch bench (:mod:`csd_lib.measure.batch_bench`): tokens/s over the batch and the speedup over
AR per method and batch size, each a median over batches with its interval, the measured crossover batch size
with its interval, per-row latency, mismatches, and the cost model's prediction beside each cell.

The crossover (:func:`measured_crossover`) is where the median per-batch speedup over AR, interpolated linearly in
log2 of the batch size between the sizes measured, first falls to 1; its interval is the percentile bootstrap of
that crossing over the batches resampled within each size (a resample that never falls to 1 counts as beyond
the largest size measured).
"""
from __future__ import annotations

import math

import numpy as np

from ..engine.methods import REFERENCE
from ..measure.records import ALL_METHODS
from ..price.batch import predict_bench_batches
from .bench_stats import (LATENCY_QUANTILES, bootstrap_median_ci, bootstrap_quantiles, percentile_interval,
                          resamples)

N_BOOT = 2000


def _rounds(records) -> dict[tuple[str, int], dict[int, list[dict]]]:
    """{(method, batch size): {batch: its rows' lines}}, error lines skipped."""
    out: dict[tuple[str, int], dict[int, list[dict]]] = {}
    for r in records:
        if "error" not in r and "batch_size" in r:
            out.setdefault((r["method"], r["batch_size"]), {}).setdefault(r["batch"], []).append(r)
    return out


def _median_ci(values) -> tuple[float, list[float]]:
    v = [x for x in values if x is not None and math.isfinite(x)]
    return (float(np.median(v)) if v else math.nan), bootstrap_median_ci(v, N_BOOT)


def crossing(sizes, speedups) -> float:
    """The batch size where ``speedups`` (one per size, ascending sizes) first fall to 1 or below, interpolated
    linearly in log2 of the size between the last size above 1 and the first at or below it; 1 for a first size at
    or below 1 (the smallest measured, if that is 1); inf when none falls to 1."""
    for j, (B, s) in enumerate(zip(sizes, speedups)):
        if s <= 1.0:
            if j == 0:
                return float(B)
            lo, hi, s_lo = math.log2(sizes[j - 1]), math.log2(B), speedups[j - 1]
            return float(2 ** (lo + (s_lo - 1.0) / (s_lo - s) * (hi - lo)))
    return math.inf


def measured_crossover(per_batch: dict[int, list[float]], n_boot: int = N_BOOT, seed: int = 0,
                       level: float = 0.95) -> dict:
    """The crossover of one method from its per-batch speedups over AR ({batch size: [one per batch]}): the
    :func:`crossing` of the medians, and its interval over ``n_boot`` resamples of the batches within each size
    (module docstring). Returns {'estimate', 'interval': [lo, hi], 'sizes'}; inf: beyond the largest size."""
    sizes = sorted(B for B, v in per_batch.items() if len(v))
    if not sizes:
        return {"estimate": math.nan, "interval": [math.nan, math.nan], "sizes": []}
    vals = [np.asarray(per_batch[B], dtype=float) for B in sizes]
    est = crossing(sizes, [float(np.median(v)) for v in vals])
    meds = np.stack([np.median(v[resamples(v.size, n_boot, seed + j)], axis=1) for j, v in enumerate(vals)], axis=1)
    boots = np.array([crossing(sizes, row) for row in meds])                 # (n_boot,)
    top = 2.0 * sizes[-1]                                                     # stands in for 'beyond', then back
    lo, hi = percentile_interval(np.minimum(boots, top), level)
    return {"estimate": est, "interval": [math.inf if v >= top else v for v in (lo, hi)], "sizes": sizes}


def _cell(rounds: dict[int, list[dict]], ar: dict[int, list[dict]] | None, ar1: dict[int, list[int]]) -> dict:
    """One (method, batch size): medians over batches with intervals, latency and mismatches."""
    tps = [rows[0]["tokens_per_s"] for rows in rounds.values()]
    speed = [rows[0]["tokens_per_s"] / ar[b][0]["tokens_per_s"] for b, rows in rounds.items()
             if ar and b in ar and ar[b][0]["tokens_per_s"]]
    rows = [r for rs in rounds.values() for r in rs]
    t_med, t_ci = _median_ci(tps)
    s_med, s_ci = _median_ci(speed)
    lat = bootstrap_quantiles([np.diff(r["commit_times"]) for r in rows if r.get("commit_times")],
                              LATENCY_QUANTILES, N_BOOT // 5)
    return {"batches": len(rounds), "rows": len(rows), "tokens_per_s": t_med, "tokens_per_s_ci95": t_ci,
            "speedup": s_med, "speedup_ci95": s_ci, "speedups": speed,
            "ttft_p50": float(np.median([r["ttft"] for r in rows if r.get("ttft") is not None] or [math.nan])),
            **{f"itl_p{100 * q:g}": v for q, (v, _) in lat.items()},
            "mismatches": sum(bool(r.get("mismatch")) for r in rows),
            "mismatches_vs_b1": sum(r["token_ids"] != ar1[r["example"]] for r in rows if r["example"] in ar1),
            "load1": float(np.median([r["load1"] for r in rows if r.get("load1") is not None] or [math.nan]))}


def batch_summary(records, cost_model=None) -> dict:
    """The summary of a batch bench's lines (module docstring): {'cells': {method: {batch size: cell}},
    'crossover': {method: measured_crossover}, 'predicted': bool}. A cell holds batches, rows, tokens_per_s and
    speedup (medians over batches) with ``_ci95`` intervals, ttft_p50 and itl_p50/p95/p99 (seconds on the run's
    clock), mismatches (rows whose tokens differ from AR's row of the same batch) and mismatches_vs_b1 (from AR's
    batch-1 row of the example), load1; with ``cost_model`` also predicted_tokens_per_s, predicted_speedup and
    their relative errors against the measured medians (``*_rel_err``: predicted / measured - 1)."""
    by = _rounds(records)
    ar1 = {rs[0]["example"]: rs[0]["token_ids"] for rs in by.get((REFERENCE, 1), {}).values()}
    pred = predict_bench_batches(cost_model, records) if cost_model is not None else {}
    cells: dict[str, dict[int, dict]] = {}
    for m in [m for m in ALL_METHODS if any(k[0] == m for k in by)]:
        for B in sorted(k[1] for k in by if k[0] == m):
            c = _cell(by[m, B], by.get((REFERENCE, B)), ar1)
            if (m, B) in pred:
                p = pred[m, B]
                c["predicted_tokens_per_s"] = float(np.median(p["tokens_per_s"]))
                c["predicted_speedup"] = float(np.median(p["speedup"])) if p["speedup"] else math.nan
                c["tokens_per_s_rel_err"] = c["predicted_tokens_per_s"] / c["tokens_per_s"] - 1
                c["speedup_rel_err"] = c["predicted_speedup"] / c["speedup"] - 1 if c["speedup"] else math.nan
            cells.setdefault(m, {})[B] = c
    cross = {m: measured_crossover({B: c["speedups"] for B, c in cs.items()}) for m, cs in cells.items()
             if m != REFERENCE}
    return {"cells": cells, "crossover": cross, "predicted": bool(pred)}


def batch_summary_json(summary: dict) -> dict:
    """:func:`batch_summary` as strict JSON: batch sizes as keys, a crossover beyond the sizes and NaN as None."""
    def clean(v):
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return None if isinstance(v, float) and not math.isfinite(v) else v
    return clean(summary)


def _x(v) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.2f}x"


def crossover_text(c: dict) -> str:
    """A crossover for a table: 'B ≈ 5.3 [4.1, 7.9]', '> 32' beyond the sizes measured."""
    if not c["sizes"]:
        return "-"
    top = c["sizes"][-1]

    def one(v: float) -> str:
        return f"> {top}" if math.isinf(v) else f"{v:.1f}"
    if math.isinf(c["estimate"]):
        return f"> {top} (interval from {one(c['interval'][0])})"
    return f"B ≈ {c['estimate']:.1f} [{one(c['interval'][0])}, {one(c['interval'][1])}]"


def format_batch_table(summary: dict) -> str:
    """The summary as a Markdown table (one row per method and batch size) and one crossover line per method."""
    lines = ["| method | B | batches | tokens/s (median [95% CI]) | speedup over AR [95% CI] | predicted tokens/s "
             "(error) | predicted speedup (error) | TTFT p50 ms | ITL p50 / p95 / p99 ms | mismatches vs AR |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for m, cs in summary["cells"].items():
        for B, c in cs.items():
            lo, hi = c["tokens_per_s_ci95"]
            slo, shi = c["speedup_ci95"]
            pt, ps = c.get("predicted_tokens_per_s"), c.get("predicted_speedup")
            pred_t = "-" if pt is None else f"{pt:.0f} ({100 * c['tokens_per_s_rel_err']:+.0f}%)"
            pred_s = "-" if ps is None or m == REFERENCE else f"{_x(ps)} ({100 * c['speedup_rel_err']:+.0f}%)"
            speed = "1 (reference)" if m == REFERENCE else f"{_x(c['speedup'])} [{slo:.2f}, {shi:.2f}]"
            ms = [1e3 * c.get(f"itl_p{100 * q:g}", math.nan) for q in LATENCY_QUANTILES]
            lines.append(f"| {m} | {B} | {c['batches']} | {c['tokens_per_s']:.0f} [{lo:.0f}, {hi:.0f}] | {speed} | "
                         f"{pred_t} | {pred_s} | {1e3 * c['ttft_p50']:.1f} | {' / '.join(f'{v:.1f}' for v in ms)} | "
                         f"{c['mismatches']} / {c['rows']} |")
    lines.append("")
    for m, c in summary["crossover"].items():
        lines.append(f"- {m}: speedup over AR falls to 1 at {crossover_text(c)}")
    return "\n".join(lines)
