"""The lessons' evidence: each question answered from the committed benchmark runs (n = 50 prompts per
family and task), with its 95% interval over prompts, so that a notebook can show the settled answer
beside the student's few live prompts.

:func:`evidence_rows` computes every answer from ``results/<family>-<task>.jsonl`` (notebooks 05-08's also from
the trees runs and the run files under ``results/evidence/``: :data:`BENCH_QUESTIONS`, :func:`bench_lesson_rows`); ``scripts/make_evidence.py``
writes them to ``results/evidence.json``; a test recomputes them from the runs and compares. Only
:func:`make_bench_runs` (``make_evidence.py --runs``) loads a model.

Notebooks 01-04's questions (:data:`LESSON_QUESTIONS`: acceptance decay, MaG against its bigram table, lenience on
MaG's tokens, the horizontal tail) rest on runs of their own, made by ``scripts/make_evidence.py --run`` with the
configurations of :func:`lesson_configs` and committed compact under ``results/evidence/``; :func:`lesson_rows`
answers them into ``results/evidence-lessons.json`` and :func:`lesson_evidence` reads it back for a notebook.

Notebook 10's questions (:data:`POLICY_QUESTIONS`: each draft-length policy against fixed K, for SD and CSD, in tokens
per target call and in CPU time) rest on the policies runs (:func:`make_policy_runs`, ``make_evidence.py --run
policies``); :func:`policy_rows` answers them into ``results/evidence-policies.json``, :func:`policy_evidence` reads it.
"""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

from .. import config
from ..fileio import PACKED, read_text, write_atomic
from ..engine.kvariants import without_tail
from ..engine.lenience import lenient_pairs, plan_pairs
from ..engine.methods import AR, CSD, CSD_TREE, MEDUSA
from ..engine.plan import vertical_k
from ..engine.stats import model_size_costs
from ..measure.records import as_records, fastest, pack, read_records, stored
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
            if stored(path) is None:
                continue
            records = read_records(path)
            rows += [dict(family=fam, task=task, source=path.name, **answer(records, q)) for q in QUESTIONS]
    return rows + bench_lesson_rows(root)


def evidence_json(rows: list[dict]) -> str:
    """The rows as the text of ``results/evidence.json`` (stable: sorted keys, two-space indent)."""
    return json.dumps(rows, indent=2, sort_keys=True, allow_nan=False) + "\n"


def committed_answers(family: str, question: str, path=None) -> list[dict]:
    """The committed answers to ``question`` for ``family``, one per task (``results/evidence.json``, or
    ``path``); [] for a family without committed runs (a real or bring-your-own family)."""
    if question not in QUESTIONS and question not in BENCH_QUESTIONS:
        raise ValueError(f"unknown question {question!r}; one of {sorted(QUESTIONS) + sorted(BENCH_QUESTIONS)}")
    p = config.RESULTS_DIR / "evidence.json" if path is None else path
    if not p.exists():
        return []
    return [r for r in json.loads(p.read_text(encoding="utf-8")) if r["family"] == family and r["question"] == question]


# -- notebooks 05-08: walltime, the prediction, lenience, trees ------------------------------------------
# Each answer is a row of the same shape as ``answer``'s (family, task, source, question, words, a, b, per,
# estimate, lo, hi, n, level, verdict, says), plus ``pair`` (lenience: the reviewer<-proposer pair) and
# ``predicted`` (the prediction questions: EWIF's walltime speedup from the stored cost model of the run's
# machine class). Runs the benchmark lacks are kept under ``results/evidence/`` (:func:`make_bench_runs`).

