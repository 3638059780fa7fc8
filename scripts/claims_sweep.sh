#!/usr/bin/env bash
# The slow claims sweep: every notebook under nbval (its asserted and computed claims) once per
# (family, prompt set), so that a sentence holding by accident on one prompt set fails somewhere.
#   bash scripts/claims_sweep.sh                 tiny-t5, tiny-llama, tiny-t5-paper x CSD_SEED 1..5 (15 nbval passes)
#   bash scripts/claims_sweep.sh --families tiny-t5 --seeds 2 --notebooks 00,02
#   bash scripts/claims_sweep.sh --skip tiny-t5:2,tiny-llama:1,tiny-llama:3   (sets the full tier ran)
#   --ledger PATH keeps the claims ledger there (emptied first; default: a fresh temporary file).
#   --dry-run prints the plan and runs nothing.
#   --verdicts executes each set with jupyter nbconvert instead of nbval (the same cells, failing on the same
#   errors) and prints, per set, how many "no different beyond the noise" / "not settled" phrases its outputs
#   hold outside the appendix (scripts/count_verdicts.py); --max-verdicts N (implies --verdicts) also fails a
#   set whose count is above N.
# A failing set does not stop the sweep: one summary line per (family, seed) says PASS, FAIL or
# SKIP with its seconds. The notebooks record their computed claims in the ledger (CSD_CLAIMS_LEDGER);
# after the sets, scripts/claims_table.py prints them as claims x settings and fails on a claim
# broken anywhere or turned between two prompt sets of one family. The exit status is 1 when any set
# or that table failed. Bad arguments: one line `error: ...` on stderr, exit 2, before anything is
# set up. Every cell has a 240 s limit, as in scripts/test.sh; CSD_TEST_WORKERS processes
# (default 2) share the notebooks, one notebook per worker.
set -uo pipefail
cd "$(dirname "$0")/.."
die() { echo "error: $*" >&2; exit 2; }
SEEDS=1,2,3,4,5 FAMILIES=tiny-t5,tiny-llama,tiny-t5-paper SKIP="" ONLY="" DRY=0 LEDGER="" VERDICTS=0 MAX_VERDICTS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds|--families|--skip|--notebooks)
      [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a comma-separated value"
      case "$1" in --seeds) SEEDS=$2 ;; --families) FAMILIES=$2 ;; --skip) SKIP=$2 ;; --notebooks) ONLY=$2 ;; esac
      shift 2 ;;
    --ledger)
      [ $# -ge 2 ] && [ -n "$2" ] || die "--ledger needs a file path"
      [ -d "$(dirname "$2")" ] && [ ! -d "$2" ] || die "--ledger: '$2' is not a file path in an existing directory"
      LEDGER=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;  # absolute: the notebooks run in notebooks/
    --dry-run) DRY=1; shift ;;
    --verdicts) VERDICTS=1; shift ;;
    --max-verdicts)
      [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || die "--max-verdicts needs a non-negative integer"
      VERDICTS=1 MAX_VERDICTS=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (use --seeds, --families, --skip, --notebooks, --ledger, --verdicts, --max-verdicts, --dry-run)" ;;
  esac
done
IFS=, read -ra SEED_LIST <<< "$SEEDS"
IFS=, read -ra FAMILY_LIST <<< "$FAMILIES"
IFS=, read -ra SKIP_LIST <<< "$SKIP"
IFS=, read -ra ONLY_LIST <<< "$ONLY"
is_seed() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_family() { [[ "$1" =~ ^[a-z0-9.-]+$ ]] && [ -f "data/models/$1.json" ]; }  # the embedded families
for s in "${SEED_LIST[@]}"; do is_seed "$s" || die "--seeds: '$s' is not a non-negative integer"; done
for f in "${FAMILY_LIST[@]}"; do
  is_family "$f" || die "--families: '$f' is not an embedded family (one with data/models/<name>.json)"
done
for s in "${SKIP_LIST[@]}"; do
  [[ "$s" == *:* ]] && is_family "${s%%:*}" && is_seed "${s#*:}" || die "--skip: '$s' is not FAMILY:SEED"
done
NOTEBOOKS=()
if [ ${#ONLY_LIST[@]} -eq 0 ]; then
  NOTEBOOKS=(notebooks/*.ipynb)
else
  for n in "${ONLY_LIST[@]}"; do
    match=(notebooks/"$n"*.ipynb)
    [ ${#match[@]} -eq 1 ] && [ -f "${match[0]}" ] || die "--notebooks: '$n' names no single notebook in notebooks/"
    NOTEBOOKS+=("${match[0]}")
  done
fi
skipped() { local s; for s in "${SKIP_LIST[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

if [ "$DRY" = 1 ]; then
  for f in "${FAMILY_LIST[@]}"; do for s in "${SEED_LIST[@]}"; do
    if skipped "$f:$s"; then echo "skip $f seed=$s"; else echo "run  $f seed=$s: ${NOTEBOOKS[*]}"; fi
  done; done
  [ "$VERDICTS" = 0 ] || echo "executed with nbconvert; verdict phrases counted per set${MAX_VERDICTS:+, at most $MAX_VERDICTS}"
  echo "ledger ${LEDGER:-(a fresh temporary file)}, then: python scripts/claims_table.py LEDGER"
  exit 0
fi

source scripts/env.sh
set +e  # a failing set is reported, and the sweep goes on
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-1}"
NBVAL=(-n "${CSD_TEST_WORKERS:-2}" --dist loadfile --nbval-lax --nbval-cell-timeout=240 -p no:cacheprovider)
SUMMARY=() FAILED=0
[ -n "$LEDGER" ] || LEDGER=$(mktemp "${TMPDIR:-/tmp}/claims-ledger.XXXXXX")
: > "$LEDGER"
echo "claims ledger: $LEDGER"
for f in "${FAMILY_LIST[@]}"; do
  for s in "${SEED_LIST[@]}"; do
    if skipped "$f:$s"; then
      SUMMARY+=("claims sweep $f seed=$s: SKIP"); echo "${SUMMARY[-1]}"; continue
    fi
    start=$SECONDS
    echo "claims sweep $f seed=$s: ${#NOTEBOOKS[@]} notebooks"
    if [ "$VERDICTS" = 1 ]; then  # executed copies, so that their outputs can be read
      out=$(mktemp -d "${TMPDIR:-/tmp}/claims-sweep-$f-$s.XXXXXX")
      printf '%s\n' "${NOTEBOOKS[@]}" | CSD_FAMILY="$f" CSD_SEED="$s" CSD_CLAIMS_LEDGER="$LEDGER" \
        xargs -P "${CSD_TEST_WORKERS:-2}" -I{} python -m jupyter nbconvert --to notebook --execute \
        --ExecutePreprocessor.timeout=240 --output-dir "$out" {} --log-level=WARN
      rc=$?
      python scripts/count_verdicts.py "$out" --label "$f seed=$s" ${MAX_VERDICTS:+--max "$MAX_VERDICTS"} || \
        { [ "$rc" -ne 0 ] || rc=verdicts; }
    else
      CSD_FAMILY="$f" CSD_SEED="$s" CSD_CLAIMS_LEDGER="$LEDGER" python -m pytest "${NBVAL[@]}" "${NOTEBOOKS[@]}"
      rc=$?
    fi
    verdict=PASS
    if [ "$rc" = verdicts ]; then verdict="FAIL (more than $MAX_VERDICTS verdict phrases)"; FAILED=1
    elif [ "$rc" -ne 0 ]; then verdict="FAIL (exit $rc)"; FAILED=1; fi
    SUMMARY+=("claims sweep $f seed=$s: $verdict in $((SECONDS - start)) s"); echo "${SUMMARY[-1]}"
  done
done
printf '%s\n' "${SUMMARY[@]}"
python scripts/claims_table.py "$LEDGER" || FAILED=1
exit "$FAILED"
