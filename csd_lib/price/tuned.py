"""Settings tuned on this machine: ``python -m csd_lib tune`` measures, per machine class and family, CSD's K and
lenience, SD's draft length k and each one's draft-length policy (:mod:`csd_lib.engine.policy`) on a task's
validation split, and stores them; :func:`tuned_settings` is the one place that turns (family, method, the
settings a user gave) into the settings used, with a note that says where they came from.

Store: one JSON file per (machine class, family), ``<tuned dir>/<machine class>/<family>.json``
(:func:`csd_lib.config.tuned_dir`: ``$CSD_TUNED_DIR``, else under the user's cache folder; never the repository,
so that CI and the committed evidence keep the presets). The machine class is
:func:`csd_lib.measure.machine.machine_key` of this machine's fingerprint at the torch threads in use, so a
setting tuned with one thread is used where one thread runs. A setting the user gives always wins.

    python -m csd_lib tune --family tiny-t5 [--task synth-gsm8k] [--budget 4]
"""
from __future__ import annotations

import datetime
import json
import logging
import os
import time
from pathlib import Path

import numpy as np
import torch
import transformers

from .. import config
from ..engine.methods import SD
from ..engine.plan import check_confidence, check_draft_policy, check_lenience
from ..engine.policy import CONFIDENCE, FIXED, POLICIES
from ..fileio import read_text, write_atomic
from ..measure.machine import environment, fingerprint, machine_key
from .costs import costs_for, stored_costs_here
from .predict import calibration_prompts, candidate_grid, family_spec, generation_seconds
from .tune import sd_sweep_predicted, speedups, tune

log = logging.getLogger(__name__)

TUNED_METHODS = ("csd", "sd")  # the methods whose K (or k) and policy are tuned
CONFIDENCES = (CONFIDENCE, 0.7)  # the confidence policy's thresholds the tuner tries
SD_KS = 2                       # SD's draft lengths measured: the best predicted few
COSTS_SECONDS = 10.0            # a cost model measured by the tuner (costs_for's default)
MAX_FILE_BYTES = 2 ** 20
N_SIM = 1000                    # simulated generations per plan priced
PRICE_SECONDS = 0.5             # one plan priced at N_SIM on one idle core of this project's CI-class machine
STEP_SECONDS = 0.004            # a tiny family's target step on one such core (BENCHMARKS.md: about 80 AR tokens/s)
SD_PRICED = tuple(range(2, 25))  # SD's draft lengths priced (sd_sweep_predicted's)


def machine_class(device=None) -> str:
    """This machine's class (:func:`csd_lib.measure.machine.machine_key`) at the torch threads in use."""
    return machine_key(fingerprint(environment(device)))


def tuned_path(family: str, machine: str | None = None, root=None) -> Path:
    """Where ``family``'s tuned settings for ``machine`` (default: this machine's class) are stored."""
    return Path(root or config.tuned_dir()) / (machine or machine_class()) / f"{family}.json"


def tune_command(family: str) -> str:
    """The command that tunes ``family`` for this machine class (its threads named where they are not 1)."""
    threads = torch.get_num_threads()
    return f"python -m csd_lib tune --family {family}" + (f" --threads {threads}" if threads != 1 else "")


def check_tuned(data, family: str, where: str) -> dict:
    """``data`` as a tuned-settings dict of ``family``, or one ValueError that names ``where`` and the fix."""
    fix = f"delete it or rerun `{tune_command(family)}`"
    if not isinstance(data, dict) or data.get("family") != family:
        raise ValueError(f"{where} holds no tuned settings of {family}; {fix}")
    try:
        csd, sd = data["csd"], data["sd"]
        k = csd["k"]
        if not (isinstance(k, list) and k and all(isinstance(r, list) and all(type(v) is int and v >= 0 for v in r)
                                                  for r in k)):
            raise ValueError(f"csd K {k!r} is not a matrix of integers >= 0")
        if type(sd["k"]) is not int or sd["k"] < 1:
            raise ValueError(f"sd k {sd['k']!r} is not an integer >= 1")
        check_lenience(csd["lenience"])
        for name, m in (("csd", csd), ("sd", sd)):
            check_draft_policy(m["draft_policy"], name)
            if m["draft_policy"] == "confidence":
                check_confidence(m["confidence"])
        str(data["date"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{where} is not a valid tuned-settings file ({type(e).__name__}: {e}); {fix}") from None
    return data


def save_tuned(data: dict, root=None) -> Path:
    """Store a tuned result (checked first) at :func:`tuned_path` of its family and machine class, atomically."""
    check_tuned(data, data.get("family"), "the tuned result")
    path = tuned_path(data["family"], data["machine_class"], root)
    write_atomic(path, json.dumps(data, indent=1) + "\n", "tuned settings")
    return path


def load_tuned(family: str, machine: str | None = None, root=None) -> tuple[dict | None, Path]:
    """(the stored tuned settings of ``family`` for ``machine`` (default: this machine's class), or None where
    none is stored; its path). A file that is not a valid one raises one ValueError."""
    path = tuned_path(family, machine, root)
    if not path.exists():
        return None, path
    text = read_text(path, "tuned settings", f"rerun `{tune_command(family)}`", MAX_FILE_BYTES)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno} is not valid JSON ({e.msg}); delete it or rerun "
                         f"`{tune_command(family)}`") from None
    return check_tuned(data, family, str(path)), path