BENCH_QUESTIONS = {
    "csd-vs-sd-walltime": ("csd", "sd", "walltime",
                           "Is CS Drafting faster than speculative decoding in walltime (speedup over AR, per prompt)?"),
    "csd-walltime-vs-prediction": ("csd", "prediction", "walltime",
                                   "Does EWIF, priced by the run's cost model, predict CS Drafting's walltime speedup?"),
    "sd-walltime-vs-prediction": ("sd", "prediction", "walltime",
                                  "Does EWIF, priced by the run's cost model, predict SD's walltime speedup?"),
    "drafter-mag-vs-sd-swi-model-size": ("drafter + MaG", "sd", "model size",
                                         "Does the largest drafter helped by MaG beat speculative decoding with it "
                                         "alone in SWI (the paper's Table 2 ordering)?"),
    "lenience-vs-strict-swi-model-size": ("csd", "csd, l = 1", "model size",
                                          "Does the family's lenience raise CS Drafting's SWI over strict reviews?"),
    "lenience-vs-strict-acceptance": ("csd", "csd, l = 1", "acceptance",
                                      "Where does lenience act: each pair's acceptance rate, lenient minus strict?"),
    "csd-tree-vs-csd-target-calls": ("csd-tree", "csd", PER_TARGET_CALL,
                                     "Does CS Drafting + tree keep more tokens per target call than CS Drafting?"),
    "csd-tree-vs-csd-walltime": ("csd-tree", "csd", "walltime",
                                 "Is CS Drafting + tree faster than CS Drafting in walltime (speedup over AR, per prompt)?"),
    "medusa-vs-csd-walltime": ("medusa", "csd", "walltime",
                               "Is Medusa faster than CS Drafting in walltime (speedup over AR, per prompt)?"),
}
EVIDENCE_DIR = "evidence"   # results/evidence/: run files the lessons need beyond the benchmark


def strict_run_path(family: str, task: str, root=None) -> Path:
    """CS Drafting at lenience 1 on the benchmark's prompts and K: ``results/evidence/lenience-vs-strict-...``."""
    return Path(config.RESULTS_DIR if root is None else root) / EVIDENCE_DIR / f"lenience-vs-strict-{family}-{task}.jsonl"


def vertical_run_path(family: str, task: str, root=None) -> Path:
    """Drafter + MaG on the benchmark's prompts where no committed ``-vertical`` run exists."""
    return Path(config.RESULTS_DIR if root is None else root) / EVIDENCE_DIR / \
        f"drafter-mag-vs-sd-{family}-{task}-vertical.jsonl"


def _seed_reference(out: Path, records, n: int) -> None:
    """Start a new evidence run file with the benchmark's own AR lines (first repeat) of its ``n`` prompts, so that
    ``run_bench`` (which always runs AR beside a method) runs only the new configuration."""
    if stored(out) is not None:   # a run under way, or a packed one (run_bench unpacks it to resume)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    ar = [r for r in records if r["method"] == AR.name and r.get("rep", 0) == 0 and r["example"] < n and "error" not in r]
    out.write_text("".join(json.dumps(r) + "\n" for r in ar), encoding="utf-8")


def make_bench_runs(root=None, families=FAMILIES, tasks=TASKS) -> list[Path]:
    """Write the run files the lessons' questions need (missing lines only; a run resumes): CSD at lenience 1
    with the benchmark's K on its prompts (where the plan has a lenient review), and drafter + MaG
    (``base_mag_k``) where no ``-vertical`` run is committed. AR's lines are the benchmark's own; only call
    counts are read from these files, so the machine's load does not matter. Each is stored packed (``.jsonl.gz``).
    Loads each family."""
    import torch

    from ..engine.kvariants import base_mag_k
    from ..families.family import load_family
    from ..families.tasks import load_task
    from ..measure.bench import run_bench
    base = Path(config.RESULTS_DIR if root is None else root)
    torch.set_num_threads(1)   # the benchmark's clock: CPU time, one thread
    written = []
    for fam_name in families:
        fam = None
        for task in tasks:
            records = read_records(base / f"{fam_name}-{task}.jsonl")
            csd = [r for r in as_records(records) if r.method == CSD.name and r.ok]
            if not csd:
                continue
            fam = fam or load_family(fam_name)
            plan, n, seed = csd[0].plan, len({r.example for r in csd}), csd[0].seed
            examples = load_task(task, csd[0].split, n, seed=seed)
            runs = [(strict_run_path(fam_name, task, base), dict(k=[list(r) for r in plan.k], lenience=1.0,
                                                                  mag_lenience=plan.mag_lenience))] * bool(lenient_pairs(plan))
            if len(fam.drafters) >= 2 and stored(base / f"{fam_name}-{task}-vertical.jsonl") is None:
                runs.append((vertical_run_path(fam_name, task, base), dict(k=base_mag_k(fam, task))))
            for out, how in runs:
                _seed_reference(out, records, n)
                run_bench(fam, examples, ["csd"], out, max_new_tokens=plan.max_new_tokens, progress=False, seed=seed,
                          split=csd[0].split, clock="cpu", **how)
                written.append(pack(out))   # stored packed, like the trees runs: read_records reads either
    return written


