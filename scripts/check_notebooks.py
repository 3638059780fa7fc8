"""Fail if any notebook is committed with outputs or execution counts."""
import glob
import json
import sys

dirty = []
for path in sorted(glob.glob("notebooks/**/*.ipynb", recursive=True)):
    nb = json.load(open(path, encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code" and (cell.get("outputs") or cell.get("execution_count")):
            dirty.append(path)
            break
if dirty:
    print("notebooks with outputs (clear them: jupyter nbconvert --clear-output --inplace):", *dirty, sep="\n  ")
    sys.exit(1)
print(f"notebooks clean: {len(glob.glob('notebooks/**/*.ipynb', recursive=True))} checked")
