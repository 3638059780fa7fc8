"""Cost model files: where a family's cost model is stored, reading and writing one, and picking the one
that applies to this machine.

A cost model is used only on the machine class it was measured on (:func:`costs_for`): its
fingerprint (:func:`cost_fingerprint`) must match this machine's
(:func:`csd_lib.measure.machine.match_fingerprints`). The committed ``results/costs-<family>-<device>.json``
is tried after this machine's own ``results/machines/costs-<family>-<device>-<machine key>.json`` and the
committed file of its machine class; where none matches, one is measured and written to the machine's own
file, so the committed ones stay as they are. :func:`costs_for_run` does the same for pricing a benchmark
run here; :func:`stored_costs_for_run` measures nothing (a report of committed runs): the stored cost model
of the run's own machine class, or none. Each says which file it chose and why (:class:`CostChoice`).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import NamedTuple

from .. import config
from ..fileio import write_atomic
from ..measure.machine import (Match, device_name, environment, fingerprint, machine_key, match_fingerprints,
                               run_fingerprint)
from .costmodel import CostModel
from .timing import measure_costs

log = logging.getLogger(__name__)

MACHINES_DIR = "machines"  # under results/: cost models measured on the machine that uses them (not committed)


def cost_path(family_name: str, device: str | None = None) -> Path:
    return config.RESULTS_DIR / f"costs-{family_name}-{device or device_name()}.json"


def machine_cost_path(family_name: str, fp: dict) -> Path:
    """Where a cost model measured on the machine of fingerprint ``fp`` is kept:
    ``results/machines/costs-<family>-<device>-<machine key>.json`` (:func:`csd_lib.measure.machine.machine_key`)."""
    return config.RESULTS_DIR / MACHINES_DIR / f"costs-{family_name}-{fp['device']}-{machine_key(fp)}.json"


def class_cost_path(family_name: str, fp: dict) -> Path:
    """Where the project commits a cost model of one machine class beside the default one:
    ``results/costs-<family>-<device>-<machine key>.json`` (written with ``costs --out``)."""
    return config.RESULTS_DIR / f"costs-{family_name}-{fp['device']}-{machine_key(fp)}.json"


def cost_fingerprint(cost_model: CostModel) -> dict:
    """The fingerprint a cost model was measured with: its environment and its reference steps (stored,
    or read from its own one-token timings in a file stored before fingerprints)."""
    return fingerprint(cost_model.env, cost_model.env.get("reference") or cost_model.reference_steps())


def save_costs(cost_model: CostModel, path: Path | None = None) -> Path:
    path = Path(path) if path else cost_path(cost_model.family, cost_model.device)
    path.parent.mkdir(parents=True, exist_ok=True)
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


class CostChoice(NamedTuple):
    """The cost model chosen by :func:`costs_for` (or :func:`stored_costs_for_run`: None where none matches),
    how its fingerprint compared, its file, and ``why``: which file and why it was used, in words."""
    cost_model: CostModel | None
    match: Match | None
    path: Path | None
    why: str


def _shown(path: Path) -> str:
    """A cost model's path as ``results/...`` when it lies under the results folder, else as given."""
    try:
        return str(Path(path).resolve().relative_to(config.RESULTS_DIR.resolve().parent))
    except ValueError:
        return str(path)


def _first_usable(family_name: str, fp: dict, paths) -> tuple[CostChoice | None, list[str]]:
    """The first stored cost model in ``paths`` whose fingerprint matches ``fp`` (an 'unknown' one, stored
    before fingerprints, counts, with a warning), and a line per file skipped for another machine class."""
    skipped = []
    for kind, path in paths:
        cm = load_costs(family_name, path=path)
        if cm is None:
            continue
        m = match_fingerprints(fp, cost_fingerprint(cm))
        if m.verdict == "match":
            log.info(f"cost model {path}: {m.describe()}")
            return CostChoice(cm, m, path, f"`{_shown(path)}` ({kind}), whose fingerprint matches: {m.describe()}"), skipped
        if m.verdict == "unknown":
            log.warning(f"cost model {path}: used, but its machine is not known ({m.describe()}); re-measure it "
                        f"with `python -m csd_lib costs --family {family_name}` to store a fingerprint")
            return CostChoice(cm, m, path, f"`{_shown(path)}` ({kind}), used with a warning to re-measure it: "
                                           f"{m.describe()}"), skipped
        log.warning(f"cost model {path} was measured on another machine class, not used: {m.describe()}")
        skipped.append(f"`{_shown(path)}` is of another machine class: {m.describe()}")
    return None, skipped