def _bench_row(family: str, task: str, source: str, question: str, d, **extra) -> dict:
    a, b, per, words = BENCH_QUESTIONS[question]
    return {"family": family, "task": task, "source": source, "question": question, "words": words, "a": a, "b": b,
            "per": per, "estimate": _round(d.estimate), "lo": _round(d.lo), "hi": _round(d.hi), "n": d.n,
            "level": d.level, "verdict": d.verdict, "says": d.says(), **extra}


def _walltime_rows(fam: str, task: str, source: str, records) -> list[dict]:
    """CSD against SD in walltime, and each against EWIF's prediction priced by the run's stored cost model."""
    from ..price.costs import stored_costs_for_run
    from ..price.predict import predict_metrics_from_runs
    from .bench_stats import ratios
    from .intervals import paired_difference
    from .trees import speedup_difference
    rows = [_bench_row(fam, task, source, "csd-vs-sd-walltime", speedup_difference(records, "csd", "sd"))]
    choice = stored_costs_for_run(fam, records)
    if choice.cost_model is None:
        return rows
    best = fastest(as_records(records))
    for m in ("csd", "sd"):
        pred = predict_metrics_from_runs(list(best[m].values()), choice.cost_model)["predicted_walltime"]
        measured = list(ratios(best, m).values())
        d = paired_difference(measured, [pred] * len(measured))   # measured minus predicted, per prompt
        rows.append(_bench_row(fam, task, source, f"{m}-walltime-vs-prediction", d, predicted=_round(pred),
                                cost_model=_shown_path(choice.path)))
    return rows


def _shown_path(path) -> str:
    return Path(path).name if path else ""


def _vertical_row(fam: str, task: str, source: str, records, base: Path) -> list[dict]:
    """Drafter + MaG against the family's best SD run in SWI (model size), on the prompts the drafter + MaG run
    holds: its committed ``-vertical`` run, the evidence run, or (one neural drafter) CSD itself."""
    from .compare import bench_run, best_of, versus
    vrecs, vpath = vertical_records(fam, task, base)
    vrecs = vrecs or records
    vc = bench_run(vrecs, "csd")
    if vc is None or (vpath is None and len(vc.plan.neural) >= 2):   # one neural drafter: CSD is drafter + MaG
        return []
    ids = sorted(vc.tokens)
    sd_runs = [records] + [x for x in [read_records(base / f"{fam}-{task}-sd.jsonl")] if x]
    sds = {s.label: s.on(ids) for s in (bench_run(r, "sd") for r in sd_runs)}
    top = best_of(sds)
    return [_bench_row(fam, task, vpath.name if vpath else source, "drafter-mag-vs-sd-swi-model-size",
                        versus(vc, sds[top]), drafter_mag_k=[list(r) for r in vc.plan.k], sd=top,
                        swi_a=_round(vc.swi), swi_b=_round(sds[top].swi))]


