"""The lessons' evidence: each question answered from the committed benchmark runs (n = 50 prompts per
family and task), with its 95% interval over prompts, so that a notebook can show the settled answer
beside the student's few live prompts.

:func:`evidence_rows` computes every answer from ``results/<family>-<task>.jsonl``; ``scripts/make_evidence.py``
writes them to ``results/evidence.json``; a test recomputes them from the runs and compares. No model is
loaded here.

Notebooks 01-04's questions (:data:`LESSON_QUESTIONS`: acceptance decay, MaG against its bigram table, lenience on
MaG's tokens, the horizontal tail) rest on runs of their own, made by ``scripts/make_evidence.py --run`` with the
configurations of :func:`lesson_configs` and committed compact under ``results/evidence/``; :func:`lesson_rows`
answers them into ``results/evidence-lessons.json`` and :func:`lesson_evidence` reads it back for a notebook.
"""
from __future__ import annotations

import json
import math

from .. import config
from ..measure.records import read_records
from ..engine.kvariants import without_tail
from ..engine.plan import vertical_k
from ..engine.stats import model_size_costs
from .compare import PER_TARGET_CALL, Run, method_difference, versus
from .intervals import Difference, paired_difference, rate_difference

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


# ---- Lessons 01-04: their own runs (results/evidence/<run>-<family>-<task>.jsonl), answered here ----------------
EVIDENCE_N = 50            # prompts per family and task (the first 50 of each task's test split, seed 0)
EVIDENCE_NEW_TOKENS = 32   # tokens per generation in the lessons' runs
LESSONS_FILE = "evidence-lessons.json"
# question id -> (run file stem, notebook, what is measured, the question in plain words)
LESSON_QUESTIONS = {
    "decay-position-10": ("decay", "01", "per prompt, P(first 10 accepted) minus P(first 1 accepted), averaged",
                          "Does the share of blocks that keep their first h drafted tokens fall from position 1 to h = 10?"),
    "mag-vs-bigram": ("mag-vs-bigram", "02", "accepted tokens per call, MaG minus the bigram table alone",
                      "Does MaG (match, then bigram fill) keep more tokens per call than a bigram drafter alone?"),
    "lenience-on-mag-rate": ("vertical", "03", "the first drafter's acceptance of MaG's tokens, lenient minus strict",
                             "Does lenience on MaG's tokens raise the rate at which the first drafter accepts them?"),
    "lenience-on-mag-swi": ("vertical", "03", "SWI (model size), lenient on MaG minus strict",
                            "Does lenience on MaG's tokens raise the vertical cascade's SWI?"),
    "tail-swi": ("tail", "04", "SWI (model size), K with the horizontal tail minus K without it",
                 "Does the horizontal tail pay: is SWI higher with the top row's tail than without it?"),
}
DECAY_K, DECAY_POS = 12, 10   # SD block length of the decay runs; the position compared with position 1


def _first_drafter(family) -> str:
    return family.drafters[0].name


def lesson_configs(family, question_or_run: str) -> dict[str, dict]:
    """The engine configurations of a lesson run (``decay``, ``vertical``, ``tail``), label -> ``generate`` arguments."""
    run = LESSON_QUESTIONS[question_or_run][0] if question_or_run in LESSON_QUESTIONS else question_or_run
    d1 = _first_drafter(family)
    if run == "decay":
        return {f"sd, k = {DECAY_K}": dict(method="sd", k=DECAY_K, drafter=d1)}
    if run == "vertical":   # notebook 03's "d1 + MaG" (Theorem 4.3's cascade), strict and lenient on MaG's tokens
        n = len(family.drafters) + 1
        k = [list(r) for r in vertical_k(5, n, family.mag.n)]
        k[0][n - 1] = 0
        lenient = max(4.0, family.default_lenience)
        return {"strict": dict(method="csd", k=k, lenience=1.0),
                "lenient": dict(method="csd", k=k, lenience=lenient, mag_lenience=True)}
    if run == "tail":   # the default K and the K without its tail; a default K without a tail gets MaG's block as one
        lam, k = family.default_lenience, [list(r) for r in family.default_k]
        cut = without_tail(k)
        if cut == k:
            k[0][-1] = family.mag.n
        return {"with tail": dict(method="csd", k=k, lenience=lam), "without tail": dict(method="csd", k=cut, lenience=lam)}
    raise ValueError(f"no engine configurations for {question_or_run!r}; one of decay, vertical, tail")


