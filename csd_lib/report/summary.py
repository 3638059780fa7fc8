"""Summaries of benchmark records: per-method speedups, intervals, SWI, and predictions beside them.

Computed from the raw lines only (:class:`csd_lib.measure.records.BenchRecord`), each method's
fastest repeat per example. The aggregate speedup is total AR time over total method time;
the median over examples of the per-example ratio comes with a bootstrap 95% interval.
Every summary states the clock its times were read from and the machine load the run saw
(:func:`run_conditions`).
"""
from __future__ import annotations

import math

import numpy as np

from ..engine.methods import SD
from ..engine.plan import MAG, TREE_METHODS
from ..engine.stats import branch_rates, model_size_costs, swi
from ..families.paper_costs import previous_work_costs
from ..measure.machine import describe_fingerprint, run_fingerprint
from ..measure.records import ALL_METHODS, BenchRecord, as_records, base_method, fastest
from ..price.predict import predict_from_runs, predict_metrics_from_runs
from .bench_stats import LATENCY_QUANTILES, bootstrap_median_ci, fmt, latency_stats, ratios

CLOCK_NAMES = {"wall": "wall time", "cpu": "process CPU time"}

def run_conditions(records) -> dict:
    """The clock and machine load of a run's lines: ``clock`` ('wall', 'cpu', or 'cpu+wall' for a mix) and
    ``load1``: the 1-minute load average at the first and last line (``start``, ``end``; file order is run
    order) and its ``min``, ``median`` and ``max`` over the ``n`` lines that recorded one (None without)."""
    records = as_records(records)
    loads = [r.load1 for r in records if r.load1 is not None]
    load = dict(start=loads[0], end=loads[-1], min=min(loads), median=float(np.median(loads)), max=max(loads)) \
        if loads else dict.fromkeys(("start", "end", "min", "median", "max"))
    return {"clock": "+".join(sorted({r.clock for r in records})) or "wall", "load1": {**load, "n": len(loads)}}


def summarize(records, cost_model=None, n_sim: int = 4000) -> dict:
    """Per-method summary computed from the raw lines only (fastest repeat per example).

    ``records``: JSON dicts (``bench.read_records``) or :class:`BenchRecord`. With a cost
    model (:class:`csd_lib.price.costmodel.CostModel`), ``speedup_walltime_predicted`` is the EWIF
    prediction from this run's own per-position acceptance (see
    :func:`csd_lib.price.predict.predict_from_runs`); without one it is NaN. Every method's row carries the
    run's ``clock`` and ``load1`` (:func:`run_conditions`), ``machine``, the run's fingerprint
    (:func:`csd_lib.measure.machine.run_fingerprint`), and its latency: ``ttft`` and ``itl`` percentiles
    with bootstrap intervals over examples (:func:`csd_lib.report.bench_stats.latency_stats`; None where no
    line recorded commit times).
    """
    records = as_records(records)
    seen = run_conditions(records)
    best = fastest(records)
    errors: dict[str, int] = {}
    reps: dict[str, int] = {}
    for r in records:
        if not r.ok:
            errors[r.method] = errors.get(r.method, 0) + 1
        reps[r.method] = max(reps.get(r.method, 0), r.rep + 1)
    ar = best.get("ar", {})
    machine = run_fingerprint(records)
    out = {}
    for m in dict.fromkeys([r.method for r in records]):
        recs = best.get(m, {})
        common = [i for i in recs if i in ar]
        toks = sum(recs[i].n_tokens for i in recs)
        wall = sum(recs[i].wall_time for i in recs)
        ar_wall = sum(ar[i].wall_time for i in common)
        m_wall = sum(recs[i].wall_time for i in common)
        per = list(ratios(best, m).values())
        s = {"n": len(recs), "repeats": reps.get(m, 0), "errors": errors.get(m, 0), "tokens": toks,
             "tokens_per_s": toks / wall if wall else float("nan"),
             "speedup_walltime": ar_wall / m_wall if m_wall else float("nan"),
             "speedup_walltime_median": float(np.median(per)) if per else float("nan"),
             "speedup_walltime_ci95": bootstrap_median_ci(per),
             "speedup_walltime_predicted": float("nan"),
             "mismatches": sum(recs[i].token_ids != ar[i].token_ids for i in common), **seen, "machine": machine}
        s.update(_call_stats(recs, toks, wall))
        s.update(latency_stats(list(recs.values())))
        # a tree's EWIF needs the per-branch meters (price.pricing.price_tree_plan): lines written before them stay NaN
        if s["calls_per_model"] is not None and cost_model is not None and (
                m not in TREE_METHODS or branch_rates([r.stats for r in recs.values()])):
            s["speedup_walltime_predicted"] = predict_from_runs(list(recs.values()), cost_model, n_sim)["speedup"]
        out[m] = s
    return out


