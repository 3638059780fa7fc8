"""The statistics BENCHMARKS.md and the notebooks report for benchmark runs: per-example ratios, medians
with bootstrap intervals, the SWI ordering, the machine's speed against its cost model, and the goals
a run is held to.
"""
from __future__ import annotations

import math

import numpy as np

from ..engine.methods import get
from ..engine.plan import METHODS
from ..measure.records import BenchRecord, fastest


def resamples(n: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n) example indices drawn with replacement: the bootstrap's resamples (fixed seed)."""
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def percentile_interval(stats: np.ndarray, level: float) -> list[float]:
    lo, hi = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return [float(lo), float(hi)]


def bootstrap_median_ci(values, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> list[float]:
    """Percentile bootstrap interval of the median over examples (fixed seed: reproducible)."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        return [float("nan"), float("nan")]
    return percentile_interval(np.median(v[resamples(v.size, n_boot, seed)], axis=1), level)


def bootstrap_quantiles(groups, qs=(0.5,), n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """Quantiles of values pooled over examples, each with a percentile bootstrap interval over examples.

    ``groups``: one list of values per example (one value for a per-example number such as TTFT, many
    for per-token ones such as ITL). Examples are resampled whole (a cluster bootstrap: the tokens of one
    example are not independent) and their values pooled again. Returns ``{q: (estimate, [lo, hi])}``;
    NaN without values.
    """
    groups = [np.asarray(g, dtype=float).ravel() for g in groups]
    groups = [g for g in groups if g.size]
    if not groups:
        return {q: (float("nan"), [float("nan"), float("nan")]) for q in qs}
    est = np.quantile(np.concatenate(groups), qs)                        # (len(qs),)
    rows = resamples(len(groups), n_boot, seed)                          # (n_boot, examples)
    if all(g.size == 1 for g in groups):                                  # one value per example: vectorised
        boots = np.quantile(np.concatenate(groups)[rows], qs, axis=1).T   # (n_boot, len(qs))
    else:
        boots = np.stack([np.quantile(np.concatenate([groups[i] for i in row]), qs) for row in rows])
    return {q: (float(e), percentile_interval(boots[:, j], level)) for j, (q, e) in enumerate(zip(qs, est))}


LATENCY_QUANTILES = (0.5, 0.95, 0.99)  # the percentiles of TTFT and ITL the summaries give


def latency_stats(recs) -> dict:
    """TTFT and ITL percentiles of a method's records (one per example: the fastest repeats), with intervals.

    ``ttft``: over the examples' times to first token; ``itl``: over every inter-token latency of every
    example, pooled (:func:`bootstrap_quantiles`, examples resampled whole). Each is ``{"n": examples,
    "p50": .., "p50_ci95": [lo, hi], ...}`` (seconds on the run's clock), or None when no record holds
    commit times (the HF baselines, lines written before they were recorded).
    """
    timed = [r for r in recs if r.commit_times]
    out = {}
    for key, groups in (("ttft", [[r.ttft] for r in timed]), ("itl", [r.itl for r in timed])):
        if not any(len(g) for g in groups):
            out[key] = None
            continue
        qs = bootstrap_quantiles(groups, LATENCY_QUANTILES)
        out[key] = {"n": len(timed)}
        for q, (v, ci) in qs.items():
            out[key].update({f"p{100 * q:g}": v, f"p{100 * q:g}_ci95": ci})
    return out


def fmt(v, p: int = 2) -> str:
    """A number to ``p`` decimals, '-' for None or NaN (the benchmark tables' format)."""
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{p}f}"


def ratios(best: dict[str, dict[int, BenchRecord]], method: str) -> dict[int, float]:
    """Per example: AR's walltime over the method's, both the fastest of their repeats."""
    ar, mine = best.get("ar", {}), best.get(method, {})
    return {i: ar[i].wall_time / mine[i].wall_time for i in sorted(mine) if i in ar and mine[i].wall_time > 0}


def pair_ratio(recs: list[dict], num: str, den: str) -> tuple[float, list[float]]:
    """Median over examples of walltime(num) / walltime(den), fastest repeats, with its bootstrap CI.

    > 1 means ``den`` is faster than ``num`` on the typical example."""
    best = fastest(recs)
    a, b = best.get(num, {}), best.get(den, {})
    r = [a[i].wall_time / b[i].wall_time for i in sorted(a) if i in b]
    return (float(np.median(r)) if r else float("nan")), bootstrap_median_ci(r)


def speedup_ratio(num: list[dict], den: list[dict]) -> tuple[float, list[float]]:
    """Median over examples of CSD's speedup (records ``num``) over SD's (records ``den``), each
    against AR in its own round, with its bootstrap CI. In one run it is SD's walltime over CSD's."""
    a, b = ratios(fastest(num), "csd"), ratios(fastest(den), "sd")
    r = [a[i] / b[i] for i in sorted(a) if i in b]
    return (float(np.median(r)) if r else float("nan")), bootstrap_median_ci(r)


def run_k(recs: list[dict], method: str):
    """The first budget ``k[0][0]`` of ``method``'s plan in a run's records ('?' when none has a plan)."""
    plans = (BenchRecord.from_dict(r).plan for r in recs if r["method"] == method)
    return next((p.k[0][0] for p in plans if p is not None), "?")


def faster_sd_run(recs: list[dict], s: dict, alt_recs: list[dict], alt: dict | None):
    """(records, summary, k) of the SD with the higher median speedup: the preset's or the alternative k's run."""
    if alt and alt["speedup_walltime_median"] > s["sd"]["speedup_walltime_median"]:
        return alt_recs, alt, run_k(alt_recs, "sd")
    return recs, s["sd"], run_k(recs, "sd")


def swi_chain(s: dict, vert: dict | None, alt: dict | None, key: str = "speedup_swi_ms") -> tuple[str, bool]:
    """Paper Table 2's SWI ordering (full > base + MaG > SD > AR) as text, and whether it holds;
    ``key`` picks the cost table (model-size ``speedup_swi_ms`` or previous-work ``speedup_swi_pw``)."""
    chain = [("full cascade", s["csd"][key])]
    if vert:
        chain.append(("base + MaG", vert[key]))
    chain += [("SD", max(s["sd"][key], alt[key] if alt else 0.0)), ("AR", 1.0)]
    ok = vert is not None and all(a[1] > b[1] for a, b in zip(chain, chain[1:]))
    text = f"{chain[0][0]} {fmt(chain[0][1])}" + "".join(
        f" {'>' if a[1] > b[1] else '<='} {b[0]} {fmt(b[1])}" for a, b in zip(chain, chain[1:]))
    return text, ok


def prediction_gaps(s: dict) -> dict[str, float]:
    """Per method with a prediction: predicted walltime speedup over the measured median, minus 1."""
    return {m: s[m]["speedup_walltime_predicted"] / s[m]["speedup_walltime_median"] - 1
            for m in METHODS if not get(m).ar_like and m in s and s[m]["speedup_walltime_predicted"] is not None
            and not math.isnan(s[m]["speedup_walltime_predicted"])}


def machine_speed(recs: list[dict], cost_model) -> tuple[float, float] | None:
    """(AR's measured seconds per target step in this run, fastest repeats; what ``cost_model`` prices that
    step at, at the run's mean cache length); None without AR lines."""
    ar = list(fastest(recs).get("ar", {}).values())
    if not ar:
        return None
    step = sum(r.stats["forward_time"]["target"] for r in ar) / sum(r.stats["calls"]["target"] for r in ar)
    L = float(np.mean([(r.cache_start or 1) + r.n_tokens / 2 for r in ar]))
    return step, float(cost_model.forward["target"](1, L))


def csd_goal(family_name: str) -> tuple[float, float | None]:
    """What CSD over the best SD (median per-example walltime ratio) is held to on a family's runs: the ratio,
    and the lower 95% bound it needs (None: no bound)."""
    return (1.2, 1.1) if family_name == "tiny-t5" else (1.1, None)


def goals(family_name: str, recs: list[dict], s: dict, vert: dict | None, alt_recs: list[dict],
          alt: dict | None) -> list[tuple[str, str, str, bool, str]]:
    """The goals a family's run is held to: (goal, measured, target, met, note) rows. ``s``: the run's
    summary; ``vert``: its base + MaG run's csd summary; ``alt_recs``/``alt``: SD's own run at another k."""
    out = []
    csd, sd = s.get("csd"), s.get("sd")
    if csd and sd:
        sd_recs, _, k = faster_sd_run(recs, s, alt_recs, alt)
        r, (lo, hi) = speedup_ratio(recs, sd_recs)
        need, need_lo = csd_goal(family_name)
        ok = r >= need and (need_lo is None or lo >= need_lo)
        measured = f"k = {run_k(recs, 'sd')}" + (f" and k = {run_k(alt_recs, 'sd')} (own run)" if alt else "")
        out.append(("CSD over the best SD (median per-example walltime ratio)", f"{fmt(r)}x [{fmt(lo)}–{fmt(hi)}]",
                    f">= {need}x" + (f", lower CI >= {need_lo}" if need_lo else ""), ok,
                    f"SD: the largest drafter; measured {measured}; best k = {k}"
                    + ("; each speedup against AR in its own round" if sd_recs is not recs else "")))
    for ours, theirs, name in (("sd", "hf-assisted", "our SD vs hf-assisted"), ("mag", "hf-pld", "our MaG vs hf-pld")):
        if ours in s and theirs in s:
            r, (lo, hi) = pair_ratio(recs, theirs, ours)
            out.append((f"{name} (median walltime ratio)", f"{fmt(r)}x [{fmt(lo)}–{fmt(hi)}]", ">= 1.0x", r >= 1.0,
                        ""))
    if csd and sd and family_name == "tiny-t5":
        text, ok = swi_chain(s, vert, alt)
        out.append(("SWI ordering (model-size)", text, "full > base+MaG > SD > AR", ok,
                    "SD: the higher of its runs" if vert else "no vertical run"))
    gaps = prediction_gaps(s)
    if gaps:
        worst = max(gaps, key=lambda m: abs(gaps[m]))
        out.append(("EWIF prediction within 10% of the measured median",
                    ", ".join(f"{m} {100 * v:+.0f}%" for m, v in gaps.items()), "within ±10% for each",
                    abs(gaps[worst]) <= 0.10, f"worst: {worst}"))
    if csd:
        out.append(("time outside model forwards (CSD)", f"{100 * csd['outside_share']:.1f}%", "< 10%",
                    csd["outside_share"] < 0.10, ""))
    return out
