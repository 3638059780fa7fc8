"""The paper's "base + MaG" run (Table 2) where no committed ``-vertical`` results exist: benchmarked here on
the first examples of a committed run, so the two compare example by example."""
from __future__ import annotations

from pathlib import Path

from ..engine.kvariants import base_mag_k
from ..families.tasks import load_task
from .bench import run_bench


def run_base_mag(family, task: str, n: int, out: Path, like=None, max_new_tokens: int = 128, seed: int = 0) -> list[dict]:
    """Bench records of AR and of CSD with :func:`~csd_lib.engine.kvariants.base_mag_k` on the first ``n``
    examples of ``task``; with ``like`` (records of another run) its split seed and token budget."""
    if like:
        seed, max_new_tokens = like[0].get("seed", seed), like[0].get("max_new_tokens") or max_new_tokens
    examples = load_task(task, "test", n, seed=seed)
    return run_bench(family, examples, ["csd"], Path(out), max_new_tokens=max_new_tokens, k=base_mag_k(family, task),
                     progress=False, seed=seed)