def _call_stats(recs: dict[int, BenchRecord], toks: int, wall: float) -> dict:
    """What a method's fastest repeats counted: calls per model, tokens per target call, SWI under both cost
    tables, the share of time outside forwards and forward time per call (NaN and None for HF baselines)."""
    st = [recs[i].stats for i in recs]
    if not (st and "calls" in st[0]):
        return dict(calls_per_model=None, mean_tokens_per_target_call=float("nan"),
                    speedup_swi_ms=float("nan"), speedup_swi_pw=float("nan"), outside_share=float("nan"))
    calls: dict[str, int] = {}
    for x in st:
        for name, c in x["calls"].items():
            calls[name] = calls.get(name, 0) + c
    params = st[0]["params"]
    target_calls = calls.get("target", 0)
    fwd = sum(sum(x["forward_time"].values()) for x in st)
    ms = model_size_costs(params)
    first = next(iter(recs.values()))
    pw = st[0].get("previous_work_costs") or previous_work_costs(first.family, params).costs
    return dict(calls_per_model=calls,
                mean_tokens_per_target_call=toks / target_calls if target_calls else float("nan"),
                speedup_swi_ms=swi(toks, calls, ms), speedup_swi_pw=swi(toks, calls, pw),
                outside_share=(wall - fwd) / wall if wall else float("nan"),
                forward_time_per_call={n: sum(x["forward_time"].get(n, 0) for x in st) / c
                                       for n, c in calls.items() if n != MAG and c})


def mag_share(records, method: str, kinds=("mag-match", "mag-bigram")) -> float:
    """Share of a method's output tokens that MaG proposed (of the given kinds) and the target kept; error lines skipped."""
    rs = [r for r in as_records(records) if r.method == method and r.ok]
    total = sum(r.n_tokens for r in rs)
    kept = sum(r.provenance.get(k, 0) for r in rs for k in kinds)
    return kept / total if total else float("nan")


SUMMARY_KEYS = ("tokens_per_s", "speedup_walltime", "speedup_swi_ms", "speedup_swi_pw",
                "mean_tokens_per_target_call", "mismatches", "n", "repeats", "errors",
                "speedup_walltime_median", "speedup_walltime_ci95", "speedup_walltime_predicted",
                "outside_share", "clock", "load1", "machine", "ttft", "itl")


def _nan_none(v):
    if isinstance(v, list):
        return [_nan_none(x) for x in v]
    if isinstance(v, dict):
        return {k: _nan_none(x) for k, x in v.items()}
    return None if isinstance(v, float) and math.isnan(v) else v


def summary_json(summary: dict) -> dict:
    """The fixed-schema summary written by --summary-json (NaN written as null)."""
    return {m: {k: _nan_none(s[k]) for k in SUMMARY_KEYS} for m, s in summary.items()}


def conditions_line(seen: dict) -> str:
    """One line naming a run's clock and load (:func:`run_conditions`)."""
    clock = " + ".join(CLOCK_NAMES.get(c, c) for c in seen["clock"].split("+"))
    ld = seen["load1"]
    load = (f"start {ld['start']:.2f}, end {ld['end']:.2f}; min {ld['min']:.2f}, median {ld['median']:.2f}, "
            f"max {ld['max']:.2f} over {ld['n']} lines" if ld["n"] else "not recorded")
    return f"clock: {seen['clock']} ({clock}); load (1-minute average): {load}"


