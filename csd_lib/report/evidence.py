"""The lessons' evidence: each question answered from the committed benchmark runs (n = 50 prompts per
family and task), with its 95% interval over prompts, so that a notebook can show the settled answer
beside the student's few live prompts.

:func:`evidence_rows` computes every answer from ``results/<family>-<task>.jsonl``; ``scripts/make_evidence.py``
writes them to ``results/evidence.json``; a test recomputes them from the runs and compares. No model is
loaded here.
"""
from __future__ import annotations

import json
import math

from .. import config
from ..measure.records import read_records
from .compare import PER_TARGET_CALL, method_difference

FAMILIES = ("tiny-t5", "tiny-llama", "tiny-t5-paper")
TASKS = ("synth-gsm8k", "synth-mmlu")
# question id -> (method a, method b, what is priced per unit, the question in plain words)
QUESTIONS = {
    "csd-vs-sd-target-calls": ("csd", "sd", PER_TARGET_CALL,
                               "Does CS Drafting keep more tokens per target call than speculative decoding?"),
    "csd-vs-sd-swi-model-size": ("csd", "sd", "model size",
                                 "Does CS Drafting beat speculative decoding in SWI, calls priced by model size?"),
    "csd-vs-sd-swi-previous-work": ("csd", "sd", "previous work",
                                    "Does CS Drafting beat speculative decoding in SWI, calls priced as in previous work?"),
    "mag-vs-ar-swi-model-size": ("mag", "ar", "model size",
                                 "Does MaG alone, at no model cost, beat autoregressive decoding in SWI?"),
}


def _round(x: float) -> float | None:
    return None if math.isnan(x) else round(float(x), 6)


def answer(records, question: str) -> dict:
    """One question answered from one benchmark run's records: the difference ``a - b`` with its interval."""
    if question not in QUESTIONS:
        raise ValueError(f"unknown question {question!r}; one of {sorted(QUESTIONS)}")
    a, b, per, words = QUESTIONS[question]
    d = method_difference(records, a, b, per=per)
    return {"question": question, "words": words, "a": a, "b": b, "per": per, "estimate": _round(d.estimate),
            "lo": _round(d.lo), "hi": _round(d.hi), "n": d.n, "level": d.level, "verdict": d.verdict,
            "says": d.says()}


def evidence_rows(results_dir=None) -> list[dict]:
    """Every question for every embedded family and task whose committed run is in ``results_dir``
    (default ``config.RESULTS_DIR``), in a fixed order."""
    root = config.RESULTS_DIR if results_dir is None else results_dir
    rows = []
    for fam in FAMILIES:
        for task in TASKS:
            path = root / f"{fam}-{task}.jsonl"
            if not path.exists():
                continue
            records = read_records(path)
            rows += [dict(family=fam, task=task, source=path.name, **answer(records, q)) for q in QUESTIONS]
    return rows


def evidence_json(rows: list[dict]) -> str:
    """The rows as the text of ``results/evidence.json`` (stable: sorted keys, two-space indent)."""
    return json.dumps(rows, indent=2, sort_keys=True, allow_nan=False) + "\n"


def committed_answers(family: str, question: str, path=None) -> list[dict]:
    """The committed answers to ``question`` for ``family``, one per task (``results/evidence.json``, or
    ``path``); [] for a family without committed runs (a real or bring-your-own family)."""
    if question not in QUESTIONS:
        raise ValueError(f"unknown question {question!r}; one of {sorted(QUESTIONS)}")
    p = config.RESULTS_DIR / "evidence.json" if path is None else path
    if not p.exists():
        return []
    return [r for r in json.loads(p.read_text(encoding="utf-8")) if r["family"] == family and r["question"] == question]
