#!/usr/bin/env bash
# The GPU check: vicuna, flan-t5 (FLAN-T5-XXL), flan-t5-colab in bf16, fp16 (the T4 policy) and fp32
# (identity), then notebooks 00 and 07 on flan-t5-colab, each preset at full depth on shadow
# checkpoints (random weights: the lent machine has no network and no hub cache). Per item: costs on a
# few points with each model's call wall time beside its GPU-busy time, bench --n 2 (mismatches against
# AR); per preset once, predict from the costs (beside predict --max-layers 2 for vicuna and flan-t5).
# scripts/gpu_check.py says what each step does and what each is expected to take. Budgeted to finish
# within 8 minutes: a step that would overrun is skipped and the JSON says so.
#
# On a lent machine, through the device tool, from the root of the checkout the session runs in:
#   1. here, once:   bash scripts/gpu_wheels.sh      # writes .gpu-wheels/site.tar.xz (about 4.5 MiB)
#   2. the call:     run(command="bash scripts/gpu_check.sh", timeout_s=560,
#                        carry=[".gpu-wheels/site.tar.xz"])
#   It refuses in seconds, in one line, when the machine's transformers is outside the tested range
#   (pyproject.toml) and the archive holds no tested one (gpu_wheels.sh packs one when the machine's,
#   as KINDS.md gives it, is outside the range).
#   What comes back: $OUT/gpu_check.json (every step: status, seconds, output tail, what it
#   measured) and $OUT/gpu_check.log (what it printed). The machine's python3 (3.12, torch,
#   transformers) runs it; the carried packages are unpacked into a temporary folder on PYTHONPATH,
#   after the repo root (csd_lib runs from the tree, not installed).
#
#   bash scripts/gpu_check.sh              # on a GPU machine; results in $OUT or results/gpu_check
#   bash scripts/gpu_check.sh --dry-run    # on any CPU: the same plan, 1 layer, tiny lengths (minutes)
# Further arguments go to scripts/gpu_check.py (e.g. --plan vicuna,nb:00 --budget-s 300).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ -z "${PYTHON:-}" ] && ! $PY -c 'import torch' 2>/dev/null && [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi
OUT_DIR=${OUT:-results/gpu_check}
mkdir -p "$OUT_DIR"
# What gpu_wheels.sh packed: the notebook packages, and a tested transformers when the machine's is not one.
ARCHIVE=${GPU_CHECK_SITE:-.gpu-wheels/site.tar.xz}
SITE=""
trap '[ -n "$SITE" ] && rm -rf "$SITE"' EXIT
gate() { $PY scripts/gpu_check.py gate 2>/dev/null; }
if ! $PY -c 'import plotly, ipywidgets, nbclient, ipykernel' 2>/dev/null || ! gate; then
  if [ -f "$ARCHIVE" ]; then
    SITE=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-site.XXXXXX")
    $PY -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' \
      "$ARCHIVE" "$SITE" || { echo "gpu_check: could not unpack $ARCHIVE" >&2; exit 1; }
    export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} GPU_CHECK_UNPACKED=$ARCHIVE
  elif gate; then  # else gpu_check.py refuses in one line, in seconds: the transformers here is not tested
    echo "gpu_check: plotly, ipywidgets, nbclient or ipykernel is missing and $ARCHIVE is not" \
         "here (bash scripts/gpu_wheels.sh builds it): the notebook steps will fail" >&2
  fi
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# On a GPU, 480 s at most: the plan's own budget (460 s) plus the step in flight (the JSON is rewritten
# after every step). A dry run is held by its plan's budget alone.
# On a GPU each preset's shadows (up to 23 GB) are deleted after its last step.
LIMIT=(timeout "${GPU_CHECK_TIMEOUT:-480}") FREE=(--free-disk)
[[ " $* " == *" --dry-run "* ]] && LIMIT=() FREE=()
"${LIMIT[@]}" $PY scripts/gpu_check.py --out "$OUT_DIR" "${FREE[@]}" "$@" 2>&1 | tee "$OUT_DIR/gpu_check.log"
