#!/usr/bin/env bash
# The prepared GPU check (about 6 minutes on one H200; budgeted to stay under 8):
#   1. the CUDA-only tests (pytest -k cuda);
#   2. every real preset on full-depth shadow checkpoints (csd_lib.shadow) in its policy dtype:
#      seconds per forward call of each model against tokens scored (1..32) at cache
#      lengths 64, 256 and 1024, then ar/sd/csd end to end with the share of walltime
#      spent outside forward calls (scripts/gpu_check.py).
# Output: $OUT (the device runner's folder) or results/gpu_check: gpu_check.json, logs.
# Shadows need about 25 GB of disk at a time (FLAN-T5-XXL in fp16), in a temp folder.
#
#   bash scripts/gpu_check.sh             # on a GPU machine
#   bash scripts/gpu_check.sh --dry-run   # anywhere: CPU, one layer, a tiny grid (exercises the code path)
#
# Random weights accept almost nothing: these numbers are costs per call, never speedups.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && ! $PY -c 'import torch' 2>/dev/null && PY=.venv/bin/python
OUT_DIR=${OUT:-results/gpu_check}
HUB=$(mktemp -d "${TMPDIR:-/tmp}/shadow-hub.XXXXXX")
trap 'rm -rf "$HUB"' EXIT
mkdir -p "$OUT_DIR"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
start=$(date +%s)

if [ "${1:-}" = "--dry-run" ]; then
  $PY scripts/gpu_check.py --hub "$HUB" --out "$OUT_DIR" --device cpu --dtype fp32 --max-layers 1 \
    --presets flan-t5-colab,vicuna --tokens 1,2 --cache-lens 8 --warmup 0 --reps 1 --n-prompts 1 \
    --max-new-tokens 4 --cost-seconds 0 --free-disk
  exit $?
fi

$PY - <<'EOF' | tee "$OUT_DIR/device.txt"
import torch
print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
EOF
if $PY -c 'import pytest' 2>/dev/null; then
  timeout 120 $PY -m pytest tests -k cuda -q -p no:cacheprovider 2>&1 | tail -20 | tee "$OUT_DIR/cuda_tests.txt"
else
  echo "pytest is not installed: CUDA-only tests skipped" | tee "$OUT_DIR/cuda_tests.txt"
fi
left=$(( 450 - ($(date +%s) - start) ))
timeout $(( left + 30 )) $PY scripts/gpu_check.py --hub "$HUB" --out "$OUT_DIR" --free-disk --budget-s $(( left - 120 )) \
  2>&1 | tee "$OUT_DIR/gpu_check.log"
echo "gpu_check: $(( $(date +%s) - start )) s in all; results in $OUT_DIR"
