#!/usr/bin/env bash
# Reproduce BENCHMARKS.md: the per-call cost model of each tiny family, then both families on both
# synthetic tasks (N examples, every method interleaved per example, each round REPEATS times, the
# fastest kept), plain SD at the draft length that won the tuner's validation sweep (results/tune.json)
# when that is not the preset's, the vertical-only cascade (base + MaG, at SD's draft length), and the report.
# Resumable: rerunning skips lines already in results/*.jsonl (delete them to start over).
# N=50 REPEATS=3 takes about 2 hours on 2 idle CPU cores; N=20 REPEATS=3 about 50 minutes.
# A run of another machine class goes beside the committed one: scripts/class_benchmarks.sh.
source "$(dirname "$0")/env.sh"
set -x
N="${N:-50}"
REPEATS="${REPEATS:-3}"
THREADS="${THREADS:-1}"
FAMS="${FAMS:-tiny-t5 tiny-llama}"
TASKS="${TASKS:-synth-gsm8k synth-mmlu}"
for fam in $FAMS; do
  if [ -z "${KEEP_COSTS:-}" ] || [ ! -f "results/costs-$fam-cpu.json" ]; then
    python -m csd_lib costs --family "$fam" --threads "$THREADS"
  fi
done
# SD's draft length that measured fastest in the tuner's sweep on the validation split, if not the preset's
sd_alt() {
  python -c 'import json, sys; from csd_lib.families.presets import TINY_PRESETS as P
s = json.load(open("results/tune.json")).get(sys.argv[1], {}).get("sd_sweep", {})
k = max(s, key=s.get) if s else None
print(k if k and int(k) != P[sys.argv[1]]["sd_k"] else "")' "$1"
}
for task in $TASKS; do
  for fam in $FAMS; do
    k="$(sd_alt "$fam")"
    if [ -n "$k" ]; then
      python -m csd_lib bench --family "$fam" --task "$task" --n "$N" --repeats "$REPEATS" --threads "$THREADS" \
        --methods ar,sd --sd-k "$k" --out "results/$fam-$task-sd.jsonl"
    fi
  done
  case " $FAMS " in *" tiny-llama "*)
  python -m csd_lib bench --family tiny-llama --task "$task" --n "$N" --repeats "$REPEATS" --threads "$THREADS" \
    --methods ar,sd,mag,csd,hf-assisted,hf-pld \
    --out "results/tiny-llama-$task.jsonl" --summary-json "results/tiny-llama-$task.summary.json" ;;
  esac
  case " $FAMS " in *" tiny-t5 "*) ;; *) continue ;; esac
  python -m csd_lib bench --family tiny-t5 --task "$task" --n "$N" --repeats "$REPEATS" --threads "$THREADS" \
    --methods ar,sd,mag,staged,csd,hf-assisted,hf-pld \
    --out "results/tiny-t5-$task.jsonl" --summary-json "results/tiny-t5-$task.summary.json"
  # vertical cascade only (paper Table 2 "base + MaG"): SD's drafter at SD's draft length, drafted by MaG
  # (small gets no budget anywhere)
  python -m csd_lib bench --family tiny-t5 --task "$task" --n "$N" --repeats "$REPEATS" --threads "$THREADS" \
    --methods ar,csd \
    --k "$(python -c 'from csd_lib.engine.plan import vertical_k; from csd_lib.families.presets import TINY_PRESETS as P; k = P["tiny-t5"]["k"]; print(vertical_k(P["tiny-t5"]["sd_k"], len(k), k[-1][-1]))')" \
    --lenience "$(python -c 'from csd_lib.families.presets import TINY_PRESETS as P; print(P["tiny-t5"]["lenience"])')" \
    --out "results/tiny-t5-$task-vertical.jsonl"
done
# SD's second draft length in Table 3: the tuner's sweep's fastest other than the preset's, else half the preset's
sd_second() {
  python -c 'import json, sys; from pathlib import Path; from csd_lib.families.presets import TINY_PRESETS as P
k0, p = P[sys.argv[1]]["sd_k"], Path("results/tune.json")
s = json.loads(p.read_text()).get(sys.argv[1], {}).get("sd_sweep", {}) if p.exists() else {}
s = {int(k): v for k, v in s.items() if int(k) != k0}
print(max(s, key=s.get) if s else max(1, k0 // 2))' "$1"
}
# The paper's Table 3 on the decoder-only family: linear drafts beside token trees, on the process CPU clock;
# SD at the family's k and at a second k (sd@K) in the same interleaved run, so that Table 3 compares the best SD
for task in $TASKS; do
  case " $FAMS " in *" tiny-llama "*) ;; *) continue ;; esac
  python -m csd_lib bench --family tiny-llama --task "$task" --n "$N" --repeats "$REPEATS" --threads "$THREADS" \
    --clock cpu --methods "ar,sd,sd@${SD_K2:-$(sd_second tiny-llama)},csd,medusa,csd-tree,tree-sd" \
    --out "results/tiny-llama-$task-trees.jsonl"
done
python scripts/make_benchmarks_md.py || true
python scripts/pack_results.py  # the Table 3 runs are committed packed (.jsonl.gz)
