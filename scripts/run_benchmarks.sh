#!/usr/bin/env bash
# Reproduce BENCHMARKS.md: both tiny families on both synthetic tasks, n=50 each, all methods
# interleaved per example, then the vertical-only cascade (base + MaG) and the report.
# Resumable: rerunning skips lines already in results/*.jsonl. About 30-40 minutes on 2 CPU cores.
source "$(dirname "$0")/env.sh"
set -x
N="${N:-50}"
THREADS="${THREADS:-1}"
FAMS="${FAMS:-tiny-t5 tiny-llama}"
for task in synth-gsm8k synth-mmlu; do
  case " $FAMS " in *" tiny-llama "*)
  python -m csd_lib bench --family tiny-llama --task "$task" --n "$N" --threads "$THREADS" \
    --methods ar,sd,mag,csd,hf-assisted,hf-pld \
    --out "results/tiny-llama-$task.jsonl" --summary-json "results/tiny-llama-$task.summary.json" ;;
  esac
  case " $FAMS " in *" tiny-t5 "*) ;; *) continue ;; esac
  python -m csd_lib bench --family tiny-t5 --task "$task" --n "$N" --threads "$THREADS" \
    --methods ar,sd,mag,staged,csd,hf-assisted,hf-pld \
    --out "results/tiny-t5-$task.jsonl" --summary-json "results/tiny-t5-$task.summary.json"
  # vertical cascade only (paper Table 2 "base + MaG"): small gets no budget anywhere
  python -m csd_lib bench --family tiny-t5 --task "$task" --n "$N" --threads "$THREADS" --methods ar,csd \
    --k "$(python -c 'from csd_lib.families import TINY_PRESETS as P; k=P["tiny-t5"]["k"]; print([[k[0][0],0,k[0][2]],[0,0,k[1][2]],[0,0,k[2][2]]])')" \
    --lenience "$(python -c 'from csd_lib.families import TINY_PRESETS as P; print(P["tiny-t5"]["lenience"])')" \
    --out "results/tiny-t5-$task-vertical.jsonl"
done
python scripts/make_benchmarks_md.py || true
