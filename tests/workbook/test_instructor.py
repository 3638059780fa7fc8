"""docs/INSTRUCTOR.md quotes the presets' K as they are, and names exercises that exist."""
import json
import re
from pathlib import Path

from csd_lib.families.presets import TINY_PRESETS

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "INSTRUCTOR.md").read_text(encoding="utf-8")


def test_paper_notation_matches_the_presets():
    for name in ("tiny-t5", "tiny-llama"):
        k = TINY_PRESETS[name]["k"]
        m = re.search(rf"{name}\s+`k11 = (\d+), k12 = (\d+), k22 = (\d+)`", GUIDE)
        assert m, f"INSTRUCTOR.md quotes no paper-notation K for {name}"
        assert [int(v) for v in m.groups()] == [k[0][0], k[0][1], k[1][1]], f"INSTRUCTOR.md quotes an old K for {name}"
    k = TINY_PRESETS["tiny-t5"]["k"][0]
    tree = f"base drafts {k[0]}, small continues to {k[0] + k[1]}, MaG to {sum(k)}"
    assert tree in GUIDE, f"the 50-minute plan's K branch must read {tree!r}"


def test_named_exercises_exist():
    named = set(re.findall(r"exercises? (\d\d)\.(\d)", GUIDE)) | set(re.findall(r"(?:, |and )(\d\d)\.(\d)\b", GUIDE))
    assert named, "the guide names no exercise"
    for nb, n in named:
        path = next((ROOT / "notebooks").glob(f"{nb}_*.ipynb"))
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        exercises = next("".join(c["source"]) for c in reversed(cells) if c["cell_type"] == "markdown").split("## Exercises", 1)[1]
        assert re.search(rf"^{n}\. ", exercises, re.M), f"INSTRUCTOR.md names exercise {nb}.{n}, which {path.name} lacks"
