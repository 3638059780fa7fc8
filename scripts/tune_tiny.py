"""Tune K and lenience for the tiny families per task on the validation split and compare with a grid search.

    python scripts/tune_tiny.py [--n 4] [--budget 8] [--tasks synth-gsm8k,synth-mmlu]

Writes results/tune.json: per family, per task (``by_task``) the tuner's and the grid's winners,
and ``preset_by_task``: the K, lenience and SD's k each task's winner ran with. The tuned K goes
into data/tuned_presets.json (``--presets``; ``none``: not written), which
csd_lib/families/presets.py loads: the family's K from its own task, synth-gsm8k, ``by_task`` for
the others; lenience and SD's k there stay as set by hand. ``--grid tiny`` runs a two-candidate
grid (a check of the code path).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from csd_lib.measure.machine import environment
from csd_lib.families.family import load_family
from csd_lib.fileio import write_atomic
from csd_lib.price.predict import candidate_grid, family_costs
from csd_lib.price.tune import grid_search, remeasure, sd_sweep, sd_sweep_predicted, tune

ROOT = Path(__file__).resolve().parent.parent
OWN_TASK = "synth-gsm8k"  # a tiny family's own task: its tuned K is the family's K
COLUMNS = ("| family | task | candidates | tuner: configs measured | tuner best (K, l) | grid best (K, l) | "
           "re-measured speedup tuner / grid | ratio | time tuner / grid |")


def candidates(fam, grid: str) -> list:
    """The (K, lenience) grid searched for ``fam``: the full one, or two candidates (``tiny``)."""
    if grid == "tiny":
        return candidate_grid(len(fam.drafters), k1=(1, 2), k2=(0,), k_inner=(1,), mag=fam.mag.n, leniences=(3.0,))[:2]
    if len(fam.drafters) == 2:
        return candidate_grid(2, k1=(1, 2, 4, 6, 8), k2=(0, 5, 10, 15), k_inner=(1,), mag=fam.mag.n)
    return candidate_grid(1, k1=(1, 2, 3, 4, 6, 8), mag=fam.mag.n)


def tune_task(fam, task: str, cands: list, cm, n: int, budget: int, max_new_tokens: int, reps: int = 3) -> dict:
    """Tuner, grid search, re-measurement of both winners and the SD sweep of one family on one task's
    validation split; ``k``, ``lenience``, ``sd_k``: the faster re-measured winner and the best SD k."""
    t0 = time.perf_counter()
    tr = tune(fam, task, budget=budget, candidates=cands, n=n, max_new_tokens=max_new_tokens, cost_model=cm)
    t1 = time.perf_counter()
    gr = grid_search(fam, task, cands, n=n, max_new_tokens=max_new_tokens)
    t2 = time.perf_counter()
    final = remeasure(fam, task, [(tr.best.k, tr.best.lenience), (gr.best.k, gr.best.lenience)],
                      n=n, max_new_tokens=max_new_tokens, reps=reps)
    sd_pred = sd_sweep_predicted(fam, task, n=n, max_new_tokens=max_new_tokens, cost_model=cm)
    top = sorted(sd_pred, key=lambda k: -sd_pred[k])[:4]  # and the preset's k, so a known good one stays in
    sd = sd_sweep(fam, task, ks=tuple(sorted({*top, fam.sd_k_for(task)})), n=n, max_new_tokens=max_new_tokens,
                  reps=reps)
    win = tr.best if final[0] >= final[1] else gr.best
    ranked = [m.predicted / m.speedup for m in tr.measured if m.predicted]
    return {
        "n": n, "k": win.k, "lenience": win.lenience, "from": "tuner" if win is tr.best else "grid",
        "sd_k": max(sd, key=sd.get),
        "sd_sweep": {str(k): v for k, v in sd.items()},
        "sd_predicted": {str(k): v for k, v in sd_pred.items()},
        "candidates": len(cands), "tuner_measured": tr.n_measured,
        "tuner_best": {"k": tr.best.k, "lenience": tr.best.lenience, "speedup": tr.best.speedup},
        "grid_best": {"k": gr.best.k, "lenience": gr.best.lenience, "speedup": gr.best.speedup},
        "remeasured": {"tuner": final[0], "grid": final[1], "ratio": final[0] / final[1]},
        "seconds": {"tuner": t1 - t0, "grid": t2 - t1},
        "latency_costs": tr.costs,
        "cost_model_notes": cm.fit_notes,
        "predicted_vs_measured": [{"k": m.k, "lenience": m.lenience, "predicted": m.predicted,
                                   "predicted_own": m.predicted_own, "measured": m.speedup,
                                   "predicted_s": m.predicted_wall, "measured_s": m.wall,
                                   "predicted_ar_s": m.predicted_ar_wall, "measured_ar_s": m.ar_wall}
                                  for m in tr.measured],
        "prediction_over_measured": {"min": min(ranked), "median": float(np.median(ranked)), "max": max(ranked),
                                     "n": len(ranked)} if ranked else None,
    }


def table_row(name: str, task: str, r: dict) -> str:
    return (f"| {name} | {task} (n = {r.get('n')}) | {r['candidates']} | {r['tuner_measured']} | "
            f"`{r['tuner_best']['k']}`, "
            f"{r['tuner_best']['lenience']} | `{r['grid_best']['k']}`, {r['grid_best']['lenience']} | "
            f"{r['remeasured']['tuner']:.2f}x / {r['remeasured']['grid']:.2f}x | {r['remeasured']['ratio']:.2f} | "
            f"{r['seconds']['tuner']:.0f}s / {r['seconds']['grid']:.0f}s |")


def by_task(old: dict, name: str) -> dict:
    """A family's per-task results in an existing tune.json; one written before tasks holds one, its
    ``task``, whose ``k``, ``lenience`` and ``sd_k`` are then read as :func:`tune_task` picks them."""
    r = old.get(name, {})
    if "by_task" in r or not r:
        return dict(r.get("by_task", {}))
    win = r["tuner_best"] if r["remeasured"]["ratio"] >= 1 else r["grid_best"]
    sd = r["sd_sweep"]
    return {old.get("task", "synth-gsm8k"): {**r, "k": win["k"], "lenience": win["lenience"], "n": old.get("n"),
                                             "sd_k": int(max(sd, key=sd.get))}}


def summary_md(report: dict, budget: int) -> str:
    md = ["The tuner measures acceptance with one probe configuration per lenience. It prices every candidate "
          "with `pricing.price_plan` (the bench's and `python -m csd_lib predict`'s price) and the family's "
          "per-call cost model (`results/costs-*.json`), and then measures only the best "
          f"{budget}. The grid search measures every candidate. Every measured speedup is against AR run on "
          "the same prompts right before it, timed in CPU time (one thread; rows tuned before that: wall time), "
          f"so a slow spell of the machine cannot favour early configurations. Both run on each task's validation split (n prompts "
          "each), never on the test split. At the end, the two winners are measured again in one "
          "interleaved run against AR (3 repetitions); the faster is the task's K.", "", COLUMNS,
          "|---|---|---|---|---|---|---|---|---|"]
    fams = [f for f in report if f.startswith("tiny-")]
    md += [table_row(f, t, r) for f in fams for t, r in report[f]["by_task"].items()]
    md += ["", "How well the ranking's price predicted the candidates it chose to measure (predicted / measured "
           "speedup, validation split; the probes at the preset K are measured, not predicted):", ""]
    md += [f"- {f} / {t}: median {p['median']:.2f}, range {p['min']:.2f} to {p['max']:.2f} over {p['n']} candidates"
           for f in fams for t, r in report[f]["by_task"].items() if (p := r.get("prediction_over_measured"))]
    md += ["", "The draft length of plain SD is tuned the same way: one probe at k = 24 gives the target's "
           "per-position acceptance, the cost model predicts every k, and the best four predicted are measured "
           "together with the preset's k (speedup over AR, validation split, 3 interleaved repetitions), so that "
           "CSD is compared with the best SD, not a weak one:", ""]
    md += [f"- {f} / {t}: " + ", ".join(f"k={k}: {v:.2f}x" for k, v in r["sd_sweep"].items())
           for f in fams for t, r in report[f]["by_task"].items() if "sd_sweep" in r]
    return "\n".join(md)


def write_presets(path: Path, preset_by_task: dict) -> None:
    """Put each family's tuned K into the presets file: ``k`` for its own task, ``by_task[task]["k"]`` else."""
    presets = json.loads(path.read_text(encoding="utf-8"))
    for name, tasks in preset_by_task.items():
        if name not in presets:
            continue
        for task, r in tasks.items():
            if task == OWN_TASK:
                presets[name]["k"] = r["k"]
            else:
                presets[name].setdefault("by_task", {}).setdefault(task, {})["k"] = r["k"]
    write_atomic(path, json.dumps(presets, indent=1) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=4, help="calibration prompts (validation split)")
    ap.add_argument("--budget", type=int, default=8, help="configs the tuner measures after its probes")
    ap.add_argument("--tasks", default="synth-gsm8k", help="comma-separated; each gets its own K")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--families", default="tiny-t5,tiny-llama")
    ap.add_argument("--grid", choices=("full", "tiny"), default="full")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of the final re-measurements")
    ap.add_argument("--out", default=str(ROOT / "results" / "tune.json"))
    ap.add_argument("--presets", default=str(ROOT / "data" / "tuned_presets.json"),
                    help="the presets file the tuned K goes into ('none': not written)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    old = json.loads(out.read_text()) if out.exists() else {}
    report = {"env": environment()}
    for name in dict.fromkeys([*args.families.split(","), *(k for k in old if k.startswith("tiny-"))]):
        report[name] = {"by_task": by_task(old, name)}  # keep other families' and tasks' results
    for name in args.families.split(","):
        fam = load_family(name)
        cm = family_costs(fam)
        for task in args.tasks.split(","):
            r = tune_task(fam, task, candidates(fam, args.grid), cm, args.n, args.budget, args.max_new_tokens,
                          args.reps)
            report[name]["by_task"][task] = r
            print(table_row(name, task, r), flush=True)
    report["preset_by_task"] = {f: {t: {"k": r["k"], "lenience": r["lenience"], "sd_k": int(r["sd_k"])}
                                    for t, r in report[f]["by_task"].items()}
                                for f in report if f.startswith("tiny-")}
    report["summary_md"] = summary_md(report, args.budget)
    write_atomic(out, json.dumps(report, indent=1) + "\n")
    if args.presets != "none":
        write_presets(Path(args.presets), {f: {t: report["preset_by_task"][f][t] for t in args.tasks.split(",")}
                                           for f in args.families.split(",")})
    print(report["summary_md"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