def _lenience_rows(fam: str, task: str, records, base: Path) -> list[dict]:
    """The family's lenience against lenience 1 on the same prompts and K: SWI, and each pair's acceptance."""
    from .compare import bench_run, versus
    from .intervals import rate_difference
    spath = stored(strict_run_path(fam, task, base))
    strict = read_records(spath) if spath else []
    if not strict:
        return []
    loose, tight = bench_run(records, "csd"), bench_run(strict, "csd")
    rows = [_bench_row(fam, task, spath.name, "lenience-vs-strict-swi-model-size", versus(loose, tight),
                        lenience=loose.plan.lenience, lenient_pairs=lenient_pairs(loose.plan))]
    la, sa = fastest(as_records(records))["csd"], fastest(as_records(strict))["csd"]
    ids = sorted(set(la) & set(sa))
    for pair in plan_pairs(loose.plan):
        def counts(best, key):
            return [sum(best[i].stats["acceptance"].get(pair, {}).get(key, [])) for i in ids]
        d = rate_difference(counts(la, "accepted"), counts(la, "reached"), counts(sa, "accepted"), counts(sa, "reached"))
        rows.append(_bench_row(fam, task, spath.name, "lenience-vs-strict-acceptance", d, pair=pair,
                                lenient=pair in lenient_pairs(loose.plan)))
    return rows


def _tree_rows(fam: str, task: str) -> list[dict]:
    """CS Drafting + tree and Medusa against CS Drafting, from the committed Table 3 run of a tree family."""
    from .trees import speedup_difference, trees_path
    path = trees_path(fam, task)
    records = read_records(path)
    if not records:
        return []
    ran = {r.method for r in as_records(records) if r.ok}
    name = Path(path).name
    rows = []
    if {CSD_TREE.name, CSD.name} <= ran:
        rows += [_bench_row(fam, task, name, "csd-tree-vs-csd-target-calls", method_difference(records, CSD_TREE.name, CSD.name)),
                 _bench_row(fam, task, name, "csd-tree-vs-csd-walltime", speedup_difference(records, CSD_TREE.name, CSD.name))]
    if {MEDUSA.name, CSD.name} <= ran:
        rows.append(_bench_row(fam, task, name, "medusa-vs-csd-walltime", speedup_difference(records, MEDUSA.name, CSD.name)))
    return rows


def bench_lesson_rows(results_dir=None) -> list[dict]:
    """The answers of notebooks 05-08 for every embedded family and task whose committed run is in ``results_dir``
    (default ``config.RESULTS_DIR``), in a fixed order."""
    base = Path(config.RESULTS_DIR if results_dir is None else results_dir)
    rows = []
    for fam in FAMILIES:
        for task in TASKS:
            path = base / f"{fam}-{task}.jsonl"
            if stored(path) is None:
                continue
            records = read_records(path)
            rows += _walltime_rows(fam, task, path.name, records) + _vertical_row(fam, task, path.name, records, base)
            rows += _lenience_rows(fam, task, records, base) + _tree_rows(fam, task)
    return rows


UNSETTLED = "unsettled at 50 prompts"   # the one plain word for an answer whose interval holds 0


def answers_of(question: str, path=None) -> list[dict]:
    """Every committed answer to ``question`` (``results/evidence.json``, or ``path``), all families and tasks."""
    if question not in QUESTIONS and question not in BENCH_QUESTIONS:
        raise ValueError(f"unknown question {question!r}; one of {sorted(QUESTIONS) + sorted(BENCH_QUESTIONS)}")
    p = config.RESULTS_DIR / "evidence.json" if path is None else path
    return [r for r in json.loads(p.read_text(encoding="utf-8")) if r["question"] == question] if p.exists() else []


def answer_words(row: dict, more: str = "higher", less: str = "lower", same: str = UNSETTLED, digits: int = 2) -> str:
    """One answer in plain words: the direction (only when its 95% interval excludes 0, else ``same``), the
    difference and its interval, e.g. 'higher by +2.09 (95% interval +1.90 to +2.28, 50 prompts)'."""
    word = {"higher": more, "lower": less}.get(row["verdict"], same)
    f = lambda v: f"{v:+.{digits}f}"  # noqa: E731
    return f"{word}: {f(row['estimate'])} (95% interval {f(row['lo'])} to {f(row['hi'])}, {row['n']} prompts)"


