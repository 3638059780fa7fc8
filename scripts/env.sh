# Source me: creates .venv/ in the repo root if missing and installs the pinned packages once.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
STAMP=.venv/.csd-installed
WANT="$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "[setup] installing packages into .venv (a few minutes the first time)"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
  echo "$WANT" > "$STAMP"
fi
export PATH="$ROOT/.venv/bin:$PATH"
# Use ../shared/data for real GSM8K/MMLU when it is there (never copied into the repo).
if [ -z "${CSD_DATA_DIR:-}" ] && [ -d "$ROOT/../shared/data" ]; then
  export CSD_DATA_DIR="$ROOT/../shared/data"
fi
# The hub is not switched off here: the embedded families (the README commands' default) load
# from data/models and never contact it, so those commands work offline as they are, and a real
# family (`bash scripts/demo.sh --family flan-t5`) can download on an online machine. Set
# HF_HUB_OFFLINE=1 yourself to forbid downloads; scripts/test.sh does, so tests never need the hub.
export HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
