#!/usr/bin/env bash
# The stack matrix (bash scripts/test.sh --full runs it): lossless on other transformers releases than
# the pin. For each release, the greedy-identity and exact-sampling fast tests and notebooks 00 and 07
# (nbval) run with that transformers, and the huggingface_hub / tokenizers it needs, first on
# PYTHONPATH over the pinned torch and the rest of .venv:
#   bash scripts/stack_matrix.sh               the oldest release pyproject.toml admits
#                                              (csd_lib.engine.models.TRANSFORMERS_TESTED) and 5.17.0,
#                                              the lent GPU machine's
#   bash scripts/stack_matrix.sh 5.17.0        one release (it must be in RELEASES below)
#   bash scripts/stack_matrix.sh --site 5.17.0 install if needed, print the folder to put on PYTHONPATH
# Each release is installed once with pip (--no-deps --target) into .cache/stack/transformers-V
# (git-ignored); the first run needs a package index. One summary line per release says PASS or FAIL
# with its seconds; the exit status is 1 when any failed, 2 for bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
die() { echo "error: $*" >&2; exit 2; }
# What each release needs beside itself where the pins (requirements.txt) do not fit its metadata:
# both want huggingface_hub < 2; 5.0.0 wants tokenizers <= 0.23.0.
declare -A RELEASES=(
  [5.0.0]="huggingface_hub==1.33.0 tokenizers==0.22.2"
  [5.17.0]="huggingface_hub==1.33.0"
)
SITE_ONLY=0
[ "${1:-}" = --site ] && { SITE_ONLY=1; shift; [ $# -eq 1 ] || die "--site needs one release, e.g. --site 5.17.0"; }
for v in "$@"; do  # checked before anything is set up
  [ -n "${RELEASES[$v]+x}" ] || die "transformers '$v' is not in scripts/stack_matrix.sh's RELEASES (${!RELEASES[*]})"
done
source scripts/env.sh
set +e  # a failing release is reported, and the matrix goes on
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-1}"
if [ $# -eq 0 ]; then
  oldest=$(python -c "from csd_lib.engine.models import TRANSFORMERS_TESTED; print(TRANSFORMERS_TESTED[0])") \
    || die "cannot read csd_lib.engine.models.TRANSFORMERS_TESTED"
  [ -n "${RELEASES[$oldest]+x}" ] || die "the oldest tested release $oldest is not in RELEASES: add what it needs"
  set -- "$oldest" 5.17.0
fi

site() {  # install release $1 once; print its folder
  local dir="$ROOT/.cache/stack/transformers-$1"
  if [ ! -f "$dir/.complete" ]; then
    rm -rf "$dir" && mkdir -p "$(dirname "$dir")"
    python -m pip install -q --disable-pip-version-check --no-deps --no-compile --target "$dir.tmp" \
      "transformers==$1" ${RELEASES[$1]} >&2 || { rm -rf "$dir.tmp"; return 1; }
    mv "$dir.tmp" "$dir" && touch "$dir/.complete"
  fi
  echo "$dir"
}

if [ "$SITE_ONLY" = 1 ]; then
  site "$1" || { echo "error: pip could not install transformers $1 (is a package index reachable?)" >&2; exit 1; }
  exit 0
fi
TESTS=(tests/engine/test_greedy_identity.py tests/engine/test_sampling_exact.py)
NOTEBOOKS=(notebooks/00_start_here.ipynb notebooks/07_lossless.ipynb)
W=(-n "${CSD_TEST_WORKERS:-2}" -p no:cacheprovider)
SUMMARY=() FAILED=0
for v in "$@"; do
  start=$SECONDS verdict=PASS
  if ! dir=$(site "$v"); then
    verdict="FAIL (pip could not install it)"
  else
    # the release first, then this checkout's csd_lib (the notebooks' kernels run in notebooks/)
    export PYTHONPATH="$dir:$ROOT"
    python -c "import sys, transformers; sys.exit(transformers.__version__ != '$v')" \
      || verdict="FAIL (another transformers is imported)"
    [ "$verdict" = PASS ] && echo "stack matrix transformers $v: $(python -c \
      'import huggingface_hub as h, tokenizers as t, torch; print(f"huggingface_hub {h.__version__}, tokenizers {t.__version__}, torch {torch.__version__}")')"
    [ "$verdict" = PASS ] && { python -m pytest "${W[@]}" -m "not slow" "${TESTS[@]}" || verdict="FAIL (tests)"; }
    [ "$verdict" = PASS ] && { python -m pytest "${W[@]}" --dist loadfile --nbval-lax --nbval-cell-timeout=240 \
      "${NOTEBOOKS[@]}" || verdict="FAIL (notebooks)"; }
    unset PYTHONPATH
  fi
  [ "$verdict" = PASS ] || FAILED=1
  SUMMARY+=("stack matrix transformers $v: $verdict in $((SECONDS - start)) s")
  echo "${SUMMARY[-1]}"
done
printf '%s\n' "${SUMMARY[@]}"
exit "$FAILED"
