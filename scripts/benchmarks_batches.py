"""BENCHMARKS.md's "Batches" section, kept apart from the rest of scripts/make_benchmarks_md.py: the batch bench runs
(``results/batches/<family>-<task>.jsonl``, packed) summarized by :func:`csd_lib.report.batches.batch_summary`,
the crossover marked, the cost model's prediction beside each cell."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from csd_lib.engine.methods import REFERENCE
from csd_lib.measure.records import read_records
from csd_lib.measure.machine import match_fingerprints, run_fingerprint
from csd_lib.price.costs import cost_fingerprint, load_costs
from csd_lib.report.batches import batch_summary, crossover_text

BATCH_DIR = "batches"


def batch_run_path(results: Path, fam: str, task: str) -> Path:
    """Where a family's batch bench on ``task`` is committed (packed: ``.jsonl.gz``; read_records reads either)."""
    return results / BATCH_DIR / f"{fam}-{task}.jsonl"


def batch_cost_model(results: Path, fam: str, recs: list[dict]):
    """The cost model committed beside a family's batch runs (``results/batches/costs-<family>-cpu.json``, measured on
    their machine), when its fingerprint matches the run's batch-1 lines; else None (not priced)."""
    path = results / BATCH_DIR / f"costs-{fam}-cpu.json"
    run = run_fingerprint([r for r in recs if r["batch_size"] == 1])
    if not path.exists() or run is None:
        return None
    cm = load_costs(fam, path=path)
    return cm if match_fingerprints(run, cost_fingerprint(cm)).usable else None


def _pct(v) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{100 * v:+.0f}%"


def batch_table(summary: dict) -> list[str]:
    """One row per batch size: tokens/s of AR, then each method's speedup over AR (median over batches, interval)
    with the predicted speedup and its error; the first size at or past a method's crossover is marked ◆."""
    methods = [m for m in summary["cells"] if m != REFERENCE]
    head = "| B | batches | AR tokens/s [95% CI] | " + " | ".join(
        f"{m}: speedup [95% CI] | {m}: predicted (error)" for m in methods) + " | load avg |"
    lines = [head, "|" + "---|" * (4 + 2 * len(methods))]
    for B, ar in summary["cells"][REFERENCE].items():
        cells = [str(B), str(ar["batches"]), f"{ar['tokens_per_s']:.0f} [{ar['tokens_per_s_ci95'][0]:.0f}, "
                                             f"{ar['tokens_per_s_ci95'][1]:.0f}]"]
        for m in methods:
            c = summary["cells"][m].get(B)
            if c is None:
                cells += ["-", "-"]
                continue
            mark = " ◆" if B >= summary["crossover"][m]["estimate"] else ""
            lo, hi = c["speedup_ci95"]
            cells.append(f"{c['speedup']:.2f}x [{lo:.2f}, {hi:.2f}]{mark}")
            p = c.get("predicted_speedup")
            cells.append("-" if p is None else f"{p:.2f}x ({_pct(c['speedup_rel_err'])})")
        cells.append(f"{ar['load1']:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def throughput_errors(summary: dict) -> str:
    """The prediction's error over every (method, batch size): of tokens/s (median, largest, how many within 15%) and
    of the speedup over AR."""
    errs = [abs(c["tokens_per_s_rel_err"]) for cs in summary["cells"].values() for c in cs.values()
            if "tokens_per_s_rel_err" in c]
    if not errs:
        return "no cost model of this machine class: not priced"
    speed = [abs(c["speedup_rel_err"]) for m, cs in summary["cells"].items() if m != REFERENCE
             for c in cs.values() if math.isfinite(c.get("speedup_rel_err", math.nan))]
    return (f"|predicted / measured - 1| of tokens/s over the {len(errs)} (method, B) cells: median "
            f"{100 * float(np.median(errs)):.0f}%, largest {100 * max(errs):.0f}%, {sum(e <= 0.15 for e in errs)} "
            f"within 15%; of the speedup over AR: median {100 * float(np.median(speed)):.0f}%, "
            f"{sum(e <= 0.15 for e in speed)} of {len(speed)} within 15%")


def batch_sections(results: Path, families, tasks) -> list[str]:
    """The "Batches" section: one table per committed batch run; [] when there is none."""
    out = []
    for fam in families:
        for task in tasks:
            recs = read_records(batch_run_path(results, fam, task))
            if not recs:
                continue
            s = batch_summary(recs, batch_cost_model(results, fam, recs))
            n, mnt = len({r["example"] for r in recs}), recs[0]["max_new_tokens"]
            out += [f"### {fam} on {task} (n = {n}, max_new_tokens = {mnt}, clock {recs[0]['clock']})", ""]
            out += batch_table(s) + [""]
            out += [f"- {m}: speedup over AR falls to 1 at {crossover_text(c)}" for m, c in s["crossover"].items()]
            out += [f"- prediction: {throughput_errors(s)}", ""]
    if not out:
        return []
    intro = ("Each method runs the same batches of B prompts (consecutive test prompts of mixed lengths, "
             "`python -m csd_lib bench --batch-size 1,2,4,8,16,32 --clock cpu --threads 1`), interleaved per batch "
             "with AR first; every row's tokens equal AR's (the mismatch count of every cell is 0 or the table says "
             "so). Speedup is tokens/s over the batch against AR's run of the same batch, the median over batches "
             "with its bootstrap interval (a single batch has no width). ◆ marks the sizes at or past the measured "
             "crossover: where the median per-batch speedup, interpolated linearly in log2 B, first falls to 1, its "
             "interval the bootstrap over batches resampled within each size. 'predicted' prices each batch from "
             "the same prompts' batch-1 rows with the per-call cost model measured on the run's machine "
             "(`results/batches/costs-<family>-cpu.json`; `csd_lib.price.batch.predict_bench_batches`: per-token "
             "terms scale with the rows a call holds, the constant is paid once); the error is predicted / measured "
             "- 1. It misses beyond 15% where the engine's own work per batched call dominates, work the batch-1 "
             "cost model does not see (each call restacks and splits every row's KV cache, and T5's encoder states "
             "and cross-attention cache, so it grows with the rows and the cached tokens): it over-prices AR's "
             "throughput (one call per token) and so under-prices every method's speedup at large B. Times are process CPU time on a "
             "machine shared with other jobs (the load average column).")
    return ["## Batches", "", intro, ""] + out
