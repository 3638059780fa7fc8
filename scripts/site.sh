#!/usr/bin/env bash
# Build the classroom site: bash scripts/site.sh OUT [--notebooks 00,05] [--reuse DIR] [--grid small]
# Executes every notebook on the default family, records the explorer's engine runs and writes a static
# site to OUT (open OUT/index.html; no request leaves it). See scripts/site.py and the README.
if [ $# -lt 1 ]; then
  echo "usage: bash scripts/site.sh OUT [--notebooks 00,05] [--reuse DIR] [--jobs N] [--grid small]" >&2
  exit 2
fi
source "$(dirname "$0")/env.sh"
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-1}"
exec python scripts/site.py "$@"
