"""Batch benchmark: every method on the same batches of prompts at each batch size, interleaved, resumable JSONL.

At batch size B the examples are cut into ``n // B`` batches of B prompts in order (mixed lengths; a remainder
smaller than B is not run at that B). Each batch is a *round*: every method runs it once through
:func:`csd_lib.engine.batch.run_batch`, back to back, AR first, so that a method and AR meet the same load. A
round writes one line per row (:data:`BATCH_FIELDS` beside a bench line's own): the batch's seconds and tokens/s
over the batch (new tokens of every row over the batch's time on the run's clock), the row's TTFT and ITL
percentiles from its commit times, the speedup over AR's run of the same batch and whether the row's tokens
differ from AR's (``mismatch``). Lines are keyed by (batch size, batch, method, row); a round's lines are
written together (times to the microsecond: :func:`to_microseconds`), and a round with a line missing (a run
killed mid-write) is run again on resume. :func:`csd_lib.report.batches.batch_summary` summarizes a file.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..engine.batch import check_linear, run_batch
from ..engine.cascade import encode_prompt
from ..engine.inputs import check_room
from ..engine.methods import REFERENCE, find, names
from ..engine.plan import check_max_new_tokens
from ..fileio import check_output_path
from .bench import (BenchInterrupted, check_clock, held_interrupt, load_average, method_plan, repair_results,
                    results_lock, task_k, use_clock)
from .machine import environment
from .records import other_run, read_records, unpack

log = logging.getLogger(__name__)

ITL_QUANTILES = (50, 90, 99)   # the per-row inter-token latency percentiles a line carries
# what a batch line adds to a bench line (csd_lib.measure.records.BenchRecord keeps them in ``extra``)
BATCH_FIELDS = ("batch_size", "batch", "row", "batch_rows", "batch_seconds", "batch_tokens", "tokens_per_s",
                "ttft", "itl_p50", "itl_p90", "itl_p99", "speedup_vs_ar", "mismatch")


def check_batch_sizes(batch_sizes, n: int, methods) -> list[int]:
    """The batch sizes a bench of ``n`` examples runs ``methods`` at, sorted; a ValueError in one line for a size that
    is not a whole number >= 1, one above ``n`` (no batch to fill), or a tree method at a size above 1."""
    if isinstance(batch_sizes, (int, np.integer)) and not isinstance(batch_sizes, bool):
        batch_sizes = [batch_sizes]
    sizes = list(batch_sizes)
    bad = [b for b in sizes if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1]
    if not sizes or bad:
        raise ValueError(f"batch sizes must be whole numbers >= 1, e.g. 1,2,4,8; got {bad or sizes!r}")
    if max(sizes) > n:
        raise ValueError(f"batch size {max(sizes)} is larger than the {n} examples: give --n >= {max(sizes)} or "
                         f"smaller batch sizes")
    if max(sizes) > 1:
        for m in methods:
            if find(m) is not None and not find(m).baseline and find(m).is_tree:
                check_linear(m)
    return sorted(set(int(b) for b in sizes))


def batches_of(n: int, batch_size: int) -> list[list[int]]:
    """The example indices of each batch at ``batch_size``: consecutive, full batches only."""
    return [list(range(i, i + batch_size)) for i in range(0, n - batch_size + 1, batch_size)]


def batch_key(r: dict) -> tuple[int, int, str, int]:
    """A batch line's key: (batch size, batch, method, row)."""
    return r["batch_size"], r["batch"], r["method"], r["row"]


def row_latency(commit_times: list[float]) -> dict:
    """A row's TTFT and ITL percentiles (seconds; None where the row has too few tokens)."""
    itl = np.diff(np.asarray(commit_times, dtype=float))
    out = {"ttft": float(commit_times[0]) if commit_times else None}
    for q in ITL_QUANTILES:
        out[f"itl_p{q}"] = float(np.percentile(itl, q)) if itl.size else None
    return out


