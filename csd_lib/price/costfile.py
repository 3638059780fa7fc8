"""Cost model files: where a family's cost model is stored, and reading and writing one.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from .. import config
from ..fileio import write_atomic
from ..measure.machine import device_name
from .costmodel import CostModel
from .timing import measure_costs

log = logging.getLogger(__name__)


def cost_path(family_name: str, device: str | None = None) -> Path:
    return config.RESULTS_DIR / f"costs-{family_name}-{device or device_name()}.json"


def save_costs(cost_model: CostModel, path: Path | None = None) -> Path:
    path = Path(path) if path else cost_path(cost_model.family, cost_model.device)
    write_atomic(path, json.dumps(cost_model.to_dict(), indent=1) + "\n")
    return path


def load_costs(family_name: str, device: str | None = None, path: Path | None = None) -> CostModel | None:
    """The stored cost model of a family on this device, or None when none was measured."""
    path = Path(path) if path else cost_path(family_name, device)
    if not path.exists():
        return None
    return CostModel.from_dict(json.loads(path.read_text(encoding="utf-8")))


def read_cost_file(path):
    """The CostModel in a JSON file written by ``python -m csd_lib costs --out``; missing or malformed: ValueError."""
    fix = f"write one with `python -m csd_lib costs --family FAMILY --out {path}`, or pass --costs none"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"--costs {path}: no such file; {fix}") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        raise ValueError(f"--costs {path} cannot be read ({type(e).__name__}); {fix}") from None
    try:
        return CostModel.from_dict(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"--costs {path} is not a cost model ({type(e).__name__}: {e}); {fix}") from None


def bench_costs(fam, spec=None, seconds: float = 10.0):
    """The cost model for a bench summary: ``spec`` 'none' (no prediction), a JSON path, or None for
    the stored ``results/costs-<family>-<device>.json``, measured now when none is stored (sized to
    the family: about ``seconds``, a few points where one call is slow; it logs its estimate)."""
    if spec == "none":
        return None
    if spec:
        return read_cost_file(spec)
    cm = load_costs(fam.name, device_name(fam.target.device))
    if cm is None:
        log.info(f"bench: no stored cost model for {fam.name} on {device_name(fam.target.device)}; measuring one "
                 f"for the predicted speedups (--costs none skips it)")
        cm = measure_costs(fam, seconds=seconds, min_reps=1)
    return cm
