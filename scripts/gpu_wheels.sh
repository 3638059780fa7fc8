#!/usr/bin/env bash
# Build what the GPU check (scripts/gpu_check.sh) carries to a lent GPU machine: the Python 3.12
# packages that machine lacks and the check needs, unpacked, pruned and packed as one archive.
#
#   bash scripts/gpu_wheels.sh [DEST]      # default DEST: .gpu-wheels (ignored by git)
#
# Writes DEST/site.tar.xz (carry it: `carry: [".gpu-wheels/site.tar.xz"]`; gpu_check.sh unpacks it
# into a temporary folder on PYTHONPATH) and DEST/MANIFEST.txt (the versions packed). Needs a
# package index (pip download; pip's own cache makes a rebuild cheap); no Python 3.12 interpreter:
# pip picks the 3.12 / manylinux x86-64 wheels by their tags.
#
# Why an archive and not the wheels: the device tool carries at most 64 MiB with the working tree,
# and the tracked files alone take most of it (data/models, results/). The wheels are about 14 MB
# (plotly 10 of it); unpacked, without plotly's browser bundles, and xz-compressed they are
# about 5 MB. The limit printed is 64 MiB minus what travels anyway (tracked files and untracked
# files git does not ignore), and never over 40 MiB.
#
# csd_lib is not packed: its wheel holds data/ (about 48 MB); the check runs it from the repo root
# (PYTHONPATH), which travels anyway.
#
# A tested transformers is packed only when the machine's is outside the tested range (below).
#
# Exit status: 0 built, 1 over the size limit, 3 no package index reachable (nothing built).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
DEST=${1:-.gpu-wheels}
# What the check needs beyond the machine's image: figures and widgets (csd_lib), and a kernel with
# a client to execute notebooks (nbclient).
WANT="plotly ipywidgets ipython traitlets nbclient nbformat ipykernel jupyter_client"
# Already on the machine (the device notes' KINDS.md, "Python packages already there", read 2026-11-17).
HAVE="attrs packaging psutil pygments python_dateutil typing_extensions narwhals six tzdata"
# Not needed at run time: the debugger (ipykernel imports it only when present), completion
# (IPython imports jedi only when present) and the browser-side assets of ipywidgets.
SKIP="debugpy jedi parso widgetsnbextension jupyterlab_widgets"
# The machine's transformers (KINDS.md, "pip list, as a session saw it", 2026-11). Outside the tested
# range (pyproject.toml; scripts/gpu_check.py gate), the pinned one (requirements.txt) is packed too,
# with only the model code the presets use, and unpacked before the machine's on the path.
MACHINE_TRANSFORMERS=${MACHINE_TRANSFORMERS:-5.17.0}
KEEP_MODELS="auto encoder_decoder t5 llama"  # what loading them imports (AutoTokenizer: encoder_decoder)
TESTED=""  # its needs (huggingface_hub, tokenizers, safetensors, ...) are on the machine at versions it takes
$PY scripts/gpu_check.py gate "$MACHINE_TRANSFORMERS" 2>/dev/null ||
  TESTED="transformers==$(sed -n 's/^transformers==\([^ #]*\).*/\1/p' requirements.txt)"
[ -n "$TESTED" ] && echo "gpu_wheels: the machine's transformers $MACHINE_TRANSFORMERS is outside the tested range: packing $TESTED"
TAGS=(--python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none --only-binary=:all:
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_26_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64
      --platform manylinux1_x86_64 --platform any)
CARRY_MIB=64
CAP_MIB=40

mkdir -p "$DEST"
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/gpu-wheels.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
if ! $PY -m pip download -q --disable-pip-version-check -d "$STAGE/wheels" "${TAGS[@]}" $WANT 2>"$DEST/pip.log" ||
   { [ -n "$TESTED" ] && ! $PY -m pip download -q --disable-pip-version-check --no-deps -d "$STAGE/wheels" "${TAGS[@]}" \
       "$TESTED" 2>>"$DEST/pip.log"; }; then
  echo "gpu_wheels: pip download failed (is a package index reachable?); see $DEST/pip.log" >&2
  tail -3 "$DEST/pip.log" >&2
  exit 3
fi

norm() { echo "$1" | tr 'A-Z-.' 'a-z__'; }
skip=" $(for n in $HAVE $SKIP; do norm "$n"; done | tr '\n' ' ') "
keep=()
for w in "$STAGE"/wheels/*.whl; do
  [[ $skip == *" $(norm "$(basename "$w" | cut -d- -f1)") "* ]] || keep+=("$w")
done
$PY -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --target "$STAGE/site" \
  "${TAGS[@]}" "${keep[@]}"
# Prune what a headless run never reads: plotly's JupyterLab extension and browser bundles (the
# notebooks run with CSD_PLOTLY_RENDERER=plotly_mimetype, which embeds no plotly.js; a stub stays
# for code that reads the file), test suites, console scripts.
site="$STAGE/site"
rm -rf "$site/plotly/labextension" "$site/share/jupyter/labextensions" "$site/plotly/package_data/widgetbundle.js" "$site/bin"
echo "/* plotly.js left out by scripts/gpu_wheels.sh */" >"$site/plotly/package_data/plotly.min.js"
find "$site" -depth -type d \( -name tests -o -name __pycache__ \) -exec rm -rf {} +
if [ -d "$site/transformers/models" ]; then  # what no preset loads: 104 of its 113 MB unpacked
  for d in "$site"/transformers/models/*/; do
    [[ " $KEEP_MODELS " == *" $(basename "$d") "* ]] || rm -rf "$d"
  done
  (cd "$site/transformers" && rm -rf cli data exporters pipelines trainer*.py training_args*.py testing_utils.py \
     hyperparameter_search.py optimization.py)
fi
ls "$site" | sed -n 's/\.dist-info$//p' | sort >"$DEST/MANIFEST.txt"
tar -cJf "$DEST/site.tar.xz.tmp" -C "$site" .
mv "$DEST/site.tar.xz.tmp" "$DEST/site.tar.xz"

size=$(stat -c %s "$DEST/site.tar.xz")
# what travels with every device call anyway: tracked files and untracked files git does not ignore
tree=$(git ls-files -z -co --exclude-standard | $PY -c '
import os, sys
print(sum(os.path.getsize(p) for p in sys.stdin.read().split("\0") if p and os.path.isfile(p)))')
limit=$(( CARRY_MIB * 1048576 - tree ))
(( limit > CAP_MIB * 1048576 )) && limit=$(( CAP_MIB * 1048576 ))
mib() { $PY -c "print(f'{$1 / 1048576:.1f}')"; }
echo "gpu_wheels: $(wc -l <"$DEST/MANIFEST.txt") packages ($(tr '\n' ' ' <"$DEST/MANIFEST.txt"))"
echo "gpu_wheels: $DEST/site.tar.xz is $(mib "$size") MiB; the working tree carries $(mib "$tree") MiB; limit $(mib "$limit") MiB"
if (( size > limit )); then
  echo "gpu_wheels: over the limit: the device tool carries at most $CARRY_MIB MiB with the tree;" \
    "pack new results that only the reports read (python scripts/pack_results.py) or remove untracked files" >&2
  exit 1
fi
