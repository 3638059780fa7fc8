"""Spec-Bench answer files from a bench's records: ``DIR/<method>.jsonl``, one line per example.

Spec-Bench (the published repository hemingkx/Spec-Bench) compares methods through answer files that its
``evaluation/speed.py`` reads; docs/REFERENCE.md ("Spec-Bench answer files") lists each field, what is written
in it here and where Spec-Bench reads it. Every value comes from one bench record (:func:`answer`): the text
of its tokens, its token count and walltime, and the tokens each target call kept (:func:`accept_lengths`).
The files are rewritten whole (atomically) from the results file after each run, so a resumed bench writes
them complete.
"""
from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

from ..families.tasks import spec_bench_id
from ..fileio import write_atomic
from .records import BenchRecord, as_records, fastest

log = logging.getLogger(__name__)

SUFFIX = ".jsonl"


def accept_lengths(rec: BenchRecord) -> list[int]:
    """Tokens kept per target call, one per call in order: the runs of equal commit times (the tokens one target
    review hands to the output arrive together, :mod:`csd_lib.engine.generation`), bonus or correction token
    included, so they sum to the record's tokens. [] when the record holds no commit times, or when the runs
    do not number its target calls (a clock too coarse to tell two calls apart): never guessed."""
    if rec.commit_times is None or len(rec.commit_times) != rec.n_tokens:
        return []
    runs = [len(list(g)) for _, g in itertools.groupby(rec.commit_times)]
    calls = rec.stats.get("calls", {}).get(rec.stats.get("target", "target"))  # the HF baselines record none
    if calls is not None and calls != len(runs):
        log.warning(f"spec-bench: example {rec.example} {rec.method}: {len(runs)} commit times for {calls} target "
                    f"calls; accept_lengths left empty")
        return []
    return runs


def answer(rec: BenchRecord, text: str, model_id: str, tstamp: float) -> dict:
    """One Spec-Bench answer line from bench record ``rec`` (``text``: its tokens decoded): the question id (Spec-Bench's
    own for a ``spec-bench`` example, else the example's index), category (the record's task), one choice with
    one turn."""
    qid = spec_bench_id(rec.source)
    lengths = accept_lengths(rec)
    choice = {"index": 0, "turns": [text], "decoding_steps": [len(lengths)] if lengths else [],
              "new_tokens": [rec.n_tokens], "wall_time": [rec.wall_time], "accept_lengths": lengths}
    return {"question_id": rec.example if qid is None else qid, "category": rec.task,
            "answer_id": f"{rec.method}-{rec.example}-r{rec.rep}", "model_id": model_id, "choices": [choice],
            "tstamp": tstamp}


def answers(records, decode: Callable[[list[int]], str], family: str) -> dict[str, list[dict]]:
    """{method: its answer lines, by question id}: each example's fastest successful record over repeats (the one
    the summary keeps, :func:`csd_lib.measure.records.fastest`); ``decode``: token ids to text."""
    now = time.time()
    out = {}
    for method, by_example in fastest(as_records(records)).items():
        lines = [answer(r, decode(r.token_ids), f"{family}-{method}", now) for r in by_example.values()]
        out[method] = sorted(lines, key=lambda a: a["question_id"])
    return out


def write_spec_bench(records, out_dir, decode: Callable[[list[int]], str], family: str) -> list[Path]:
    """Write ``out_dir/<method>.jsonl`` for each method of ``records`` (:func:`answers`), each file whole
    (:func:`csd_lib.fileio.write_atomic`); returns the paths written."""
    out_dir = Path(out_dir)
    paths = []
    for method, lines in answers(records, decode, family).items():
        path = out_dir / f"{method}{SUFFIX}"
        write_atomic(path, "".join(json.dumps(a) + "\n" for a in lines), "--spec-bench-out")
        paths.append(path)
    return paths