def lesson_run_path(question_or_run: str, family: str, task: str, results_dir=None):
    """``results/evidence/<run>-<family>-<task>.jsonl``."""
    run = LESSON_QUESTIONS[question_or_run][0] if question_or_run in LESSON_QUESTIONS else question_or_run
    root = config.RESULTS_DIR if results_dir is None else results_dir
    return root / "evidence" / f"{run}-{family}-{task}.jsonl"


def _by_config(records) -> dict[str, dict[int, dict]]:
    out: dict[str, dict[int, dict]] = {}
    for r in records:
        out.setdefault(r["config"], {})[r["example"]] = r
    return out


def _pair_sums(rec: dict, pair: str) -> tuple[int, int]:
    s = rec["pairs"].get(pair)
    return (sum(s["accepted"]), sum(s["reached"])) if s else (0, 0)


def _decay(runs) -> tuple[Difference, dict]:
    (recs,) = runs.values()
    ex = sorted(recs)
    pair = next(p for r in recs.values() for p in r["pairs"])
    s = [recs[i]["pairs"].get(pair, dict(reached=[], accepted=[])) for i in ex]
    at = lambda v, i: v[i] if len(v) > i else 0  # noqa: E731
    starts = [at(x["reached"], 0) for x in s]
    share = lambda i: [at(x["accepted"], i) / n if n else math.nan for x, n in zip(s, starts)]  # noqa: E731
    # per prompt, its share of blocks keeping the first DECAY_POS tokens minus its share keeping the first one;
    # bounded in [-1, 0]: an interval that holds where a few prompts carry every long run
    d = paired_difference(share(DECAY_POS - 1), share(0), bounds=(-1.0, 1.0))
    curve = [_round(sum(at(x["accepted"], i) for x in s) / max(1, sum(starts))) for i in range(DECAY_K)]
    return d, dict(pair=pair, position=DECAY_POS, curve=curve)


def _mag_bigram(runs) -> tuple[Difference, dict]:
    m, b = runs["mag"], runs["bigram"]
    ex = sorted(m)
    d = rate_difference([m[i]["accepted"] for i in ex], [m[i]["calls"] for i in ex],
                        [b[i]["accepted"] for i in ex], [b[i]["calls"] for i in ex])
    rate_of = lambda r: _round(sum(x["accepted"] for x in r.values()) / max(1, sum(x["calls"] for x in r.values())))  # noqa: E731
    return d, dict(rates={"mag": rate_of(m), "bigram": rate_of(b)})


def _run_of(recs: dict[int, dict], label: str) -> Run:
    first = next(iter(recs.values()))
    return Run(label, {i: r["tokens"] for i, r in recs.items()}, {i: dict(r["calls"]) for i, r in recs.items()},
               model_size_costs(first["params"]))


def _pair_rates(runs) -> dict:
    pairs = sorted({p for recs in runs.values() for r in recs.values() for p in r["pairs"]})
    out = {}
    for label, recs in runs.items():
        sums = {p: [sum(_pair_sums(r, p)[j] for r in recs.values()) for j in (0, 1)] for p in pairs}
        out[label] = {p: _round(a / t) if t else None for p, (a, t) in sums.items()}
    return out


def _lenience_rate(runs) -> tuple[Difference, dict]:
    s, l_ = runs["strict"], runs["lenient"]
    pair = next(p for r in s.values() for p in r["pairs"] if p.endswith("<-mag"))
    ex = sorted(s)
    (ha, ta), (hb, tb) = ([[_pair_sums(r[i], pair)[j] for i in ex] for j in (0, 1)] for r in (l_, s))
    return rate_difference(ha, ta, hb, tb), dict(pair=pair, rates=_pair_rates(runs))