def vertical_records(family: str, task: str, root=None) -> tuple[list[dict], Path | None]:
    """The drafter + MaG run of a family and task: the committed ``-vertical`` run, else the evidence run
    (:func:`vertical_run_path`); ([], None) when neither exists."""
    base = Path(config.RESULTS_DIR if root is None else root)
    for p in (base / f"{family}-{task}-vertical.jsonl", vertical_run_path(family, task, base)):
        recs = read_records(p)
        if recs:
            return recs, stored(p)
    return [], None


# ---- Lessons 01-04: their own runs (results/evidence/<run>-<family>-<task>.jsonl.gz), answered here ----------------
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
    """``results/evidence/<run>-<family>-<task>.jsonl`` (committed packed, as that name plus ``.gz``)."""
    run = LESSON_QUESTIONS[question_or_run][0] if question_or_run in LESSON_QUESTIONS else question_or_run
    root = config.RESULTS_DIR if results_dir is None else results_dir
    return root / "evidence" / f"{run}-{family}-{task}.jsonl"


def lesson_records(path) -> list[dict]:
    """The records of a lesson run file, plain or packed (``path.gz``); [] when neither exists."""
    where = stored(path)
    if where is None:
        return []
    text = read_text(where, "lesson run file", "rewrite it with python scripts/make_evidence.py --run RUN")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_lesson_records(path, records: list[dict]) -> Path:
    """Store a lesson run's records packed (deterministic bytes) as ``path.gz``; a plain ``path`` is removed."""
    path = Path(path)
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
    packed = path.with_name(path.name + PACKED)
    write_atomic(packed, gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0), "evidence run")
    path.unlink(missing_ok=True)
    return packed


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
                path = stored(lesson_run_path(run, fam, task, results_dir))
                if path is not None:
                    recs = lesson_records(path)
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


# ---- Notebook 10: draft-length policies against fixed K (results/evidence/policies-<family>-<task>.jsonl.gz) -------
POLICY_RUN = "policies"
POLICY_METHODS = ("sd", "csd")         # the methods each policy runs with, at the bench's K for the task
POLICIES_FILE = "evidence-policies.json"
# question id -> (what is measured, the question in plain words); each answered per method and adaptive policy
POLICY_QUESTIONS = {
    "policy-vs-fixed-target-calls": ("tokens per target call, the policy minus fixed K",
                                     "Does the policy keep more tokens per target call than fixed K?"),
    "policy-vs-fixed-walltime": ("per prompt, fixed K's CPU time over the policy's, minus 1: the median",
                                 "Is the policy faster than fixed K (CPU time per generation, one thread)?"),
}


def policy_label(method: str, policy: str) -> str:
    """The configuration label of ``method`` under ``policy`` in a policies run, e.g. 'csd, ewif'."""
    return f"{method}, {policy}"


def policy_configs(family, task: str) -> dict[str, dict]:
    """Every draft-length policy with SD and CSD at the bench's K for ``task``, label -> ``generate`` arguments."""
    from ..engine.policy import POLICIES
    ks = {"sd": family.sd_k_for(task), "csd": [list(r) for r in family.k_for(task)]}
    return {policy_label(m, p): dict(method=m, k=ks[m], draft_policy=p) for m in POLICY_METHODS for p in POLICIES}


def policy_record(label: str, example: int, g, seconds: float) -> dict:
    """One generation of a policies run, compact: tokens, target calls, CPU seconds, draft lengths and the ids."""
    return dict(config=label, example=example, tokens=g.stats.n_tokens, calls=dict(g.stats.calls), seconds=seconds,
                draft_lengths=g.draft_lengths(), token_ids=list(g.token_ids))


