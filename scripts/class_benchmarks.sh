#!/usr/bin/env bash
# Benchmarks of this machine's class beside the committed ones, without touching them:
#   bash scripts/class_benchmarks.sh                      tiny-t5 and tiny-llama, both tasks, ar,sd,csd
#   FAMS=tiny-t5 TASKS=synth-gsm8k N=50 REPEATS=2 bash scripts/class_benchmarks.sh
# For each family it measures this machine's cost model into results/costs-<family>-cpu-<machine key>.json
# (the class file that costs_for finds before the default one), then runs bench into
# results/<family>-<task>.<machine key>.jsonl, which scripts/make_benchmarks_md.py renders as a run of that
# class, and packs it (results/<family>-<task>.<machine key>.jsonl.gz, what is committed). Resumable like
# bench (a packed run is written out again first). Run it on an idle machine, one run at a time.
source "$(dirname "$0")/env.sh"
set -eux
N="${N:-50}"
REPEATS="${REPEATS:-2}"
THREADS="${THREADS:-1}"
FAMS="${FAMS:-tiny-t5 tiny-llama}"
TASKS="${TASKS:-synth-gsm8k synth-mmlu}"
METHODS="${METHODS:-ar,sd,csd}"
KEY="$(python -c 'import torch; torch.set_num_threads(int(__import__("sys").argv[1]))
from csd_lib.measure.machine import environment, fingerprint, machine_key; print(machine_key(fingerprint(environment("cpu"))))' "$THREADS")"
for fam in $FAMS; do
  [ -f "results/costs-$fam-cpu-$KEY.json" ] || \
    python -m csd_lib costs --family "$fam" --threads "$THREADS" --out "results/costs-$fam-cpu-$KEY.json"
  for task in $TASKS; do
    python -m csd_lib bench --family "$fam" --task "$task" --n "$N" --repeats "$REPEATS" --threads "$THREADS" \
      --clock cpu --methods "$METHODS" --out "results/$fam-$task.$KEY.jsonl"
  done
done
python scripts/make_benchmarks_md.py
python scripts/pack_results.py  # commit the packed runs (.jsonl.gz)
