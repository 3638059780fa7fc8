"""Answer each lesson's question from committed runs: results/evidence.json, evidence-lessons.json, evidence-policies.json.

Usage: python scripts/make_evidence.py [--out PATH] [--lessons-out PATH] [--runs]
       python scripts/make_evidence.py --run QUESTION [--family F] [--task T]   (engine runs: minutes, run with nice)

Without --run: every answer is recomputed from committed runs (no model loaded). results/evidence.json answers
the benchmark questions from results/<family>-<task>.jsonl (notebooks 05-08's also from the run files
under results/evidence/ that --runs writes when missing: CSD at lenience 1, drafter + MaG;
report.evidence.make_bench_runs); results/evidence-lessons.json answers notebooks
01-04's questions from results/evidence/<run>-<family>-<task>.jsonl.gz (packed). With --run: the runs of one lesson
question (csd_lib.report.evidence.LESSON_QUESTIONS) on the first 50 prompts of each task (seed 0) are written
to those files, compact (tokens, calls, parameter counts, per-pair acceptance), then the answers are rewritten.
--run policies (notebook 10) runs SD and CSD under every draft-length policy on the same prompts, interleaved and
timed by the CPU clock on one thread (report.evidence.make_policy_runs); results/evidence-policies.json answers it.
tests/report/test_evidence.py and test_evidence_policies.py recompute the files from the runs and compare.
"""
import argparse
import sys
from pathlib import Path

from csd_lib import config
from csd_lib.fileio import write_atomic
from csd_lib.report.evidence import (EVIDENCE_N, EVIDENCE_NEW_TOKENS, FAMILIES, LESSON_QUESTIONS, POLICIES_FILE,
                                     POLICY_RUN, TASKS, evidence_json, evidence_rows, lesson_configs, lesson_rows,
                                     lesson_run_path, make_bench_runs, make_policy_runs, policy_rows,
                                     write_lesson_records)


def _record(label: str, example: int, g) -> dict:
    """One generation, compact: what the answers read."""
    st = g.stats
    return dict(config=label, example=example, tokens=st.n_tokens, calls=dict(st.calls), params=dict(st.params),
                pairs={p: dict(reached=list(s.reached), accepted=list(s.accepted)) for p, s in st.acceptance.items()})


def _replay_records(fam, task: str) -> list[dict]:
    """MaG and the bigram table alone replayed on the task's reference solutions: per example, accepted tokens and calls."""
    from csd_lib import load_task
    from csd_lib.teach.replay import mag_proposer, replay
    out = []
    for i, e in enumerate(load_task(task, "test", n=EVIDENCE_N, seed=0)):
        p = fam.tokenizer(e.prompt)["input_ids"]
        y = fam.tokenizer(e.reference, add_special_tokens=False)["input_ids"]
        for label, prop in (("mag", mag_proposer(fam.mag, fam.mag.n)), ("bigram", mag_proposer(fam.mag, fam.mag.n, match=False))):
            rows = replay(prop, p, y, fam.mag.n)
            out.append(dict(config=label, example=i, accepted=sum(r["accepted"] for r in rows), calls=len(rows)))
    return out


def _engine_records(fam, task: str, name: str) -> list[dict]:
    """The engine runs of lesson run ``name``'s configurations on the task's first prompts."""
    from csd_lib import generate, load_task
    examples = load_task(task, "test", n=EVIDENCE_N, seed=0)
    return [_record(label, i, generate(fam, e.prompt, max_new_tokens=EVIDENCE_NEW_TOKENS, **cfg))
            for label, cfg in lesson_configs(fam, name).items() for i, e in enumerate(examples)]


def run(name: str, families, tasks) -> None:
    """Write the run files of lesson run ``name`` (decay, mag-vs-bigram, vertical, tail, policies) for ``families`` x ``tasks``."""
    import torch

    if name == POLICY_RUN:   # notebook 10: timed on the CPU clock, interleaved (report.evidence.make_policy_runs)
        for path in make_policy_runs(families, tasks):
            print(f"wrote {path}")
        return

    from csd_lib import load_family
    torch.set_num_threads(1)  # tiny models: per-call overhead dominates, more threads only contend on a shared CPU
    for f in families:
        fam = load_family(f)
        for task in tasks:
            recs = _replay_records(fam, task) if name == "mag-vs-bigram" else _engine_records(fam, task, name)
            path = write_lesson_records(lesson_run_path(name, f, task), recs)
            print(f"wrote {len(recs)} records to {path}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=config.RESULTS_DIR / "evidence.json")
    ap.add_argument("--lessons-out", type=Path, default=config.RESULTS_DIR / "evidence-lessons.json")
    ap.add_argument("--run", choices=sorted({v[0] for v in LESSON_QUESTIONS.values()} | {POLICY_RUN}), help="make one lesson run first")
    ap.add_argument("--family", choices=FAMILIES, action="append", help="with --run: only this family (repeatable)")
    ap.add_argument("--task", choices=TASKS, action="append", help="with --run: only this task (repeatable)")
    ap.add_argument("--runs", action="store_true", help="first write notebooks 05-08's missing run files under results/evidence/")
    args = ap.parse_args()
    if args.runs:
        for path in make_bench_runs():
            print(f"run file {path}")
    if args.run:
        run(args.run, args.family or FAMILIES, args.task or TASKS)
    rows = evidence_rows()
    if not rows:
        print(f"no committed benchmark run under {config.RESULTS_DIR}; run python -m csd_lib bench first", file=sys.stderr)
        return 1
    write_atomic(args.out, evidence_json(rows), "evidence file")
    print(f"wrote {len(rows)} answers to {args.out}")
    lessons = lesson_rows()
    write_atomic(args.lessons_out, evidence_json(lessons), "evidence file")
    print(f"wrote {len(lessons)} lesson answers to {args.lessons_out}")
    policies = policy_rows()
    write_atomic(args.lessons_out.with_name(POLICIES_FILE), evidence_json(policies), "evidence file")
    print(f"wrote {len(policies)} draft-length policy answers to {args.lessons_out.with_name(POLICIES_FILE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
