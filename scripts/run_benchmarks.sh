#!/usr/bin/env bash
# Reproduce BENCHMARKS.md: the per-call cost model of each tiny family, then both families on both
# synthetic tasks (N examples, every method interleaved per example, each round REPEATS times, the
# fastest kept), the vertical-only cascade (base + MaG), and the report.
# Resumable: rerunning skips lines already in results/*.jsonl (delete them to start over).
# N=50 REPEATS=3 takes about 2 hours on 2 idle CPU cores; N=20 REPEATS=3 about 50 minutes.
source "$(dirname "$0")/env.sh"
set -x
N="${N:-50}"
REPEATS="${REPEATS:-3}"
THREADS="${THREADS:-1}"
FAMS="${FAMS:-tiny-t5 tiny-llama}"
TASKS="${TASKS:-synth-gsm8k synth-mmlu}"
for fam in $FAMS; do
  if [ -z "${KEEP_COSTS:-}" ] || [ ! -f "results/costs-$fam-cpu.json" ]; then
    python -m csd_lib.costs --family "$fam" --threads "$THREADS"
  fi
done
for task in $TASKS; do
  case " $FAMS " in *" tiny-llama "*)
  python -m csd_lib bench --family tiny-llama --task "$task" --n "$N" --repeats "$REPEATS" --threads "$THREADS" \
    --methods ar,sd,mag,csd,hf-assisted,hf-pld \
    --out "results/tiny-llama-$task.jsonl" --summary-json "results/tiny-llama-$task.summary.json" ;;
  esac
  case " $FAMS " in *" tiny-t5 "*) ;; *) continue ;; esac
  python -m csd_lib bench --family tiny-t5 --task "$task" --n "$N" --repeats "$REPEATS" --threads "$THREADS" \
    --methods ar,sd,mag,staged,csd,hf-assisted,hf-pld \
    --out "results/tiny-t5-$task.jsonl" --summary-json "results/tiny-t5-$task.summary.json"
  # vertical cascade only (paper Table 2 "base + MaG"): small gets no budget anywhere
  python -m csd_lib bench --family tiny-t5 --task "$task" --n "$N" --repeats "$REPEATS" --threads "$THREADS" \
    --methods ar,csd \
    --k "$(python -c 'from csd_lib.families import TINY_PRESETS as P; k=P["tiny-t5"]["k"]; print([[k[0][0],0,k[0][2]],[0,0,k[1][2]],[0,0,k[2][2]]])')" \
    --lenience "$(python -c 'from csd_lib.families import TINY_PRESETS as P; print(P["tiny-t5"]["lenience"])')" \
    --out "results/tiny-t5-$task-vertical.jsonl"
done
python scripts/make_benchmarks_md.py || true