def to_microseconds(value):
    """``value`` with every float rounded to 6 decimals (times to the microsecond: far below any call's noise), so
    that committed runs stay small."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, list):
        return [to_microseconds(v) for v in value]
    if isinstance(value, dict):
        return {k: to_microseconds(v) for k, v in value.items()}
    return value


def run_round(family, prompts: list[list[int]], plan) -> tuple[list, float]:
    """One method on one batch: (the rows' generations, the batch's seconds on the models' clock)."""
    clock = family.target.meter.clock
    t0 = clock()
    gens = run_batch(family, replace(plan, batch_size=len(prompts)), prompts)
    return gens, clock() - t0


def round_lines(gens, seconds: float, ar_lines: list[dict] | None, cache_start) -> list[dict]:
    """The lines of one round (one per row), the batch's throughput on each, compared with AR's round."""
    tokens = sum(len(g.token_ids) for g in gens)
    ar_tps = ar_lines[0]["tokens_per_s"] if ar_lines else None
    lines = []
    for row, g in enumerate(gens):
        rec = {"token_ids": g.token_ids, "stats": g.stats.to_dict(), "plan": g.plan.to_dict(),
               "provenance": g.provenance_counts(), "commit_times": g.commit_times,
               "cache_start": cache_start[row], "draft_lengths": g.draft_lengths(),
               "row": row, "batch_rows": len(gens), "batch_seconds": seconds, "batch_tokens": tokens,
               "tokens_per_s": tokens / seconds if seconds > 0 else None, **row_latency(g.commit_times)}
        rec["speedup_vs_ar"] = rec["tokens_per_s"] / ar_tps if ar_tps and rec["tokens_per_s"] else None
        rec["mismatch"] = None if ar_lines is None else g.token_ids != ar_lines[row]["token_ids"]
        lines.append(rec)
    return lines


def batch_resume_problem(records: list[dict], family, examples, max_new_tokens: int, split: str, seed: int,
                         clock: str, plans: dict) -> str | None:
    """The first way a batch results file differs from the run asked for (``line N: ...``), or None: family,
    split, seed, max_new_tokens, clock, each example's source and each method's plan (K, lenience, drafters)."""
    problem = other_run(records, family=family.name)
    if problem:
        return problem
    for i, r in enumerate(records, 1):
        if "batch_size" not in r:
            return f"line {i}: not a batch line (no batch_size): a batch-1 bench file"
        ex = examples[r["example"]] if r["example"] < len(examples) else None
        pairs = [("split", r.get("split"), split), ("seed", r.get("seed"), seed),
                 ("max_new_tokens", r.get("max_new_tokens"), max_new_tokens), ("clock", r.get("clock"), clock)]
        if ex is not None:
            pairs.append((f"example {r['example']}'s source", r.get("source"), ex.source))
        if r["method"] in plans:
            have, want = r.get("plan") or {}, plans[r["method"]].to_dict()
            pairs += [(f"{r['method']}'s {key}", have.get(key), want.get(key)) for key in ("k", "lenience", "drafters")]
        for what, old, new in pairs:
            if old != new:
                return f"line {i}: {what} is {old!r} there, {new!r} now"
    return None


def complete_rounds(records: list[dict]) -> list[dict]:
    """The lines of complete rounds (every row of a (batch size, batch, method) present once), first of duplicates."""
    seen, by = set(), {}
    for r in records:
        if "error" in r or batch_key(r) in seen:
            continue
        seen.add(batch_key(r))
        by.setdefault(batch_key(r)[:3], []).append(r)
    return [r for rows in by.values() if len(rows) == rows[0]["batch_size"] for r in rows]


def run_batch_bench(family, examples, methods, out: Path, batch_sizes, max_new_tokens: int = 128, k=None,
                    sd_k=None, split: str = "test", seed: int = 0, clock: str = "wall", progress: bool = True,
                    warmup: bool = True, stop_after: int | None = None) -> list[dict]:
    """Run every method on every batch at each of ``batch_sizes`` (module docstring), one line per row.

    AR runs as the reference. Existing complete rounds of ``out`` are kept and skipped (a file of another run is a
    ValueError naming the difference); the run holds the file's lock (:func:`csd_lib.measure.bench.results_lock`).
    ``stop_after``: end after that many rounds (used to test resumption). Ctrl-C raises
    :class:`csd_lib.measure.bench.BenchInterrupted` after the last complete round."""
    bad = [m for m in methods if find(m) is None or find(m).baseline]
    if bad:
        raise ValueError(f"unknown or non-engine method(s) {bad} for a batch bench; use {', '.join(names(engine=True))}")
    skip = [m for m in methods if not find(m).runs_on(family)]
    if skip:
        log.warning(f"family '{family.name}' has too few drafters for {', '.join(skip)}: skipped")
    methods = [REFERENCE, *[m for m in dict.fromkeys(methods) if m != REFERENCE and m not in skip]]
    sizes = check_batch_sizes(batch_sizes, len(examples), methods)
    check_max_new_tokens(max_new_tokens)
    check_clock(clock, family.target.device)
    k, sd_k = task_k(family, examples, k, sd_k)
    plans = {m: method_plan(family, m, k=k, sd_k=sd_k) for m in methods}
    prompts = [encode_prompt(family, ex.prompt) for ex in examples]
    for i, ids in enumerate(prompts):
        try:
            check_room(family.target, ids, max_new_tokens)
        except ValueError as e:
            raise ValueError(f"example {i} ({examples[i].source}): {e}") from None
    out = Path(out)
    check_output_path(out, "out")
    with results_lock(out):
        return _run_locked(family, examples, prompts, methods, plans, sizes, out, max_new_tokens, split, seed, clock,
                           progress, warmup, stop_after)


def _todo(sizes: list[int], n: int, methods: list[str], done: set) -> list[tuple[int, int, list[int], list[str]]]:
    """(batch size, batch, its examples, the methods still to run on it), AR first where it is to run."""
    todo = []
    for B in sizes:
        for b, idx in enumerate(batches_of(n, B)):
            left = [m for m in methods if (B, b, m) not in done]
            if left:
                todo.append((B, b, idx, left))
    return todo


# long: the resumable loop reads as one: resume check, warm-up, one round written per batch and method
def _run_locked(family, examples, prompts, methods, plans, sizes, out, max_new_tokens, split, seed, clock, progress,
                warmup, stop_after) -> list[dict]:
    unpack(out)
    records = read_records(out)
    problem = batch_resume_problem(records, family, examples, max_new_tokens, split, seed, clock, plans)
    if problem:
        raise ValueError(f"{out} holds another run's results ({problem}); resume it with the same settings, "
                         f"or write to a new file")
    records = complete_rounds(records)
    repair_results(out, records)
    done = {batch_key(r)[:3] for r in records}
    todo = _todo(sizes, len(examples), methods, done)
    if not todo:
        return records
    ar_of = {batch_key(r)[:2]: [] for r in records if r["method"] == REFERENCE}
    for r in sorted((r for r in records if r["method"] == REFERENCE), key=lambda r: r["row"]):
        ar_of[batch_key(r)[:2]].append(r)
    env = environment()
    start = [1 if family.target.is_encoder_decoder else len(p) for p in prompts]
    rows_todo = sum(B * len(left) for B, _, _, left in todo)
    with use_clock(family, clock), open(out, "a", encoding="utf-8") as f:
        if warmup:  # first calls of a new shape are slow: never time them
            for m in tqdm(methods, desc=f"warm-up {family.name}", leave=False, disable=not progress):
                run_batch(family, replace(plans[m], max_new_tokens=min(16, max_new_tokens), batch_size=2), prompts[:2])
        bar = tqdm(total=rows_todo, desc=f"batch bench {family.name}", unit="row", disable=not progress)
        rounds = 0
        try:
            for B, b, idx, left in todo:
                for m in left:
                    gens, secs = run_round(family, [prompts[i] for i in idx], replace(plans[m], max_new_tokens=max_new_tokens))
                    lines = round_lines(gens, secs, None if m == REFERENCE else ar_of.get((B, b)),
                                        [start[i] for i in idx])
                    for rec, i in zip(lines, idx):
                        rec.update(example=i, method=m, rep=0, batch_size=B, batch=b, family=family.name,
                                   task=examples[i].task, split=split, seed=seed, source=examples[i].source,
                                   max_new_tokens=max_new_tokens, prompt_tokens=len(prompts[i]), env=env, clock=clock,
                                   load1=load_average())
                    lines = [to_microseconds(r) for r in lines]
                    if m == REFERENCE:
                        ar_of[(B, b)] = lines
                    with held_interrupt():  # a round is written whole, then Ctrl-C lands
                        f.write("".join(json.dumps(r) + "\n" for r in lines))
                        f.flush()
                        os.fsync(f.fileno())
                        records += lines
                    rounds += 1
                    bar.update(B)
                    if stop_after is not None and rounds >= stop_after:
                        bar.close()
                        return records
            bar.close()
        except KeyboardInterrupt:
            raise BenchInterrupted(rounds, sum(len(left) for *_, left in todo)) from None
    return records
