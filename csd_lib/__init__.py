"""csd_lib: the engine of the CS Drafting workbook (arXiv 2312.11462)."""
from .logs import set_verbosity
from . import tasks as _tasks
from .cascade import METHODS, build_cascade, generate
from .plan import Plan, make_plan
from .families import FAMILIES, Family, load_family, random_family
from .trace import Event, Generation, Stats


def load_task(name, split="test", n=None, **kw):
    """Task examples with the paper's prompts (see :mod:`csd_lib.tasks`)."""
    return _tasks.load_task(name, split, n, **kw)


__all__ = ["generate", "build_cascade", "Plan", "make_plan", "load_family", "random_family", "load_task", "Family",
           "Generation", "Event", "Stats", "METHODS", "FAMILIES", "set_verbosity"]
