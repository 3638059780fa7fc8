"""Render BENCHMARKS.md from results/*.jsonl, and redraw its figures (docs/bench-*.png, docs/costs-*.png) when
Chromium exists; without Chromium the committed figures are linked as they are."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from csd_lib.engine.methods import CSD, MAG_ALONE, REFERENCE, SD
from csd_lib.fileio import write_atomic
from csd_lib.measure.machine import by_machine, describe_fingerprint, machine_key, match_fingerprints, run_fingerprint
from csd_lib.measure.records import ALL_METHODS, PACKED, BenchRecord, as_records, read_records
from csd_lib.price.costs import cost_fingerprint, load_costs, stored_costs_for_run
from csd_lib.price.predict import prediction_limits
from csd_lib.report.bench_stats import (csd_goal, faster_sd_run, goals, machine_speed, prediction_gaps, run_k,
                                        swi_chain)
from csd_lib.report.bench_stats import fmt as f
from csd_lib.report.bench_stats import bootstrap_median_ci, fastest, ratios, speedup_ratio
from csd_lib.report.bench_stats import LATENCY_QUANTILES
from csd_lib.report.trees import table3_goals, table3_limit, table3_rows, trees_path
from csd_lib.report.summary import (CLOCK_NAMES, latency_cell, mag_share, predicted_vs_measured, run_conditions,
                                    summarize)
from csd_lib.viz import bench_figure, cost_figure

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the Batches section's own module, beside this one
from benchmarks_batches import batch_sections  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RES, DOCS = ROOT / "results", ROOT / "docs"
# tiny-t5-paper: tiny-t5's target with drafters in the paper's Fig. 2 regime (its goals are stated, not set)
FAMILIES, TASKS = ("tiny-t5", "tiny-llama", "tiny-t5-paper"), ("synth-gsm8k", "synth-mmlu")
UNPRICED = "not priced: no cost model of its machine class"  # where no stored cost model matches a run


def png(fig, path: Path) -> bool:
    """Screenshot a figure with headless Chromium into ``path``; whether ``path`` holds the figure. Without
    Chromium the committed file is kept (True when there is one), so the report links it as before."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        if path.exists():
            print(f"no Chromium: linking the committed {path.name} without redrawing it", file=sys.stderr)
        return path.exists()
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "fig.html"
        html.write_text(fig.to_html(include_plotlyjs=True, full_html=True, default_width="900px",
                                    default_height="480px"))
        out = Path(tmp) / "fig.png"
        subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp}/ud", "--window-size=940,520", "--virtual-time-budget=5000",
                        f"--screenshot={out}", html.as_uri()], capture_output=True, timeout=120)
        if not out.exists():
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(out, path)
    return True


def x(v) -> str:
    """A speedup with its 'x', or '-' when there is none."""
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}x"


def ci(s: dict) -> str:
    lo, hi = s.get("speedup_walltime_ci95") or [float("nan")] * 2
    return f"{f(lo)}–{f(hi)}"