def tuned_settings(family: str, method: str, k=None, lenience=None, sd_k=None, draft_policy=None, confidence=None,
                   machine: str | None = None, root=None) -> tuple[dict, str]:
    """({k, lenience, sd_k, draft_policy, confidence}: the settings to run ``method`` of ``family`` with, a note
    saying where they come from). Each setting given (not None) is kept; the others come from the settings
    tuned for this machine class where a valid file is stored, else stay None (the family's preset). ``method``
    'bench' fills csd's and sd's settings together: one draft policy only where both were tuned to the same."""
    given = dict(k=k, lenience=lenience, sd_k=sd_k, draft_policy=draft_policy, confidence=confidence)
    machine = machine or machine_class()
    preset = (f"the preset (no tuned setting for machine class {machine}; `{tune_command(family)}` takes about "
              f"{_minutes(estimate_seconds(family))} min)")
    if method not in (*TUNED_METHODS, "bench"):
        return given, f"the preset ({method}'s settings are not tuned)"
    try:
        data, path = load_tuned(family, machine, root)
    except ValueError as e:
        return given, f"the preset (the tuned file is refused: {e})"
    if data is None:
        return given, preset
    csd, sd = data["csd"], data["sd"]
    tuned = {"sd": {"k": sd["k"]}, "csd": {"k": csd["k"], "lenience": csd["lenience"]},
             "bench": {"k": csd["k"], "lenience": csd["lenience"], "sd_k": sd["k"]}}[method]
    own = sd if method == SD.name else csd
    if method != "bench" or csd["draft_policy"] == sd["draft_policy"]:
        tuned.update(draft_policy=own["draft_policy"], confidence=own.get("confidence"))
    used = {key: v if v is not None else tuned.get(key) for key, v in given.items()}
    if used["draft_policy"] != "confidence":
        used["confidence"] = confidence
    kept = [key for key, v in given.items() if v is not None]
    return used, (f"tuned on {data['date'][:10]} for machine class {machine} ({path})"
                  + (f"; given: {', '.join(kept)}" if kept else ""))


def _minutes(seconds: float) -> str:
    return f"{max(1, round(seconds / 60))}"


def tune_candidates(n_drafters: int, mag: int) -> list:
    """The (K, lenience) grid the tuner prices (scripts/tune_tiny.py's): the first split of K and, with two
    drafters, the base's inner budget, at every lenience."""
    if n_drafters == 2:
        return candidate_grid(2, k1=(1, 2, 4, 6, 8), k2=(0, 5, 10, 15), k_inner=(1,), mag=mag)
    return candidate_grid(n_drafters, k1=(1, 2, 3, 4, 6, 8), mag=mag)


def plan_counts(budget: int, n: int, n_drafters: int = 2, leniences: int = 4) -> dict[str, int]:
    """What the tuner runs: AR and speculative generations (a probe per lenience and ``budget`` measured K, each
    next to AR; SD's probe; every policy of CSD and of SD's best k, and SD's other k, next to AR; warm-ups) and
    plans priced (every candidate, each measured configuration, SD's draft lengths)."""
    variants = 2 * (2 + len(CONFIDENCES)) + SD_KS - 1
    return {"ar": (leniences + budget + 1) * n + 1, "spec": (leniences + budget) * n + n + variants * n + 1,
            "priced": len(tune_candidates(n_drafters, 1)) + leniences + budget + len(SD_PRICED)}


