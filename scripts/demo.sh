#!/usr/bin/env bash
# Set up .venv if needed, then run the main job on the embedded default family.
source "$(dirname "$0")/env.sh"
exec python -m csd_lib demo "$@"