def make_policy_runs(families=FAMILIES, tasks=TASKS, root=None) -> list[Path]:
    """Run every policy configuration on the first :data:`EVIDENCE_N` prompts of each task (seed 0) at
    :data:`EVIDENCE_NEW_TOKENS` tokens, timed with the CPU clock on one thread, interleaved (each prompt runs every
    configuration back to back, the order rotating with the prompt) after one untimed warm-up of each, and store
    each run packed. Loads each family."""
    import os

    import torch

    from ..engine.cascade import generate
    from ..families.family import load_family
    from ..families.tasks import load_task
    from ..measure.bench import check_clock, use_clock
    torch.set_num_threads(1)   # the bench's cpu clock: CPU time of one thread, what other jobs preempt not counted
    written = []
    for fam_name in families:
        fam = load_family(fam_name)
        check_clock("cpu", fam.target.device)
        for task in tasks:
            configs = list(policy_configs(fam, task).items())
            recs = []
            examples = load_task(task, "test", n=EVIDENCE_N, seed=0)
            with use_clock(fam, "cpu"):
                for _label, cfg in configs:   # warm-up, untimed: first calls allocate what later ones reuse
                    generate(fam, examples[0].prompt, max_new_tokens=4, **cfg)
                for i, e in enumerate(examples):
                    for label, cfg in configs[i % len(configs):] + configs[:i % len(configs)]:
                        g = generate(fam, e.prompt, max_new_tokens=EVIDENCE_NEW_TOKENS, **cfg)
                        recs.append(dict(policy_record(label, i, g, g.stats.wall_time), load1=os.getloadavg()[0]))
            written.append(write_lesson_records(lesson_run_path(POLICY_RUN, fam_name, task, root), recs))
    return written


def policy_answer(records, method: str, policy: str, question: str) -> dict:
    """One policy question for ``method`` under ``policy`` against ``method`` at fixed K, from one policies run."""
    from ..engine.policy import FIXED
    if question not in POLICY_QUESTIONS:
        raise ValueError(f"unknown policy question {question!r}; one of {sorted(POLICY_QUESTIONS)}")
    runs = _by_config(records)
    a, b = runs[policy_label(method, policy)], runs[policy_label(method, FIXED)]
    ex = sorted(set(a) & set(b))
    if question == "policy-vs-fixed-target-calls":
        d = rate_difference([a[i]["tokens"] for i in ex], [a[i]["calls"]["target"] for i in ex],
                            [b[i]["tokens"] for i in ex], [b[i]["calls"]["target"] for i in ex])
    else:   # the median of fixed K's time over the policy's, per prompt, minus 1 (> 0: the policy is faster)
        d = paired_difference([b[i]["seconds"] / a[i]["seconds"] for i in ex], [1.0] * len(ex), stat="median")
    measure, words = POLICY_QUESTIONS[question]
    loads = sorted(r["load1"] for r in records if r.get("load1") is not None)
    return dict(question=question, method=method, policy=policy, measure=measure, words=words,
                estimate=_round(d.estimate), lo=_round(d.lo), hi=_round(d.hi), n=d.n, level=d.level, verdict=d.verdict,
                interval=d.interval(), load1_median=_round(loads[len(loads) // 2]) if loads else None)


def policy_rows(results_dir=None) -> list[dict]:
    """Every policy question, per method and adaptive policy, for every embedded family and task whose policies run
    is committed, in a fixed order."""
    from ..engine.policy import FIXED, POLICIES
    rows = []
    for fam in FAMILIES:
        for task in TASKS:
            path = stored(lesson_run_path(POLICY_RUN, fam, task, results_dir))
            if path is None:
                continue
            recs = lesson_records(path)
            rows += [dict(family=fam, task=task, source=f"evidence/{path.name}", **policy_answer(recs, m, p, q))
                     for q in POLICY_QUESTIONS for m in POLICY_METHODS for p in POLICIES if p != FIXED]
    return rows


def policy_evidence(family: str, question: str, path=None) -> list[dict]:
    """The committed answers to a policy question for ``family`` (every task, method and adaptive policy;
    ``results/evidence-policies.json``, or ``path``); [] for a family without committed runs."""
    if question not in POLICY_QUESTIONS:
        raise ValueError(f"unknown policy question {question!r}; one of {sorted(POLICY_QUESTIONS)}")
    p = config.RESULTS_DIR / POLICIES_FILE if path is None else path
    if not p.exists():
        return []
    return [r for r in json.loads(p.read_text(encoding="utf-8")) if r["family"] == family and r["question"] == question]