def load_factor() -> float:
    """Wall seconds per second of one core's work now: the 1-minute load average per core, at least 1."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1)) if hasattr(os, "getloadavg") else 1.0


def estimate_seconds(family: str, budget: int = 4, n: int = 4, max_new_tokens: int = 64, fam=None) -> float:
    """About how long :func:`tune_family` takes here now, in wall seconds: generations priced from a loaded
    ``fam``'s probe cost model, else at a tiny family's typical step (:data:`STEP_SECONDS`), the plans priced
    (:data:`PRICE_SECONDS` each), a cost model measured where none is stored, all times :func:`load_factor`."""
    n_drafters = len(fam.drafters) if fam is not None else len(family_spec(family)["k"]) - 1
    counts = plan_counts(budget, n, n_drafters)
    if fam is None:
        ar, spec, costs = STEP_SECONDS * max_new_tokens, STEP_SECONDS * max_new_tokens / 2, 3 * COSTS_SECONDS
    else:
        prompts = calibration_prompts(fam.task, n)
        ar = generation_seconds(fam, prompts, "ar", max_new_tokens)[0]
        spec = generation_seconds(fam, prompts, "csd", max_new_tokens)[0]
        costs = 0.0 if stored_costs_here(fam) is not None else 3 * COSTS_SECONDS
    work = counts["ar"] * ar + counts["spec"] * spec + counts["priced"] * PRICE_SECONDS + costs
    return work * load_factor()


def _policy_variants(method: str, k, **kw) -> list[dict]:
    """``method`` at ``k`` under every policy (the confidence policy at each of :data:`CONFIDENCES`)."""
    out = []
    for p in POLICIES:
        for c in (CONFIDENCES if p == "confidence" else (None,)):
            out.append({"method": method, "k": k, "draft_policy": p, "confidence": c, **kw})
    return out


def _best(variants: list[dict], measured: list[float], method: str) -> dict:
    """The fastest variant of ``method`` (its settings and speedup), with the fixed policy's speedup at its K."""
    rows = [(v, x) for v, x in zip(variants, measured) if v["method"] == method]
    v, x = max(rows, key=lambda r: r[1])
    fixed = max(s for w, s in rows if w["draft_policy"] == FIXED and w["k"] == v["k"])
    out = {"k": v["k"], "draft_policy": v["draft_policy"], "confidence": v["confidence"], "speedup": x,
           "fixed_speedup": fixed}
    return out | ({"lenience": v["lenience"]} if "lenience" in v else {})


def tune_family(fam, task: str | None = None, budget: int = 4, n: int = 4, max_new_tokens: int = 64,
                progress: bool = True) -> dict:
    """Tune ``fam`` on this machine (the task's validation split): the cost model of this machine class
    (:func:`csd_lib.price.costs.costs_for`: stored, else measured), CSD's K and lenience
    (:func:`csd_lib.price.tune.tune`, ``budget`` configurations measured), SD's k (the best :data:`SD_KS`
    predicted by :func:`csd_lib.price.tune.sd_sweep_predicted`), then every draft policy of both in one run
    interleaved with AR; the fastest of each is kept. Returns the dict :func:`save_tuned` stores."""
    task = task or fam.task
    t0 = time.perf_counter()
    choice = costs_for(fam, seconds=COSTS_SECONDS, progress=progress)
    tr = tune(fam, task, budget=budget, candidates=tune_candidates(len(fam.drafters), fam.mag.n),
              max_new_tokens=max_new_tokens, n=n, n_sim=N_SIM, progress=progress, cost_model=choice.cost_model)
    sd_pred = sd_sweep_predicted(fam, task, ks=SD_PRICED, max_new_tokens=max_new_tokens, n=n,
                                 cost_model=choice.cost_model, n_sim=N_SIM)
    sd_ks = sorted(sd_pred, key=lambda kk: -sd_pred[kk])[:SD_KS]
    variants = (_policy_variants("csd", tr.best.k, lenience=tr.best.lenience) + _policy_variants("sd", sd_ks[0])
                + [{"method": "sd", "k": kk, "draft_policy": FIXED, "confidence": None} for kk in sd_ks[1:]])
    measured = speedups(fam, task, variants, max_new_tokens, n)
    env = environment(fam.target.device)
    return {"family": fam.name, "machine_class": machine_key(fingerprint(env)), "task": task, "split": "val",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "csd": _best(variants, measured, "csd"), "sd": _best(variants, measured, "sd"),
            "measured": [{**v, "speedup": x} for v, x in zip(variants, measured)],
            "sd_predicted": {str(kk): v for kk, v in sd_pred.items()},
            "budget": budget, "n": n, "max_new_tokens": max_new_tokens, "clock": tune_clock(),
            "cost_model": {"file": str(choice.path), "why": choice.why}, "seconds": time.perf_counter() - t0,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "fingerprint": fingerprint(env), "ar_wall": float(np.median([m.ar_wall for m in tr.measured]))}


def tune_clock() -> str:
    """The clock the tuner's times were read from (:func:`csd_lib.price.costs.cost_clock`)."""
    return "cpu" if torch.get_num_threads() == 1 and not torch.cuda.is_available() else "wall"
