"""Fail if a notebook is committed with outputs or breaks the workbook's notebook rules.

Rules: no outputs or execution counts; learning goals near the top ("What you will learn"); a
"## Summary" and a "## Exercises" section in the last markdown cell, followed by nothing or by
"check your answer" code cells (``check(...)`` or ``check_one_of(...)`` from csd_lib.teach.exercises); the file is
valid under its own nbformat version (cell ids only from 4.5 on); the family comes from CSD_FAMILY
(``config.FAMILY``); citations of the reference page use its repo path (docs/REFERENCE.md); and
every notebook has its exercise solutions in solutions/<same name>.py.
"""
import glob
import json
import re
import sys
from pathlib import Path

import nbformat

CHECK_CALL = re.compile(r"\bcheck(_one_of)?\(")
problems = []
paths = sorted(glob.glob("notebooks/**/*.ipynb", recursive=True))
for path in paths:
    nb = json.load(open(path, encoding="utf-8"))
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as e:
        problems.append(f"{path}: not a valid notebook of its nbformat version {nb.get('nbformat')}.{nb.get('nbformat_minor')}: "
                        f"{e.message}")
    cells = nb.get("cells", [])
    text = ["".join(c.get("source", [])) for c in cells]
    if any(c.get("cell_type") == "code" and (c.get("outputs") or c.get("execution_count")) for c in cells):
        problems.append(f"{path}: has outputs (clear them: jupyter nbconvert --clear-output --inplace)")
    if not any("What you will learn" in t for t in text[:2]):
        problems.append(f"{path}: no learning goals ('What you will learn') in the first two cells")
    last_md = max((i for i, c in enumerate(cells) if c.get("cell_type") == "markdown"), default=None)
    if last_md is None or "## Summary" not in text[last_md] or "## Exercises" not in text[last_md]:
        problems.append(f"{path}: the last markdown cell must hold '## Summary' and '## Exercises'")
    elif any(not CHECK_CALL.search(t) for t in text[last_md + 1:]):
        problems.append(f"{path}: only 'check your answer' cells (calling check(...) or check_one_of(...)) may "
                        f"follow the exercises")
    if not any("FAMILY = config.FAMILY" in t for t in text):
        problems.append(f"{path}: take the family from CSD_FAMILY ('FAMILY = config.FAMILY')")
    if any(re.search(r"(?<!docs/)REFERENCE\.md", t) for t in text):
        problems.append(f"{path}: cite docs/REFERENCE.md by its path in the repo")
    if not (Path("solutions") / (Path(path).stem + ".py")).is_file():
        problems.append(f"{path}: no solutions/{Path(path).stem}.py with the exercise solutions")
if problems:
    print("notebook problems:", *problems, sep="\n  ")
    sys.exit(1)
print(f"notebooks clean: {len(paths)} checked")