def table(summary: dict, extra: dict | None = None, priced: bool = True) -> list[str]:
    """A run's results table; ``priced`` False: no cost model of the run's machine class, and the prediction
    cells say so."""
    rows = ["| method | n × repeats | tokens/s | walltime speedup (aggregate) | median per example [95% CI] | "
            "predicted (cost model) | pred / median | SWI model-size | SWI previous-work | tokens/target call "
            "| time outside forwards | mismatches vs AR | errors |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    items = [(m, summary[m]) for m in ALL_METHODS if m in summary] + list((extra or {}).items())
    for m, s in items:
        share = s.get("outside_share")
        pred, med = s.get("speedup_walltime_predicted"), s.get("speedup_walltime_median")
        gap = pred / med if pred is not None and med and not math.isnan(pred) else float("nan")
        cell = x(pred) if priced or not s.get("calls_per_model") else "not priced"  # HF baselines: never priced
        rows.append(f"| {m} | {s['n']} × {s.get('repeats', 1)} | {f(s['tokens_per_s'], 1)} | {f(s['speedup_walltime'])}x | "
                    f"**{f(med)}x** [{ci(s)}] | {cell} | {f(gap)} | "
                    f"{f(s['speedup_swi_ms'])} | {f(s['speedup_swi_pw'])} | {f(s['mean_tokens_per_target_call'])} | "
                    f"{'-' if share is None or math.isnan(share) else f'{100 * share:.1f}%'} | {s['mismatches']} | "
                    f"{s.get('errors', 0)} |")
    return rows


def latency_table(summary: dict) -> list[str]:
    """TTFT and ITL percentiles per method (ms, bootstrap 95% intervals over examples), or one line saying the run
    recorded none."""
    order = [m for m in ALL_METHODS if m in summary]
    if not any(summary[m].get("ttft") for m in order):
        return ["Latency (time to first token, inter-token latency): not recorded; these lines predate per-token "
                "commit times. A new run of `bash scripts/run_benchmarks.sh` records them.", ""]
    keys = [f"p{100 * q:g}" for q in LATENCY_QUANTILES]
    rows = ["Latency on the run's clock, in ms: time to first token (TTFT, percentiles over examples) and inter-token "
            "latency (ITL, the gap before each later token, pooled over every example's tokens: tokens of one "
            "accepted block arrive together, gap 0), fastest round per example, bootstrap 95% intervals with "
            "examples resampled whole:", "",
            "| method | examples | " + " | ".join(f"{w} {k}" for w in ("TTFT", "ITL") for k in keys) + " |",
            "|---|---|" + "---|" * 2 * len(keys)]
    for m in order:
        t, i = summary[m].get("ttft"), summary[m].get("itl")
        cells = [latency_cell(st, k) for st in (t, i) for k in keys] if t else ["not recorded"] * 2 * len(keys)
        rows.append(f"| {m} | {t['n'] if t else '-'} | " + " | ".join(cells) + " |")
    return rows + [""]


def conditions(recs: list[dict]) -> str:
    """The clock a run's times were read from and the machine load it saw (lines without a clock: wall)."""
    seen = run_conditions(recs)
    ld = seen["load1"]
    clock = " + ".join(CLOCK_NAMES[c] for c in seen["clock"].split("+"))
    load = (f"1-minute load average on 2 cores at start {ld['start']:.1f}, at end {ld['end']:.1f}, median "
            f"{ld['median']:.1f}, range {ld['min']:.1f}–{ld['max']:.1f}" if ld["n"] else "load not recorded")
    return f"{clock} (`--clock {seen['clock']}`); {load}"


def machine_lines(recs: list[dict], cm, why: str | None = None) -> list[str]:
    """The run's machine fingerprint, the cost model that prices it (``why``: which file and why,
    :func:`csd_lib.price.costs.stored_costs_for_run`; ``cm`` None: none matches) and how its machine compares,
    and, where the run's lines come from more than one machine class, each class's own fingerprint and table,
    priced with the cost model of that class."""
    run = run_fingerprint(recs)
    out = [f"Machine of this run (class `{machine_key(run)}`): {describe_fingerprint(run)} (reference steps: "
           f"per call in this run's AR and smallest drafter's calls)."]
    if cm is not None and why:
        out[-1] += f" Cost model: {why}. Its machine: {describe_fingerprint(cost_fingerprint(cm))}."
    elif cm is not None:
        out[-1] += (f" Cost model's machine: {describe_fingerprint(cost_fingerprint(cm))}; against this run: "
                    f"{match_fingerprints(run, cost_fingerprint(cm)).describe()}.")
    elif why:
        out[-1] += f" Predictions: {UNPRICED}; {why}."
    groups = by_machine(recs)
    if len(groups) > 1:
        out += ["", f"This run's lines come from {len(groups)} machine classes; each is shown on its own, priced "
                    f"with the cost model of its class:"]
        for key, part in groups.items():
            own = stored_costs_for_run(as_records(part)[0].family, part)
            out += ["", f"Machine class `{key}`: {describe_fingerprint(run_fingerprint(part))}. Cost model: "
                        f"{own.why}.", ""]
            out += table(summarize(part, own.cost_model), priced=own.cost_model is not None)
    return out + [""]


def goal_rows(rows: list[tuple]) -> list[str]:
    """The goals of a run (csd_lib.report.bench_stats.goals) as a Markdown table."""
    return ["| goal | measured | target | status | note |", "|---|---|---|---|---|"] + [
        f"| {name} | {value} | {target} | {'met' if ok else 'MISSED'} | {why} |" for name, value, target, ok, why in rows]


def limits(fam: str, recs: list[dict], vrecs: list[dict], arecs: list[dict], cm) -> tuple[list[str], float | None]:
    """What the cost model says this run's acceptance allows (csd_lib.price.predict.prediction_limits), and
    its limit: best predicted CSD over best predicted SD (None without both)."""
    sd_recs = max((recs, arecs), key=lambda r: summarize(r).get("sd", {}).get("speedup_walltime_median", 0)
                  if r else 0)
    lim = prediction_limits(recs, cm, vrecs)
    sd = prediction_limits(sd_recs, cm).get("sd")
    if not sd or CSD.name not in lim:
        return [], None
    lim["sd"] = sd
    rows = [("SD", "sd"), ("CSD", "csd")] + ([("base + MaG", "vertical")] if "vertical" in lim else [])
    out = ["How far these models can go, by the cost model: each method's own acceptance in this run "
           "(rows past the measured budget repeat their pooled rate), CSD's K over the tuner's candidates "
           "at this lenience, SD's k over 2–24, and base + MaG's k over 1–16. A prediction, not a measurement:",
           "", "| method | configuration run | its prediction (walltime / SWI) | best predicted walltime "
           "(config) | best predicted SWI (config) |", "|---|---|---|---|---|"]
    for name, key in rows:
        v = lim[key]
        out.append(f"| {name} | `{v['preset']['k']}` | {x(v['preset']['walltime'])} / {f(v['preset']['swi_ms'])} | "
                   f"{x(v['best_walltime']['walltime'])} (`{v['best_walltime']['k']}`) | "
                   f"{f(v['best_swi']['swi_ms'])} (`{v['best_swi']['k']}`) |")
    need = csd_goal(fam)[0]
    best = lim["csd"]["best_walltime"]["walltime"] / sd["best_walltime"]["walltime"]
    out += ["", f"Best predicted CSD over best predicted SD: {f(best)}x (goal {need}x; the run's own configurations: "
            f"{f(lim['csd']['preset']['walltime'] / sd['preset']['walltime'])}x)."]
    if "vertical" in lim:
        out[-1] += (f" Best predicted SWI of base + MaG {f(lim['vertical']['best_swi']['swi_ms'])} against SD's "
                    f"{f(sd['best_swi']['swi_ms'])}.")
    return out, best


def drift(recs: list[dict], cm) -> list[str]:
    """The machine's speed in this run against the cost model's: AR's measured time per target step
    over what the cost model prices it at (both on the run's clock), and a drafter's call likewise."""
    speed = machine_speed(recs, cm)
    if speed is None:
        return []
    step, priced = speed
    text = (f"Machine speed against the cost model: an AR step of the target took {1e3 * step:.2f} ms in this run "
            f"(per call, fastest rounds); the cost model prices it at {1e3 * priced:.2f} ms ({step / priced:.2f}x). "
            "Both read the same clock; a ratio away from 1 means the machine ran at another speed when the cost "
            "model was measured, and predictions err where that change is not the same for every call size.")
    return [text, ""]


def cost_sections(fam: str) -> list[str]:
    """A section per committed CPU cost model of a family: the default one, then one per machine class
    (``results/costs-<family>-cpu-<machine key>.json``, written by scripts/class_benchmarks.sh)."""
    paths = [RES / f"costs-{fam}-cpu.json", *sorted(RES.glob(f"costs-{fam}-cpu-*.json"))]
    return [line for path in paths if path.exists() for line in cost_section(fam, path)]


def cost_section(fam: str, path: Path) -> list[str]:
    """One cost model's section: how it was measured, its machine, its fit per model and its figure."""
    cm = load_costs(fam, path=path)
    env = cm.env
    default = path.name == f"costs-{fam}-cpu.json"
    lines = [f"### Cost model of {fam} (`results/{path.name}`{'' if default else ', one machine class'})", "",
             f"Measured by `python -m csd_lib costs --family {fam}`: every model through `LM.logits`, "
             f"n = 1..32 tokens scored at cache lengths {sorted({s[2] for s in cm.samples if s[1] > 0})}, "
             f"the {'median' if env.get('point_statistic') == 'median' else 'fastest'} of {env.get('reps_per_point')} "
             f"interleaved rounds per point, timed in "
             f"{env.get('clock', 'wall time')}, torch {env.get('torch')}, "
             f"{env.get('threads')} thread(s), {env.get('cpu_model')}. Machine: "
             f"{describe_fingerprint(cost_fingerprint(cm))} (class `{machine_key(cost_fingerprint(cm))}`). "
             f"Fit: t(n, L) = a + b·n + c·L + d·n·L + "
             f"e·[n = 1] (n: tokens the call feeds; e: a one-token decoding step's own term).", "",
             "| model | a (ms) | b (ms/token) | c (ms/cached token) | d | e (ms, n = 1) | R² | max rel. error | 1 token "
             "| 17 tokens |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in cm.summary_rows():
        lines.append(f"| {r['model']} | {r['a_ms']:.3f} | {r['b_ms_per_token']:.4f} | {r['c_ms_per_cached']:.5f} | "
                     f"{r['d_ms_per_token_cached']:.6f} | {r['e_ms_single']:.3f} | {r['r2']:.3f} | "
                     f"{100 * r['max_rel_err']:.1f}% | "
                     f"{r['ms_1']:.2f} ms | {r['ms_17']:.2f} ms |")
    lines += ["", f"Engine overhead outside forwards (fitted on real generations): {1e3 * cm.review.coef[0]:.3f} ms "
              f"per model call + {1e3 * cm.review.coef[1]:.4f} ms per reviewed row, MaG {1e3 * cm.mag:.3f} ms per "
              f"proposal (R² {cm.review.r2:.2f}). Start per generation: "
              + ", ".join(f"{k} {1e3 * v:.2f} ms" for k, v in cm.start.items()) + ".", ""]
    fig = f"costs-{fam}.png" if default else f"{path.stem}.png"
    if png(cost_figure(cm), DOCS / fig):
        lines += [f"![cost model {fam}](docs/{fig})", ""]
    return lines


def mag_shares() -> list[str]:
    rows = []
    for fam in FAMILIES:
        for task in TASKS:
            recs = read_records(RES / f"{fam}-{task}.jsonl")
            s = summarize(recs) if recs else {}
            if not {MAG_ALONE.name, CSD.name} <= set(s):
                continue
            rows.append(f"| {fam} | {task} | {100 * mag_share(recs, 'mag'):.1f}% | "
                        f"{f(s['mag']['mean_tokens_per_target_call'])} | {100 * mag_share(recs, 'csd'):.1f}% "
                        f"({100 * mag_share(recs, 'csd', ('mag-match',)):.1f}% / "
                        f"{100 * mag_share(recs, 'csd', ('mag-bigram',)):.1f}%) |")
    return rows


README_END = "<!-- end of the block that scripts/make_benchmarks_md.py writes -->"


def readme_table(rows: list[dict]) -> None:
    """Rewrite the README's "Results at a glance" block (heading, table, computed notes) from the summaries."""
    path = ROOT / "README.md"
    text = path.read_text(encoding="utf-8").split("\n")
    head = next((i for i, line in enumerate(text) if line.startswith("## Results at a glance")), None)
    if head is None:
        print("README.md has no '## Results at a glance' section; table not written", file=sys.stderr)
        return
    end = next((i + 1 for i, line in enumerate(text) if line == README_END and i > head), None)
    if end is None:  # an older README: the block was heading, intro and table
        end = head + 1
        while end < len(text) and (text[end].startswith(("|", "Walltime speedups")) or not text[end].strip()):
            end += 1
    ns = sorted({f"n = {r['s']['ar']['n']} × {r['s']['ar']['repeats']} rounds" for r in rows})
    loads = [x["load1"] for r in rows for x in r["recs"] if x.get("load1") is not None]
    load = (f"1-minute load average median {np.median(loads):.1f}, range {min(loads):.1f}–{max(loads):.1f}"
            if loads else "load not recorded")
    new = [f"## Results at a glance (measured here: 2 CPU cores, fp32, one thread, {'; '.join(ns)}; "
           f"details in [BENCHMARKS.md](BENCHMARKS.md))", "",
           "Walltime speedups over AR are medians over examples of the per-example ratio (fastest round), "
           "with a bootstrap 95% interval. Best SD: the faster of SD's two runs, at two draft lengths "
           "(BENCHMARKS.md names them).", "",
           "| family / task | AR tok/s | CSD walltime speedup | best SD | hf-assisted | CSD predicted (cost model) "
           "| CSD SWI (model-size) | CSD tokens per target call | outputs identical to AR |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s, sd = r["s"], r["sd"]
        csd, hfa = s.get("csd", {}), s.get("hf-assisted", {})
        same = all(v["mismatches"] == 0 for v in s.values())
        new.append(f"| {r['fam']} / {r['task']} | {f(s['ar']['tokens_per_s'], 1)} | "
                   f"**{f(csd.get('speedup_walltime_median'))}x** [{ci(csd)}] | "
                   f"{f(sd.get('speedup_walltime_median'))}x | {f(hfa.get('speedup_walltime_median'))}x | "
                   f"{x(csd.get('speedup_walltime_predicted')) if r['priced'] else UNPRICED} | "
                   f"{f(csd.get('speedup_swi_ms'))} | "
                   f"{f(csd.get('mean_tokens_per_target_call'))} | "
                   f"{s['ar']['n']}/{s['ar']['n']}{', all methods' if same else ' (mismatches: see BENCHMARKS.md)'} |")
    new.append("")
    chains = [(r["task"], *swi_chain(r["s"], r["vert"], r["alt"])) for r in rows
              if r["fam"] == "tiny-t5" and CSD.name in r["s"] and SD.name in r["s"]]
    if chains:
        held = sum(ok for _, _, ok in chains)
        new.append(f"- The SWI ordering of paper Table 2 (full cascade > base + MaG > SD > AR) holds on tiny-t5 "
                   f"in {held} of {len(chains)} tasks: " + "; ".join(f"{t}: {c}" for t, c, _ in chains) + ".")
    gaps = [(r["fam"], r["task"], m, gap) for r in rows for m, gap in prediction_gaps(r["s"]).items()]
    if gaps:
        within = sum(abs(g) <= 0.10 for *_, g in gaps)
        worst = max(gaps, key=lambda g: abs(g[3]))
        new.append(f"- EWIF priced with the per-call cost model of each run's machine class lands within 10% of "
                   f"the measured median in {within} of {len(gaps)} (method, family, task) cases; the largest gap "
                   f"is {100 * worst[3]:+.0f}% ({worst[2]} on {worst[0]} / {worst[1]}). BENCHMARKS.md gives every "
                   f"gap, and what the cost model says the best K and k could reach.")
    clocks = sorted({c for r in rows for c in run_conditions(r["recs"])["clock"].split("+")})
    new.append(f"- The machine's {load} during these runs, timed in {' and '.join(CLOCK_NAMES[c] for c in clocks)}; "
               f"each example's methods ran back to back and the fastest of the rounds was kept, so the ratios "
               f"compare like with like.")
    write_atomic(path, "\n".join(text[:head] + new + [README_END] + text[end:]))


def run_cost_model(fam: str, recs: list[dict]):
    """The stored cost model of a run's machine class (:func:`csd_lib.price.costs.stored_costs_for_run`: its
    class file, else the default, each only when its fingerprint matches the run's); None when none does."""
    return stored_costs_for_run(fam, recs).cost_model


TABLE3_STATUS = {True: "met", False: "MISSED", None: "not run"}  # a Table 3 goal's status (report.trees.table3_goals)


def tree_sections() -> list[str]:
    """The paper's Table 3 on each family and task with a committed trees run (results/<fam>-<task>-trees.jsonl)."""
    out = []
    for fam in FAMILIES:
        for task in TASKS:
            recs = read_records(trees_path(fam, task))
            if not recs:
                continue
            rows = table3_rows(recs)
            out += [f"## Table 3 on {fam} / {task}: linear drafts and token trees (n = {rows[0]['n']}, "
                    f"max_new_tokens = {recs[0]['max_new_tokens']})", "",
                    "The paper's Table 3 (Vicuna-7B on an A40, docs/REFERENCE.md) on the embedded decoder-only family: "
                    "AR, SD at the family's k (`sd`) and at a second k (`sd@K`; the goals compare the faster of the "
                    "two), CS Drafting, Medusa-1 heads with their standard tree, CS Drafting + tree (`csd-tree`) and "
                    "the drafter alone building a tree (`tree-sd`), interleaved per example. "
                    f"Clock and machine load: {conditions(recs)}.", ""] + machine_lines(recs, run_cost_model(fam, recs)) + [
                    "| method | n | tokens/s | median speedup over AR [95% CI] | tokens / target call | "
                    "nodes verified / target call | mismatches vs AR |", "|---|---|---|---|---|---|---|"]
            for r in rows:
                out.append(f"| {r['method']} | {r['n']} | {f(r['tok/s'], 1)} | **{f(r['x AR (median)'])}x** "
                           f"{r['95% interval']} | {f(r['tokens / target call'])} | {f(r['nodes / target call'])} | "
                           f"{r['mismatches']} |")
            out += ["", "| goal | measured | target | status | note |", "|---|---|---|---|---|"]
            out += [f"| {name} | {value} | {target} | {TABLE3_STATUS[ok]} | {why} |"
                    for name, value, target, ok, why in table3_goals(recs)]
            limit = table3_limit(recs, run_cost_model(fam, recs))
            out += ["", f"What limits it: {limit}" if limit else "", ""]
    return out


def class_runs(fam: str, task: str) -> list[Path]:
    """The runs of other machine classes (``<fam>-<task>.<machine key>.jsonl``, plain or packed: read_records
    reads either), by their plain names."""
    names = {p.name.removesuffix(PACKED) for pat in ("*.jsonl", "*.jsonl" + PACKED)
             for p in RES.glob(f"{fam}-{task}.{pat}")}
    return [RES / n for n in sorted(names)]


def run_section(fam: str, task: str, path: Path, recs: list[dict]) -> dict:
    """One run's section (``lines``), priced with the stored cost model of its own machine class
    (:func:`csd_lib.price.costs.stored_costs_for_run`; none matching: the predictions say so), its
    ``headline`` goal row with the cost model's limit, and for a main run its ``readme`` row."""
    main_run = path.name == f"{fam}-{task}.jsonl"  # a class run (<fam>-<task>.<machine key>.jsonl) has no own runs
    choice = stored_costs_for_run(fam, recs)
    cm = choice.cost_model
    vrecs = read_records(RES / f"{fam}-{task}-vertical.jsonl") if main_run else []
    vert = summarize(vrecs, cm).get("csd") if vrecs else None
    if main_run:  # SD's second k ran in its own file
        arecs, alt_where = read_records(RES / f"{fam}-{task}-sd.jsonl"), "own run"
    else:  # a class run holds it as sd@K, interleaved with the rest: shown as SD at that k
        arecs = [r for r in recs if r["method"] == REFERENCE] + [dict(r, method="sd") for r in recs
                                                           if r["method"].startswith("sd@")]
        arecs, alt_where = (arecs, "same run") if len(arecs) > len([r for r in recs if r["method"] == REFERENCE]) else ([], "")
        recs = [r for r in recs if not r["method"].startswith("sd@")]
    s = summarize(recs, cm)
    alt = summarize(arecs, cm).get("sd") if arecs else None
    extra = {**({f"sd k = {run_k(arecs, 'sd')} ({alt_where})": alt} if alt else {}),
             **({"csd base+MaG (own run)": vert} if vert else {})}
    plan = next((p for p in (BenchRecord.from_dict(r).plan for r in recs if r["method"] == CSD.name) if p), None)
    cfg = {"k": [list(row) for row in plan.k], "lenience": plan.lenience} if plan else {}
    own = [(f"sd k = {run_k(arecs, 'sd')}", arecs), ("csd base+MaG", vrecs)]
    where = "" if main_run else f", machine class `{path.suffixes[-2][1:]}`"
    lines = [f"## {fam} on {task}{where} (n = {s['ar']['n']}, repeats = {s['ar']['repeats']}, "
             f"max_new_tokens = {recs[0]['max_new_tokens']})", "",
             f"CSD: K = `{cfg.get('k')}`, lenience = {cfg.get('lenience')}. "
             f"Source of prompts: {recs[0].get('source', '?')}. "
             f"Clock and machine load of this run: {conditions(recs)}."
             + "".join(f" Own run {name}: {conditions(r)}." for name, r in own if r), ""]
    if not any("rep" in r for r in recs):
        lines += ["These lines come from an earlier run (one round per example, before the lean-forward "
                  "change); they record no prompt lengths, so the prediction assumes the cost model's "
                  "mid cache length. Rerun `bash scripts/run_benchmarks.sh` to replace them.", ""]
    lines += machine_lines(recs, cm, choice.why)
    lines += table(s, extra, priced=cm is not None) + [""] + latency_table(s)
    if main_run and png(bench_figure(s, title=f"{fam} on {task}: speedup over AR"), DOCS / f"bench-{fam}-{task}.png"):
        lines += [f"![{fam} {task}](docs/bench-{fam}-{task}.png)", ""]
    if CSD.name in s and SD.name in s:
        orders = {name: swi_chain(s, vert, alt, key)[0] for name, key in
                  (("model-size", "speedup_swi_ms"), ("previous-work", "speedup_swi_pw"))}
        lines += ["SWI orderings as measured (SD: the higher of its runs; pooled over this run's examples): "
                  + "; ".join(f"{name}: {text}" for name, text in orders.items()) + ".", ""]
    rows = goals(fam, recs, s, vert, arecs, alt)
    lines += ["Goals (each from this one interleaved run, and its own-run rows; ratios are medians over "
              "examples with a bootstrap 95% interval):", ""] + goal_rows(rows) + [""]
    limit = None
    if cm is not None:
        lim_lines, limit = limits(fam, recs, vrecs, arecs, cm)
        lines += drift(recs, cm) + lim_lines + [""]
    else:
        lines += [f"What the cost model says these models could reach: {UNPRICED} (`bash "
                  f"scripts/class_benchmarks.sh` on this machine class measures one).", ""]
    lines += prediction_lines(recs, cm)
    headline = next(([fam, task, row, limit, cm is not None] for row in rows if row[0].startswith("CSD over")), None)
    readme = dict(fam=fam, task=task, recs=recs, s=s, vert=vert, alt=alt, priced=cm is not None,
                  sd=faster_sd_run(recs, s, arecs, alt)[1] if SD.name in s else {}) if main_run else None
    return dict(lines=lines, headline=headline, readme=readme)


def prediction_lines(recs: list[dict], cm) -> list[str]:
    """SWI and walltime against the EWIF prediction per method (``cm`` None: walltime not priced)."""
    pv = predicted_vs_measured(recs, cm)
    lines = ["SWI and walltime against the EWIF prediction (Bernoulli acceptance at this run's measured "
             "per-position rates). SWI is priced with parameter ratios. Walltime is priced with the cost "
             "model: t(n, L) per call, the engine's overhead, and each model's start per generation. "
             "The old prediction used seconds per call relative to the target; it is shown for comparison. "
             "The last column is the share of the predicted time that each model takes:", "",
             "| method | SWI measured | SWI predicted | walltime median | walltime predicted | "
             "old per-call prediction | where the time goes (predicted) |", "|---|---|---|---|---|---|---|"]
    old = predicted_vs_measured(recs) if cm is not None else pv
    for m, v in pv.items():
        share = ", ".join(f"{k} {100 * x:.0f}%" for k, x in v["cost_share"].items())
        lines.append(f"| {m} | {f(v['speedup_swi_ms'])} | {f(v['predicted_swi_ms'])} | "
                     f"{f(v['speedup_walltime_median'])} | {'not priced' if cm is None else f(v['predicted_walltime'])} | "
                     f"{f(old[m]['predicted_walltime'])} | {share or '-'} |")
    return lines + [""]


def headline_lines(headline: dict[str, list]) -> list[str]:
    """The headline goal, CSD over the best SD, per machine class: measured, goal, status and the cost model's
    limit (best predicted CSD over best predicted SD) beside it, or why there is none."""
    if not headline:
        return []
    (t5, t5_lo), (other, _) = csd_goal("tiny-t5"), csd_goal("any other family")
    out = ["## Headline goals per machine class", "",
           f"The headline goal is CSD at least {t5}x the best SD (median per-example walltime ratio, lower 95% "
           f"bound at least {t5_lo}) on both tiny-t5 tasks; the other families are held to {other}x. A goal holds "
           "per machine class: the cost model of that class says how far this run's acceptance can go at the best "
           "K and k (its limit), and a miss is read against it.", ""]
    for key, (fp, rows) in headline.items():
        out += [f"### Machine class `{key}`", "", f"{describe_fingerprint(fp, steps=False)}.", "",
                "| family / task | CSD over the best SD (measured) | goal | status | the cost model's limit "
                "(best predicted CSD / best predicted SD) |", "|---|---|---|---|---|"]
        for fam, task, (_, value, target, ok, _), limit, priced in rows:
            need = csd_goal(fam)[0]
            lim = x(limit) if limit is not None else ("-" if priced else UNPRICED)
            if ok:
                status = "met"
            elif limit is None:
                status = "MISSED; limit not priced"
            else:
                status = ("MISSED; reachable by the cost model" if limit >= need else
                          "MISSED; beyond this class's limit by the cost model")
            out.append(f"| {fam} / {task} | {value} | {target} | {status} | {lim} |")
        out.append("")
    return out


# -- settings tuned on one machine class (python -m csd_lib tune): results/tuned/, a section of its own ------------
TUNED = RES / "tuned"


def tuned_runs(fam: str, task: str) -> dict[str, list[dict]]:
    """{draft policy: records} of the runs ``results/tuned/<fam>-<task>-<policy>.jsonl`` (plain or packed)."""
    names = {p.name.removesuffix(PACKED) for p in TUNED.glob(f"{fam}-{task}-*.jsonl*") if not p.name.endswith(".lock")}
    runs = {n.removesuffix(".jsonl").removeprefix(f"{fam}-{task}-"): read_records(TUNED / n) for n in sorted(names)}
    return {policy: recs for policy, recs in runs.items() if recs}


def _median_ci(values: list[float]) -> str:
    lo, hi = bootstrap_median_ci(values)
    return f"{f(float(np.median(values)))}x [{f(lo)}–{f(hi)}]" if values else "-"


def adaptive_rows(runs: dict[str, list[dict]]) -> list[str]:
    """Per method and adaptive policy: the median per-example ratio of its speedup over AR to the fixed run's."""
    if "fixed" not in runs:
        return ["Adaptive against fixed: not measured (the fixed run did not finish in time).", ""]
    out = ["| method | policy | its speedup over the fixed run's (median per example [95% CI]) | examples |",
           "|---|---|---|---|"]
    for m in ("csd", "sd"):
        base = ratios(fastest(runs["fixed"]), m)
        for policy, recs in runs.items():
            if policy == "fixed":
                continue
            mine = ratios(fastest(recs), m)
            r = [mine[i] / base[i] for i in sorted(mine) if i in base]
            out.append(f"| {m} | {policy} | {_median_ci(r)} | {len(r)} |")
    return out + [""]


def tuned_task_lines(fam: str, task: str, runs: dict[str, list[dict]], tuned: dict) -> list[str]:
    """One family and task: every run's CSD and SD, the goal (tuned CSD over tuned SD, each the run of its tuned
    policy) with the cost model's limit where missed, and adaptive against fixed."""
    out = [f"### {fam} / {task}", "", "| run: draft policy (every method) | examples × repeats | CSD over AR "
           "(median [95% CI]) | SD over AR | clock and load |", "|---|---|---|---|---|"]
    for policy, recs in runs.items():
        s = summarize(recs)
        out.append(f"| {policy} | {s['ar']['n']} × {s['ar']['repeats']} | {f(s['csd']['speedup_walltime_median'])}x "
                   f"[{ci(s['csd'])}] | {f(s['sd']['speedup_walltime_median'])}x [{ci(s['sd'])}] | {conditions(recs)} |")
    out.append("")
    csd_run = runs.get(tuned["csd"]["draft_policy"])
    # The SD to beat: the fastest SD of every run here (whatever its policy), not only the tuned one.
    sd_policy = max(runs, key=lambda p: summarize(runs[p])["sd"]["speedup_walltime_median"], default=None)
    sd_run = runs.get(sd_policy)
    if csd_run and sd_run:
        r, (lo, hi) = speedup_ratio(csd_run, sd_run)
        need, need_lo = csd_goal(fam)
        ok = r >= need and (need_lo is None or lo >= need_lo)
        out += [f"Goal: the tuned CSD ({tuned['csd']['draft_policy']} run) over the fastest SD measured here "
                f"({sd_policy} run; SD was tuned to {tuned['sd']['draft_policy']}), median per-example ratio of their "
                f"speedups over AR (each against AR in its own run): **{f(r)}x [{f(lo)}–{f(hi)}]** against >= {need}x"
                + (f", lower bound >= {need_lo}" if need_lo else "") + f": **{'met' if ok else 'MISSED'}**.", ""]
        cm = run_cost_model(fam, csd_run)
        if not ok and cm is not None:
            lim, best = limits(fam, csd_run, [], sd_run, cm)
            verdict = "reachable" if best and best >= need else "beyond this machine class's limit"
            out += lim + ["", f"Read against the cost model: {verdict} ({x(best)} at the best predicted K and k).", ""]
        elif not ok:
            out += [f"The cost model's limit: {UNPRICED}.", ""]
    else:
        out += ["Goal: not measured (the run of the tuned CSD policy did not finish in time).", ""]
    return out + adaptive_rows(runs)


def tuned_section() -> list[str]:
    """Runs with the settings ``python -m csd_lib tune`` chose on one machine class (results/tuned/): the
    headline goal for the tuned CSD and SD, and adaptive against fixed for each."""
    files = sorted(TUNED.glob("*.json"))
    if not files:
        return []
    out = ["## Tuned on this machine class: the headline goal and adaptive against fixed", "",
           "`python -m csd_lib tune --family F --task synth-gsm8k` chose CSD's K and lenience, SD's k and each one's "
           "draft policy on the validation split (4 prompts, 64 new tokens; never the test prompts). Each run below "
           "benchmarks AR, SD and CSD with those K and k, interleaved per example on the test split, `--clock cpu "
           "--threads 1`, under one draft policy for every method (`bench --draft-policy`); the tuned CSD is read "
           "from the run of its own tuned policy and set against the fastest SD of all runs. The machine was shared with other jobs while "
           "measuring (each run gives its load average); a run that did not finish in time holds fewer examples.",
           ""]
    for path in files:
        tuned = json.loads(path.read_text())
        fam = tuned["family"]
        c, sd = tuned["csd"], tuned["sd"]
        out += [f"**{fam}**, machine class `{tuned['machine_class']}`, tuned on {tuned['date'][:10]} (`results/tuned/"
                f"{path.name}`): CSD K = `{c['k']}`, lenience {c['lenience']}, policy {c['draft_policy']}"
                + (f" (threshold {c['confidence']})" if c.get("confidence") else "")
                + f"; SD k = {sd['k']}, policy {sd['draft_policy']}"
                + (f" (threshold {sd['confidence']})" if sd.get("confidence") else "")
                + f". On the validation prompts: CSD {f(c['speedup'])}x over AR ({f(c['fixed_speedup'])}x fixed), SD "
                f"{f(sd['speedup'])}x ({f(sd['fixed_speedup'])}x fixed).", ""]
        for task in TASKS:
            runs = tuned_runs(fam, task)
            out += tuned_task_lines(fam, task, runs, tuned) if runs else [f"### {fam} / {task}", "",
                                                                          "Not measured: no run finished in time.", ""]
    return out


def main() -> int:  # long: the report's order, section by section
    lines = ["# Benchmarks", "",
             "The main runs (`results/<family>-<task>.jsonl`) were measured on this project's CI-class machine: "
             "2 CPU cores, no GPU, fp32, one torch thread; runs of another machine class "
             "(`results/<family>-<task>.<machine key>.jsonl`, from `bash scripts/class_benchmarks.sh`) follow "
             "each, and every run states its machine's fingerprint and is priced with the cost model of its own "
             "machine class. The machine may be shared with other jobs; each row gives the load average it "
             "saw. Interleaving keeps the ratios fair under load (a method and AR "
             "run back to back on the same example), each example's round was repeated and each method's "
             "fastest time kept, and the median per-example ratio with its bootstrap interval is the headline "
             "number, because one slow example can drag the aggregate (total AR time over total method time) "
             "far off. "
             "They were produced by `bash scripts/run_benchmarks.sh`, which runs `python -m csd_lib bench` "
             "for each family and task and then this report. Methods are interleaved per example, so every "
             "walltime speedup compares runs made in the same session, on the same prompts and with the same "
             "`max_new_tokens`. "
             "SWI counts forward calls and weights them by the paper's two cost models (docs/REFERENCE.md). "
             "Walltime is measured. Every method's tokens are compared with AR's, and the counts are in the "
             "'mismatches' column.", ""]
    intro = len(lines)
    env = None
    machines = {}  # machine class -> [fingerprint, runs measured on it]
    headline = {}  # machine class -> [fingerprint, headline goal rows]
    found = False
    readme_rows = []
    for fam in FAMILIES:
        for task, path in [(t, p) for t in TASKS for p in [RES / f"{fam}-{t}.jsonl", *class_runs(fam, t)]]:
            recs = read_records(path)
            if not recs:
                continue
            found = True
            env = env or recs[0].get("env")
            sec = run_section(fam, task, path, recs)
            lines += sec["lines"]
            for key, part in by_machine(recs).items():
                machines.setdefault(key, [run_fingerprint(part), []])[1].append(f"{fam} / {task}")
            run = run_fingerprint(recs)
            if sec["headline"]:
                headline.setdefault(machine_key(run), [run, []])[1].append(sec["headline"])
            if sec["readme"]:
                readme_rows.append(sec["readme"])
    lines[intro:intro] = headline_lines(headline)
    lines += tree_sections()
    lines += batch_sections(RES, FAMILIES, TASKS)  # scripts/benchmarks_batches.py
    for fam in FAMILIES:
        lines += cost_sections(fam)
    shares = mag_shares()
    if shares:
        lines += ["## MaG accepted share by task", "",
                  "The share of output tokens that Max-Gram proposed and the target kept (greedy, test split). "
                  "Method `mag` is MaG alone drafting for the target; `csd` is the tuned cascade.", "",
                  "| family | task | mag: share of tokens from MaG | mag: tokens per target call | "
                  "csd: share of tokens from MaG (match / bigram) |", "|---|---|---|---|---|"]
        lines += shares + [""]
    lines += tuned_section()
    tune_path = RES / "tune.json"
    if tune_path.exists():
        tj = json.loads(tune_path.read_text())
        lines += ["## Tuning K and lenience", "", tj.get("summary_md", ""), ""]
    if machines:
        lines += ["## Machines", "", "Each machine class (same CPU model, vector extensions and torch threads: "
                  "`csd_lib.measure.machine`) and the runs measured on it; numbers from different classes do not "
                  "compare:", ""] + [f"- `{key}`: {describe_fingerprint(fp, steps=False)}; runs: {', '.join(runs)}"
                                     for key, (fp, runs) in machines.items()] + [""]
    if env:
        lines += ["## Environment", "", "```", json.dumps(env, indent=1), "```", ""]
    lines += ["## The paper's numbers, for orientation only", "",
              "The paper used FLAN-T5-XXL (SWI, GSM8K and MMLU) and Vicuna-7B (walltime on an A40). "
              "Our families are about 1000 times smaller, the tasks are synthetic, and the runs are on a CPU, "
              "so only the orderings are comparable, not the magnitudes. Paper Table 2 (model-size SWI): "
              "base + small + MaG gives 3.88 on GSM8K and 4.88 on MMLU; speculative decoding with base gives 3.38 / 3.97. "
              "Paper Table 3 (Vicuna-7B tokens/s, GSM8K): AR 33.3, SD 44.3, CS Drafting 56.7, Medusa 61.9, CS Drafting + "
              "tree attention 63.8.", ""]
    if not found:
        print("no results/*.jsonl yet: run scripts/run_benchmarks.sh", file=sys.stderr)
        return 1
    write_atomic(ROOT / "BENCHMARKS.md", "\n".join(lines) + "\n")
    readme_table(sorted(readme_rows, key=lambda r: (FAMILIES.index(r["fam"]) if r["fam"] != "tiny-llama" else -1, r["task"])))
    print("wrote BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
