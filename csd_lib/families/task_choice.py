"""Which tasks a family is benchmarked on, and where a task's examples came from.

The embedded tiny families are trained on the synthetic look-alikes; a real family runs GSM8K and MMLU,
from real data when ``CSD_DATA_DIR`` or the hub gives it, else from the synthetic stand-in
(:func:`csd_lib.families.tasks.load_task`), which :func:`data_origin` says.
"""
from __future__ import annotations

EMBEDDED_PREFIX = "tiny"
SYNTH_TASKS = ("synth-gsm8k", "synth-mmlu")
REAL_TASKS = ("gsm8k", "mmlu")


def benchmark_tasks(family) -> list[str]:
    """The tasks to benchmark ``family`` on: the synthetic ones for an embedded tiny family, else GSM8K and MMLU."""
    return list(SYNTH_TASKS if family.name.startswith(EMBEDDED_PREFIX) else REAL_TASKS)


def data_origin(task: str, examples) -> str:
    """'real data (source)', 'synthetic', or 'synthetic stand-in' when ``task`` is a real task whose data were missing."""
    examples = list(examples)
    if not examples:
        raise ValueError(f"no examples of {task!r} to tell the origin of")
    got = examples[0].task
    if task.startswith("synth-"):
        return "synthetic"
    if got.startswith("synth-"):
        return f"synthetic stand-in for {task} (no CSD_DATA_DIR copy and no hub access)"
    return f"real data ({examples[0].source.rsplit(':', 1)[0]})"