def _candidates(family_name: str, fp: dict, own: bool = True) -> list[tuple[str, Path]]:
    """Where a cost model of ``fp``'s machine may be stored, in the order tried, with what each file is."""
    return ([("this machine's own file", machine_cost_path(family_name, fp))] if own else []) + [
        ("the committed file of this machine class", class_cost_path(family_name, fp)),
        ("the committed default", cost_path(family_name, fp["device"]))]


def costs_for(fam, reference: dict | None = None, seconds: float = 10.0,
              prompt_ids: list[int] | None = None, min_reps: int = 1) -> CostChoice:
    """The cost model that prices ``fam``'s plans on this machine, how its fingerprint compared, its file,
    and why it was chosen (a :class:`CostChoice`).

    ``reference``: this machine's reference steps ({'target', 'drafter', 'drafter_name'} seconds, e.g. a
    run's: :func:`csd_lib.measure.machine.run_fingerprint`; None: compare the static fingerprint only).
    Tried in turn: this machine's own file (:func:`machine_cost_path`), the committed one of its machine class
    (:func:`class_cost_path`), the committed default (:func:`cost_path`).
    A match is used; an unknown one (a file stored before fingerprints, nothing known differs) is used with
    a warning; a mismatch is skipped. None usable: one is measured now (about ``seconds``, with a bar;
    ``prompt_ids``, ``min_reps``: :func:`csd_lib.price.timing.measure_costs`'s) and written (atomically) to
    this machine's own file.
    """
    here = fingerprint(environment(fam.target.device), reference)
    chosen, skipped = _first_usable(fam.name, here, _candidates(fam.name, here))
    if chosen is not None:
        return chosen
    path = machine_cost_path(fam.name, here)
    log.info(f"no stored cost model of {fam.name} matches this machine; measuring one into {path} (its time is "
             f"priced next)")
    cm = measure_costs(fam, prompt_ids, seconds=seconds, min_reps=min_reps)
    save_costs(cm, path)
    why = "; ".join(skipped) or f"no cost model of {fam.name} is stored for this device"
    return CostChoice(cm, match_fingerprints(here, cost_fingerprint(cm)), path,
                      f"measured here into `{_shown(path)}`, because {why}")


def costs_for_run(fam, records, seconds: float = 10.0, min_reps: int = 1) -> CostChoice:
    """:func:`costs_for` for pricing a benchmark run's ``records`` here: with the run's reference steps when
    the run was measured on this machine class, else with none (the static fingerprint), and ``why`` says
    that the run's calls are then priced at this machine's costs."""
    run = run_fingerprint(records)
    here = fingerprint(environment(fam.target.device))
    same = run is None or match_fingerprints(here, run).usable
    choice = costs_for(fam, run["reference"] if run and same else None, seconds, min_reps=min_reps)
    if same:
        return choice
    return choice._replace(why=f"{choice.why}. The run was measured on another machine class "
                               f"({match_fingerprints(here, run).describe()}): its calls are priced at this "
                               f"machine's costs, so the predictions say what its acceptance would give here")


def stored_costs_for_run(family_name: str, records) -> CostChoice:
    """The stored cost model of a run's own machine class, measuring nothing (a report of committed runs):
    the committed file of its class (:func:`class_cost_path`), else the committed default, each only when
    its fingerprint matches the run's (:func:`csd_lib.measure.machine.run_fingerprint`). None matches: a
    :class:`CostChoice` with no cost model and ``why`` naming each file and how it differs."""
    run = run_fingerprint(records)
    if run is None:
        return CostChoice(None, None, None, "the run has no engine line to fingerprint")
    chosen, skipped = _first_usable(family_name, run, _candidates(family_name, run, own=False))
    if chosen is not None:
        return chosen
    return CostChoice(None, None, None, "no stored cost model matches this run's machine: "
                      + ("; ".join(skipped) or f"none of {family_name} is stored for {run['device']}"))


def bench_costs(fam, spec=None, seconds: float = 10.0, records=None,
                prompt_ids: list[int] | None = None) -> tuple[CostModel | None, Match | None]:
    """The cost model for a bench summary and how its fingerprint compares with the run's (None, None for
    ``spec`` 'none'). ``spec``: a JSON path, used whatever the comparison says (the caller reports it), or
    None: :func:`costs_for` with the run's reference steps (``records``: the run's lines)."""
    if spec == "none":
        return None, None
    run = run_fingerprint(records or [])
    reference = run["reference"] if run else None
    if spec:
        cm = read_cost_file(spec)
        return cm, match_fingerprints(fingerprint(environment(fam.target.device), reference), cost_fingerprint(cm))
    cm, m, _, _ = costs_for(fam, reference, seconds, prompt_ids)
    return cm, m