def latency_lines(summary: dict) -> list[str]:
    """A plain-text table of TTFT and ITL percentiles per method, in milliseconds with their 95% intervals
    ('not recorded' for methods whose lines hold no commit times); empty if no method has any."""
    order = method_order(summary)
    if not any(summary[m].get("ttft") for m in order):
        return []
    keys = [f"p{100 * q:g}" for q in LATENCY_QUANTILES]
    clock = next((summary[m]["clock"] for m in order if "clock" in summary[m]), "wall")
    head = f"{'method':<12}{'n':>4}" + "".join(f"{f'{what} {k} (ms)':>24}" for what in ("TTFT", "ITL") for k in keys)
    rows = [f"latency ({clock} clock): time to first token and inter-token latency, percentiles with bootstrap "
            f"95% intervals over examples", head, "-" * len(head)]
    for m in order:
        t, i = summary[m].get("ttft"), summary[m].get("itl")
        if t is None:
            rows.append(f"{m:<12}{'-':>4}  not recorded")
            continue
        cells = "".join(f"{latency_cell(st, k):>24}" for st in (t, i) for k in keys)
        rows.append(f"{m:<12}{t['n']:>4}{cells}")
    return rows


def latency_cell(st: dict | None, key: str) -> str:
    """One percentile in ms with its interval, '12.3 [11.0-14.1]'; '-' when there is none."""
    if not st:
        return "-"
    lo, hi = st[f"{key}_ci95"]
    return f"{fmt(1e3 * st[key], 1)} [{fmt(1e3 * lo, 1)}-{fmt(1e3 * hi, 1)}]"


def method_order(summary: dict) -> list[str]:
    """The summary's methods in the table's order (``ALL_METHODS``), each ``sd@K`` (SD at another k) after ``sd``."""
    alts = sorted((m for m in summary if m not in ALL_METHODS and base_method(m) == SD.name),
                  key=lambda m: int(m.partition("@")[2]))
    return [x for m in ALL_METHODS if m in summary for x in ([m] + alts if m == SD.name else [m])] + \
        [m for m in alts if SD.name not in summary]


def format_table(summary: dict) -> str:
    """A plain-text table of the summary, one row per method, under a line naming the run's clock and load."""
    head = f"{'method':<12}{'n':>4}{'tok/s':>9}{'speedup':>9}{'median':>8}{'CI95':>12}{'pred':>7}" \
           f"{'SWI-MS':>8}{'SWI-PW':>8}{'tok/call':>9}{'outside':>9}{'mismatch':>9}{'errors':>7}"
    first = next(iter(summary.values()), None)
    rows = ([conditions_line(first)] if first and "clock" in first else []) \
        + ([f"machine: {describe_fingerprint(first['machine'])}"] if first and "machine" in first else []) \
        + [head, "-" * len(head)]
    order = method_order(summary)
    for m in order:
        s = summary[m]
        f = lambda v, w, p: f"{v:>{w}.{p}f}" if isinstance(v, (int, float)) and not math.isnan(v) else f"{'-':>{w}}"  # noqa: E731
        lo, hi = s["speedup_walltime_ci95"]
        ci = f"{lo:.2f}-{hi:.2f}" if not (math.isnan(lo) or math.isnan(hi)) else "-"
        rows.append(f"{m:<12}{s['n']:>4}{f(s['tokens_per_s'], 9, 1)}{f(s['speedup_walltime'], 9, 2)}"
                    f"{f(s['speedup_walltime_median'], 8, 2)}{ci:>12}{f(s['speedup_walltime_predicted'], 7, 2)}"
                    f"{f(s['speedup_swi_ms'], 8, 2)}{f(s['speedup_swi_pw'], 8, 2)}"
                    f"{f(s['mean_tokens_per_target_call'], 9, 2)}"
                    f"{f(100 * s['outside_share'] if not math.isnan(s['outside_share']) else float('nan'), 8, 1)}"
                    f"{'%' if not math.isnan(s['outside_share']) else ' '}{s['mismatches']:>9}{s['errors']:>7}")
    return "\n".join(rows + latency_lines(summary))


def predicted_vs_measured(records, cost_model=None, n_sim: int = 4000) -> dict:
    """Per method: EWIF predictions from this run's own acceptance (:func:`csd_lib.price.predict.predict_metrics_from_runs`),
    beside the measurements. The gaps to ``speedup_swi_ms`` and the measured walltime are what
    the paper never calibrated."""
    records = as_records(records)
    summary = summarize(records, cost_model, n_sim)
    best = fastest(records)
    out = {}
    for m, s in summary.items():
        recs = list(best.get(m, {}).values())
        if not recs or recs[0].plan is None:
            continue
        out[m] = {"speedup_swi_ms": s["speedup_swi_ms"], "speedup_walltime": s["speedup_walltime"],
                  "speedup_walltime_median": s["speedup_walltime_median"], "outside_share": s["outside_share"],
                  **predict_metrics_from_runs(recs, cost_model, n_sim)}
    return out
