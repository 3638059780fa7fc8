"""The presets: data only. Real checkpoints, the embedded tiny families, and the default-K rule's numbers.

A preset may carry ``by_task``: {task: {"k": K, "sd_k": k}}, the K (and SD's k) that a bench or
notebook of that task runs with instead of the family's (``Family.k_for``, ``Family.sd_k_for``);
:func:`check_by_task` refuses, at import, a task that :data:`csd_lib.families.tasks.TASKS` does not know.

:mod:`csd_lib.families` loads them; :mod:`csd_lib.families.shadow` builds random-weight copies of the
real ones. MaG's block (the last column of every K) is :data:`csd_lib.engine.plan.MAG_BLOCK`.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..config import DATA_ROOT
from ..engine.plan import MAG_BLOCK, validate_k
from .tasks import TASKS

# The default-K rule (families.default_k), paper Table 5 (GSM8K): the largest drafter's own
# budget K[0][0] (k11 = 8), every further entry of the target's row (k12 = 13), every entry
# inside a drafter's own review (k22 = 1); one drafter alone takes the official LLaMA setting.
DEFAULT_K_RULE = dict(first=8, further=13, inner=1, single=13, mag=MAG_BLOCK)

# The staged method's K when a preset names none: the base drafts 5 for the target, the small 3 for the base.
STAGED_K = [[5, 0], [0, 3]]

# Lenience of draft-to-draft reviews when nothing else is known: 3, both the paper's Table 5
# (FLAN-T5, GSM8K) and the official code's LLaMA setting.
DEFAULT_LENIENCE = 3.0

# Real checkpoints. K and lenience: paper Table 5 (GSM8K) for FLAN-T5; the official
# code's shipped LLaMA setting for Vicuna (docs/REFERENCE.md). ``params``: published sizes, used
# to say which preset fits a GPU.
REAL_PRESETS = {
    "flan-t5": dict(target="google/flan-t5-xxl", drafters=["google/flan-t5-base", "google/flan-t5-small"],
                    k=[[8, 13, MAG_BLOCK], [0, 1, MAG_BLOCK], [0, 0, MAG_BLOCK]], lenience=3.0, params=11.3e9),
    "flan-t5-colab": dict(target="google/flan-t5-large", drafters=["google/flan-t5-base", "google/flan-t5-small"],
                          k=[[8, 13, MAG_BLOCK], [0, 1, MAG_BLOCK], [0, 0, MAG_BLOCK]], lenience=3.0, params=0.77e9),
    "vicuna": dict(target="lmsys/vicuna-7b-v1.3", drafters=["double7/vicuna-68m"],
                   k=[[13, MAG_BLOCK], [0, MAG_BLOCK]], lenience=3.0, params=7e9, prompt_style="vicuna-v1.1"),
}

# The embedded families, trained by this project (csd_lib.zoo). K, lenience, SD's k and by_task are
# data (data/tuned_presets.json, where scripts/tune_tiny.py writes the tuned K, each with a note on
# where it comes from); the staged method's K is tiny-t5's, untuned.
TUNED_PRESETS = DATA_ROOT / "tuned_presets.json"
_STAGED = {"tiny-t5": STAGED_K, "tiny-llama": None, "tiny-t5-paper": STAGED_K}


def _tiny_presets(path: Path = TUNED_PRESETS) -> dict:
    tuned = json.loads(path.read_text(encoding="utf-8"))
    return {name: {**{k: v for k, v in tuned[name].items() if k != "note"}, "staged_k": staged}
            for name, staged in _STAGED.items()}


TINY_PRESETS = _tiny_presets()


def check_by_task(presets: dict) -> None:
    """Refuse a preset's ``by_task`` that names an unknown task or setting, or a K of the wrong shape."""
    for name, spec in presets.items():
        for task, over in spec.get("by_task", {}).items():
            if task not in TASKS:
                raise ValueError(f"preset {name!r}: by_task names unknown task {task!r}; tasks are {', '.join(TASKS)}")
            bad = sorted(set(over) - {"k", "sd_k"})
            if bad:
                raise ValueError(f"preset {name!r}: by_task[{task!r}] has unknown setting(s) {bad}; use 'k' and 'sd_k'")
            if "k" in over:
                validate_k(over["k"], len(spec["k"]), what=f"preset {name!r} by_task[{task!r}] K")
            sd_k = over.get("sd_k", 1)
            if isinstance(sd_k, bool) or not isinstance(sd_k, int) or sd_k < 1:
                raise ValueError(f"preset {name!r}: by_task[{task!r}] sd_k must be an integer >= 1, got {sd_k!r}")


check_by_task(TINY_PRESETS)
check_by_task(REAL_PRESETS)