def _swi_pair(runs, a: str, b: str) -> tuple[Difference, dict]:
    ra, rb = _run_of(runs[a], a), _run_of(runs[b], b)
    return versus(ra, rb), dict(swi={a: _round(ra.swi), b: _round(rb.swi)})


_ANSWER = {"decay-position-10": _decay, "mag-vs-bigram": _mag_bigram, "lenience-on-mag-rate": _lenience_rate,
           "lenience-on-mag-swi": lambda runs: _swi_pair(runs, "lenient", "strict"),
           "tail-swi": lambda runs: _swi_pair(runs, "with tail", "without tail")}


def lesson_answer(records, question: str) -> dict:
    """One lesson question answered from one run file's records: the difference with its interval, and what it rests on."""
    if question not in LESSON_QUESTIONS:
        raise ValueError(f"unknown lesson question {question!r}; one of {sorted(LESSON_QUESTIONS)}")
    _, notebook, measure, words = LESSON_QUESTIONS[question]
    d, extra = _ANSWER[question](_by_config(records))
    return dict(question=question, notebook=notebook, measure=measure, words=words, estimate=_round(d.estimate),
                lo=_round(d.lo), hi=_round(d.hi), n=d.n, level=d.level, verdict=d.verdict, interval=d.interval(), **extra)


def lesson_rows(results_dir=None) -> list[dict]:
    """Every lesson question for every embedded family and task whose run file is committed, in a fixed order."""
    rows = []
    for question, (run, *_rest) in LESSON_QUESTIONS.items():
        for fam in FAMILIES:
            for task in TASKS:
                path = lesson_run_path(run, fam, task, results_dir)
                if path.exists():
                    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
                    rows.append(dict(family=fam, task=task, source=f"evidence/{path.name}", **lesson_answer(recs, question)))
    return rows


def lesson_evidence(family: str, question: str, path=None) -> list[dict]:
    """The committed answers to a lesson question for ``family``, one per task (``results/evidence-lessons.json``,
    or ``path``); [] for a family without committed runs (a real or bring-your-own family)."""
    if question not in LESSON_QUESTIONS:
        raise ValueError(f"unknown lesson question {question!r}; one of {sorted(LESSON_QUESTIONS)}")
    p = config.RESULTS_DIR / LESSONS_FILE if path is None else path
    if not p.exists():
        return []
    return [r for r in json.loads(p.read_text(encoding="utf-8")) if r["family"] == family and r["question"] == question]


def _digits(row: dict, digits: int) -> int:
    """More digits where a bound that is not 0 would print as 0 (it would read as touching 0)."""
    while digits < 6 and any(v and abs(v) < 0.5 * 10 ** -digits for v in (row["lo"], row["hi"])):
        digits += 1
    return digits


def evidence_sentence(rows: list[dict], more: str, less: str, digits: int = 2) -> str:
    """One plain sentence for a notebook: the answer on every task with its interval, or that 50 prompts do not settle it
    (``more``/``less``: what a positive/negative answer means, as a clause)."""
    if not rows:
        return "No committed evidence for this family (only the embedded tiny families have it): the live run below is all there is."
    parts = []
    for r in rows:
        f = lambda v, d=_digits(r, digits): f"{v:+.{d}f}"  # noqa: E731
        parts.append(f"{r['task']}: {f(r['estimate'])} " + (f"[{f(r['lo'])}, {f(r['hi'])}]" if r["lo"] is not None else
                                                          "(too few prompts for an interval)"))
    verdicts = {r["verdict"] for r in rows}
    n = ", ".join(sorted({str(r["n"]) for r in rows}))
    tail = f" ({'; '.join(parts)}; 95% intervals over {n} prompts per task)."
    head = f"On {rows[0]['family']}, "
    if verdicts == {"higher"}:
        return head + f"on every task, {more}" + tail
    if verdicts == {"lower"}:
        return head + f"on every task, {less}" + tail
    if not verdicts & {"higher", "lower"}:
        return head + f"{n} prompts per task do not settle whether {more}" + tail
    said = [f"{r['task']}: " + (more if r["verdict"] == "higher" else less if r["verdict"] == "lower" else
                                f"{r['n']} prompts do not settle it") for r in rows]
    return head + "; ".join(said) + tail
