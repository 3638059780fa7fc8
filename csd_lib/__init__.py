"""csd_lib: the CS Drafting workbook's library (Cascade Speculative Drafting, arXiv 2312.11462).

The names below are what a user and the notebooks call (the README's "Use it" section documents
each); everything else is reached through its package, which names its layer: ``engine`` (the method),
``families`` (models and tasks), ``measure`` (benchmarks and records), ``price`` (cost models, EWIF,
prediction, tuning), ``report`` (summaries and claims), ``viz`` (figures), ``teach`` (the live panel,
exercises), ``cli`` and ``zoo`` (how the tiny families were trained). Below them all: ``config`` (the one
reader of the environment), ``fileio`` (output paths checked first, files written whole) and ``logs``
(notes to stderr). A name is imported on first use, so ``import csd_lib`` stays quick.
"""
from __future__ import annotations

import importlib

from .logs import set_verbosity  # installs the library's stderr handler on import

# public name -> the module (under csd_lib) that defines it, or "module:name" for a name kept as an alias
_API = {
    "generate": "engine.cascade", "build_cascade": "engine.cascade", "METHODS": "engine.plan",
    "Plan": "engine.plan", "make_plan": "engine.plan", "vertical_k": "engine.plan",
    "Generation": "engine.generation", "Event": "engine.generation", "Stats": "engine.stats", "swi": "engine.stats",
    "Family": "families.family", "FAMILIES": "families.family", "load_family": "families.family",
    "random_family": "families.toy", "load_task": "families.tasks",
    "run_bench": "measure.bench", "read_records": "measure.records", "check_identical": "measure.lossless",
    "measure_costs": "price.costs", "load_costs": "price.costs", "predict_speedup": "price.ewif",
    "price_plan": "price.pricing", "forecast": "price.predict:predict_for_device", "tune": "price.tune",
    "summarize": "report.summary", "format_table": "report.summary",
    "live_panel": "teach.panel", "LivePanel": "teach.panel",
}
_SUBPACKAGES = ("config", "engine", "families", "measure", "price", "report", "viz", "teach", "cli")

__all__ = [*_API, "set_verbosity", *_SUBPACKAGES]


def __getattr__(name: str):
    if name in _API:
        module, _, attr = _API[name].partition(":")
        value = getattr(importlib.import_module(f".{module}", __name__), attr or name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'csd_lib' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
