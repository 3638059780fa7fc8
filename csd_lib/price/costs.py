"""Cost models measured, stored and chosen: :func:`measure_costs` times a family on this machine into a
:class:`csd_lib.price.costmodel.CostModel`, :func:`save_costs` / :func:`load_costs` store it, and :func:`costs_for`
picks the one that applies to this machine class.

Measuring. A speculative step's walltime is the sum of its calls, and a call's price depends on what
it does: the target scoring 17 drafted tokens costs more than a one-token AR step, and a
call deep into a long generation costs more than one near its start. :func:`measure_costs`
times each model of a family through :meth:`csd_lib.engine.models.LM.logits` (the exact call the
engine makes) for ``n`` tokens scored (1..32) at several cache lengths ``L``, after a
warm-up, keeps the median of repetitions, and fits each model's t(n, L)
(:func:`csd_lib.price.costmodel.fit_call`: R² and the largest relative error over the grid; a fit with
too few timings or an R² below :data:`csd_lib.price.costmodel.MIN_R2` keeps fewer terms or the median timing,
``CostModel.fit_notes`` say so). The same file also holds the engine's own overhead per review (softmax and
:func:`csd_lib.engine.review.review` over ``n`` rows) and per MaG proposal (:func:`engine_overhead`), so that
:func:`csd_lib.price.ewif.predict_speedup` can price a step in seconds. :func:`step_costs` is a quicker look: a
few calls per model, not a fit. The timing probes a family takes at load
(:func:`csd_lib.families.family.probe_calls`) stay with the family, since loading and the bench (layers below
this one) read them; :func:`probe_cost_model` turns one into a cost model (``t(n) = a + b n``).

Storing and choosing. A cost model is stored as ``results/costs-<family>-<device>.json`` together with the
environment it was measured in (torch version, threads, CPU model and vector extensions, and the reference
steps of its fingerprint: :mod:`csd_lib.measure.machine`, which stays below this layer because bench records
carry fingerprints). It is used only on the machine class it was measured on (:func:`costs_for`): its
fingerprint (:func:`cost_fingerprint`) must match this machine's
(:func:`csd_lib.measure.machine.match_fingerprints`). The committed ``results/costs-<family>-<device>.json``
is tried after this machine's own ``results/machines/costs-<family>-<device>-<machine key>.json`` and the
committed file of its machine class; where none matches, one is measured and written to the machine's own
file, so the committed ones stay as they are. :func:`costs_for_run` does the same for pricing a benchmark
run here; :func:`stored_costs_for_run` measures nothing (a report of committed runs): the stored cost model
of the run's own machine class, or none. Each says which file it chose and why (:class:`CostChoice`).

    python -m csd_lib costs --family tiny-t5 [--seconds 20] [--threads 1]
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from .. import config
from ..engine.cascade import encode_prompt, generate
from ..engine.methods import get
from ..engine.plan import MAG, METHODS
from ..families.family import PROBE_BLOCK, probe_calls, probe_cpu
from ..families.tasks import load_task
from ..fileio import read_text, write_atomic
from ..logs import seconds_bar
from ..measure.machine import (Match, device_name, environment, fingerprint, machine_key, match_fingerprints,
                               run_fingerprint)
from .costmodel import CallFit, CostModel, cost_problem, fit_call, overhead_fit
from .pricing import method_seconds, run_acceptance

log = logging.getLogger(__name__)

PROBE_START = 1.0  # the cache start a probe's cost model prices with: its starts hold the prefill
MACHINES_DIR = "machines"  # under results/: cost models measured on the machine that uses them (not committed)
N_GRID = (1, 2, 4, 8, 16, 32)
OVERHEAD_PROMPTS = 3  # validation prompts the engine-overhead fit runs every method on


# -- measuring -------------------------------------------------------------------------


def probe_cost_model(fam, prompt_ids: list[int] | None = None, prompt_tokens: int | None = None) -> CostModel:
    """A cost model from :class:`csd_lib.families.family.CpuProbe` timings: the family's own probe (a hub family
    on the CPU), else one taken now on ``prompt_ids`` (default: the probe's gsm8k-style prompt). Each call costs
    ``a + b n`` through its one-token and block timings; each model's start (T5's encoder, a decoder's prefill,
    which computes logits for its last row only) is the probe's, scaled to ``prompt_tokens``: price with a cache
    start of 1 (:data:`PROBE_START`), so that a prefill is not priced again as a call."""
    probe = fam.cpu_probe if prompt_ids is None else None
    if probe is None:
        probe = probe_calls(fam.models, prompt_ids) if prompt_ids is not None else \
            probe_cpu(fam.models, fam.tokenizer, fam.prompt_style)
    scale, wall = (prompt_tokens or probe.prompt_tokens) / probe.prompt_tokens, probe.wall_per_second()
    forward, start = {}, {}
    for lm in fam.models:
        step, block = wall * probe.step[lm.name], wall * probe.block[lm.name]
        b = max(0.0, (block - step) / (PROBE_BLOCK - 1))
        forward[lm.name] = CallFit([step - b, b, 0.0, 0.0, 0.0])
        start[lm.name] = max(0.0, wall * probe.start[lm.name] - step) * scale
    busy = f" (CPU time x {wall:.1f}, the machine's load per core)" if probe.clock == "cpu" and wall > 1 else ""
    return CostModel(fam.name, str(fam.target.device), forward, start=start,
                     env={"source": f"a probe of {len(fam.models)} model(s){busy}"})



def cost_clock():
    """The clock that times calls: the process's CPU time with one torch thread on the CPU (a call
    that other jobs preempt is not charged for their time, so the fit holds on a shared machine),
    else wall time (several threads, or a GPU that works while the CPU waits)."""
    if torch.get_num_threads() == 1 and not torch.cuda.is_available():
        return time.process_time
    return time.perf_counter


def _filler(prompt_ids: list[int], length: int) -> list[int]:
    """A token sequence of ``length`` made by repeating the prompt."""
    reps = -(-length // max(1, len(prompt_ids)))
    return (list(prompt_ids) * reps)[:length]


def measure_costs(fam, prompt_ids: list[int] | None = None, seconds: float = 20.0, n_grid=N_GRID,
                  l_grid=None, warmup: int = 2, min_reps: int = 10, progress: bool = True) -> CostModel:
    """Time every model of ``fam`` on an (n, L) grid and fit a :class:`CostModel`.

    ``prompt_ids``: a typical prompt (default: the first validation prompt of the family's
    task); T5 encodes it once, Llama uses it as the start of its cache. ``l_grid``: cache
    lengths (default: 3 lengths spanning a 128-token generation after the prompt). The
    repetitions per point are chosen so the whole measurement takes about ``seconds``, but
    never fewer than ``min_reps``; where even that would overrun (slow calls: a real family on a
    CPU) every other ``n`` of the grid is measured, and the engine-overhead runs shrink to fit.
    Each point keeps the median of its repetitions, timed on the cost model's clock (CPU time
    with one thread: other jobs' preemption is not counted): one call's time still varies between
    repetitions, the fastest of them sits well below a typical call, while
    the bench's fastest round of a whole generation is the sum of hundreds of typical calls.
    The rounds interleave every point, so a busy spell cannot favour one of them. ``progress``: a bar on stderr
    (a notebook passes False: a cleared bar stays frozen in a saved notebook's output).
    """
    if prompt_ids is None:
        ov_prompts = [encode_prompt(fam, e.prompt) for e in load_task(fam.task, "val", OVERHEAD_PROMPTS)]
        prompt_ids = ov_prompts[0]
    else:
        ov_prompts = [prompt_ids]
    lms = fam.models
    grids = {}
    for lm in lms:
        base = len(lm.start(prompt_ids))
        grids[lm.name] = sorted(set(l_grid or (base, base + 64, base + 128)))
        lm.release()
    size = _size_run(fam, prompt_ids, len(ov_prompts), grids, n_grid, seconds, warmup, min_reps)
    n_grid, reps, points = size["n_grid"], size["reps"], size["points"]
    weight = {lm.name: {n: c * len(grids[lm.name]) for n, c in size["cost"][lm.name].items()} for lm in lms}
    clock = cost_clock()
    samples: list[list] = []
    with seconds_bar(sum(w for ws in weight.values() for w in ws.values()) * (warmup + reps),
                     f"cost model {fam.name}", disable=not progress, leave=False) as bar:  # cleared before an error is printed
        for lm in lms:                     # every point is timed once per round, rounds interleave
            samples += _time_points(lm, prompt_ids, grids[lm.name], n_grid, warmup + reps, warmup, clock,
                                    lambda n, w=weight[lm.name]: bar.update(w[n] / len(grids[lm.name])))
    overhead = engine_overhead(fam, ov_prompts, max_new_tokens=size["ov_tokens"], rounds=size["ov_rounds"])
    forward, start, notes = _fit_samples(fam, samples, overhead)
    mid = float(np.mean(grids[fam.target.name]))
    review_fit = CallFit([overhead["per_call"], overhead["per_row"], 0.0, 0.0], overhead["r2"],
                         overhead["max_rel_err"], overhead["note"])
    cm = CostModel(fam.name, device_name(fam.target.device), forward, review_fit, overhead["per_mag"], start, mid,
                   dict(environment(fam.target.device), reps_per_point=reps, points=points, point_statistic="median",
                        clock="cpu time" if clock is time.process_time else "wall time",
                        prompt_tokens=len(prompt_ids)),
                   samples, notes)
    cm.env["reference"] = cm.reference_steps()  # the fingerprint's measured part (csd_lib.measure.machine)
    return cm


def step_costs(fam, prompt_ids: list[int] | None = None, ns=(1, 10), reps: int = 5, warmup: int = 2,
               cached: int = 64) -> dict[str, dict[int, float]]:
    """{model: {n: median seconds of one call scoring n tokens}} for every model of ``fam``, a few calls
    each (``reps`` after ``warmup``) over a cache of the start plus ``cached`` tokens (the middle of the
    cost model's grid), on the cost model's clock: a quick look at this machine, not a cost model."""
    if prompt_ids is None:
        prompt_ids = encode_prompt(fam, load_task(fam.task, "val", 1)[0].prompt)
    clock, out = cost_clock(), {}
    for lm in fam.models:
        seq = lm.start(prompt_ids)
        ctx = seq + _filler(prompt_ids, cached)
        out[lm.name] = {}
        for n in ns:
            draft = ctx + _filler(prompt_ids[::-1], n)
            for _ in range(warmup):
                lm.logits(draft, n - 1)
            ts = []
            for _ in range(reps):
                t0 = clock()
                lm.logits(draft, n - 1)  # the cache holds ctx + draft: logits crops it back to ctx first
                ts.append(clock() - t0)
            out[lm.name][n] = float(np.median(ts))
        lm.release()
    return out


def reference_of(steps: dict[str, dict[int, float]]) -> dict:
    """The fingerprint's reference steps (:mod:`csd_lib.measure.machine`) from :func:`step_costs`: the
    target's one-token step and the smallest drafter's (the last model)."""
    names = [n for n in steps if n != "target"]
    return {"target": steps["target"][1], "drafter_name": names[-1] if names else None,
            "drafter": steps[names[-1]][1] if names else None}


def _size_run(fam, prompt_ids: list[int], n_prompts: int, grids: dict, n_grid, seconds: float, warmup: int,
              min_reps: int) -> dict:
    """Price the measurement from a probe of every model (:func:`probe_cost_model`) and size
    it to ``seconds``, half for the points and half for the engine-overhead runs: the ``n_grid`` kept, ``reps`` per
    point, ``points``, each point's predicted seconds per call (``cost``), the overhead runs' ``ov_tokens`` and
    ``ov_rounds``, and the whole run's predicted seconds (``eta``), each method's generation priced on its plan."""
    lms = fam.models
    cm = probe_cost_model(fam, prompt_ids)
    cost = {lm.name: {n: float(cm.call(lm.name, n, reviews=False)) for n in n_grid} for lm in lms}
    per_round = lambda ns: sum(cost[lm.name][n] * len(grids[lm.name]) for lm in lms for n in ns)  # noqa: E731
    if per_round(n_grid) * (warmup + min_reps) > 0.5 * seconds and len(n_grid) > 3:  # slow calls: fewer points
        n_grid = tuple(n_grid)[::2]
    est = per_round(n_grid)
    cost = {name: {n: c for n, c in costs.items() if n in n_grid} for name, costs in cost.items()}
    points = sum(len(n_grid) * len(grids[lm.name]) for lm in lms)
    reps = int(np.clip(0.5 * seconds / max(est, 1e-9) - warmup, min_reps, 200))
    # the engine's overhead: every method on each prompt, a warm-up round and as many more as the budget allows
    table, accepted = run_acceptance(fam, fam.task)
    gen = lambda n: sum(method_seconds(fam, overhead_methods(fam), n, cm, table, PROBE_START).values())  # noqa: E731
    ov_tokens = int(np.clip(0.5 * seconds / (2 * n_prompts * gen(48) / 48), 8, 48))
    ov_rounds = int(np.clip(0.5 * seconds / (gen(ov_tokens) * n_prompts) - 1, 1, 4))
    eta = est * (warmup + reps) + gen(ov_tokens) * (ov_rounds + 1) * n_prompts
    log.info(f"cost model of {fam.name}: {points} points x {warmup + reps} rounds, then {ov_rounds + 1} rounds of "
             f"every method at {ov_tokens} tokens on {n_prompts} prompt(s): about {eta:.0f} s (each call priced "
             f"from a probe, each method's generation on its plan with {accepted}; the engine's time between calls not "
             f"included)")
    return dict(n_grid=n_grid, reps=reps, points=points, cost=cost, ov_tokens=ov_tokens, ov_rounds=ov_rounds, eta=eta)


def _time_points(lm, prompt_ids: list[int], l_grid, n_grid, rounds: int, warmup: int, clock, done) -> list[list]:
    """[model, n, L, median seconds] of every (n, L) point of one model over ``rounds`` rounds (the first
    ``warmup`` untimed), then [model, 0, 0, seconds of one start]: n = 0 marks the start cost. ``done(n)``
    after each call (a progress bar's tick)."""
    seq = lm.start(prompt_ids)
    t0 = clock()
    lm.start(prompt_ids)
    start_s = clock() - t0
    ctxs = {L: (seq + _filler(prompt_ids, L))[:L] if L >= len(seq) else seq[:L] for L in l_grid}
    drafts = {n: _filler(prompt_ids[::-1], n) for n in n_grid}
    times: dict[tuple[int, int], list[float]] = {}
    for rnd in range(rounds):
        for L, ctx in ctxs.items():
            lm.logits(ctx, 0)              # grow or crop the cache to L (untimed)
            for n in n_grid:
                t0 = clock()
                lm.logits(ctx + drafts[n], n - 1)
                if rnd >= warmup:
                    times.setdefault((n, L), []).append(clock() - t0)
                done(n)
    lm.release()
    return [[lm.name, n, L, float(np.median(ts))] for (n, L), ts in times.items()] + [[lm.name, 0, 0, start_s]]


def _fit_samples(fam, samples: list[list], overhead: dict) -> tuple[dict, dict, dict]:
    """Each model's fitted call cost and start cost from the samples, and the fits' notes (logged)."""
    forward, start, notes = {}, {}, {}
    for lm in fam.models:
        rows = [s for s in samples if s[0] == lm.name and s[1] > 0]
        forward[lm.name] = fit_call([r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows])
        if forward[lm.name].note:
            notes[f"forward:{lm.name}"] = forward[lm.name].note
        start[lm.name] = next(s[3] for s in samples if s[0] == lm.name and s[1] == 0)
    if overhead["note"]:
        notes["overhead"] = overhead["note"]
    for key, note in notes.items():
        log.warning(f"cost model of {fam.name}: {key}: {note}")
    return forward, start, notes


def overhead_methods(fam) -> list[str]:
    """The methods :func:`engine_overhead` runs: every linear method the family can run."""
    return [m for m in METHODS if get(m).runs_on(fam)]


def engine_overhead(fam, prompts: list[list[int]], max_new_tokens: int = 48, rounds: int = 4) -> dict:
    """The engine's own time per call, outside model forwards, from real generations.

    Runs every method ``rounds`` times on each prompt (interleaved, after a warm-up), keeps
    each (method, prompt)'s least disturbed (smallest) time outside forwards (scaled by the
    share of the generation's wall time this process was on the CPU), and fits it as
    ``per_call * model calls + per_row * rows reviewed + per_mag * MaG calls`` (least
    squares, clipped at 0): the review, the bookkeeping and MaG's proposals. Several prompts
    give the fit points whose counts differ; a fit below :data:`csd_lib.price.costmodel.MIN_R2`
    becomes one median per engine call (:func:`csd_lib.price.costmodel.overhead_fit`, its ``note``).
    """
    methods = overhead_methods(fam)
    best: dict[tuple[str, int], tuple[float, list[float]]] = {}
    clock = cost_clock()
    for rnd in range(rounds + 1):
        for i, prompt_ids in enumerate(prompts):
            for m in methods:
                c0 = clock()
                g = generate(fam, prompt_ids, m, max_new_tokens=max_new_tokens)
                busy = (clock() - c0) / g.stats.wall_time  # 1 on an idle machine; < 1 when others preempt us
                if rnd == 0:
                    continue                                           # warm-up
                st = g.stats
                calls = sum(c for n, c in st.calls.items() if n != MAG)
                reviewed = sum(len(e.tokens) + 1 for e in g.events)
                out = (st.wall_time - sum(st.forward_time.values())) * min(1.0, busy)
                if (m, i) not in best or out < best[m, i][0]:
                    best[m, i] = (out, [calls, reviewed, st.calls.get("mag", 0)])
    coef, r2, rel, note = overhead_fit([v[1] for v in best.values()], [v[0] for v in best.values()])
    return {"per_call": coef[0], "per_row": coef[1], "per_mag": coef[2], "r2": r2, "max_rel_err": rel, "note": note}


# -- storing ---------------------------------------------------------------------------


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
    """The stored cost model of a family on this device, or None when none was measured; one that cannot price
    (:func:`csd_lib.price.costmodel.cost_problem`: not finite, a cost below 0, another family's): ValueError."""
    path = Path(path) if path else cost_path(family_name, device)
    if not path.exists():
        return None
    fix = f"re-measure it with `python -m csd_lib costs --family {family_name}`"
    cm = _cost_model(read_text(path, "stored cost model", fix), f"the stored cost model {path}", fix)
    problem = cost_problem(cm, family_name)
    if problem:
        raise ValueError(f"the stored cost model {path} cannot be used: {problem}; {fix}")
    return cm


def _cost_model(text: str, named: str, fix: str) -> CostModel:
    """The CostModel in JSON ``text`` (of the file ``named``); one that is not: ValueError naming it and ``fix``."""
    try:
        return CostModel.from_dict(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{named} is not a cost model ({type(e).__name__}: {e}); {fix}") from None


def read_cost_file(path, family: str | None = None, models=()) -> CostModel:
    """The CostModel in a JSON file written by ``python -m csd_lib costs --out``, checked to price ``family``'s
    ``models`` (:func:`csd_lib.price.costmodel.cost_problem`); missing, malformed or unfit: ValueError."""
    fix = f"write one with `python -m csd_lib costs --family {family or 'FAMILY'} --out {path}`"
    if not Path(path).exists():
        raise ValueError(f"--costs {path}: no such file; {fix}, or pass --costs none")
    text = read_text(path, "--costs file", f"{fix}, or pass --costs none")  # regular, bounded, UTF-8 by line
    cm = _cost_model(text, f"--costs {path}", f"{fix}, or pass --costs none")
    problem = cost_problem(cm, family, models)
    if problem:
        raise ValueError(f"--costs {path} cannot price {family or 'this family'}: {problem}; {fix}")
    return cm


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


def stored_costs_here(fam) -> CostChoice | None:
    """The stored cost model that :func:`costs_for` would use for ``fam`` on this machine (static fingerprint), or
    None: it would measure one."""
    here = fingerprint(environment(fam.target.device))
    return _first_usable(fam.name, here, _candidates(fam.name, here))[0]


def costs_for(fam, reference: dict | None = None, seconds: float = 10.0,
              prompt_ids: list[int] | None = None, min_reps: int = 1, progress: bool = True) -> CostChoice:
    """The cost model that prices ``fam``'s plans on this machine, how its fingerprint compared, its file,
    and why it was chosen (a :class:`CostChoice`).

    ``reference``: this machine's reference steps ({'target', 'drafter', 'drafter_name'} seconds, e.g. a
    run's: :func:`csd_lib.measure.machine.run_fingerprint`; None: compare the static fingerprint only).
    Tried in turn: this machine's own file (:func:`machine_cost_path`), the committed one of its machine class
    (:func:`class_cost_path`), the committed default (:func:`cost_path`).
    A match is used; an unknown one (a file stored before fingerprints, nothing known differs) is used with
    a warning; a mismatch is skipped. None usable: one is measured now (about ``seconds``, with a bar unless not
    ``progress``; ``prompt_ids``, ``min_reps``: :func:`measure_costs`'s) and written (atomically) to
    this machine's own file.
    """
    here = fingerprint(environment(fam.target.device), reference)
    chosen, skipped = _first_usable(fam.name, here, _candidates(fam.name, here))
    if chosen is not None:
        return chosen
    path = machine_cost_path(fam.name, here)
    log.info(f"no stored cost model of {fam.name} matches this machine; measuring one into {path} (its time is "
             f"priced next)")
    cm = measure_costs(fam, prompt_ids, seconds=seconds, min_reps=min_reps, progress=progress)
    save_costs(cm, path)
    why = "; ".join(skipped) or f"no cost model of {fam.name} is stored for this device"
    return CostChoice(cm, match_fingerprints(here, cost_fingerprint(cm)), path,
                      f"measured here into `{_shown(path)}`, because {why}")


def _run_match(family_name: str, run: dict) -> CostChoice | None:
    """The first stored cost model (this machine's own file, the class file, the default) whose fingerprint
    matches the run's, its reference steps included; None when none does (nothing logged: a fallback follows)."""
    for kind, path in _candidates(family_name, run):
        cm = load_costs(family_name, path=path)
        m = None if cm is None else match_fingerprints(run, cost_fingerprint(cm))
        if m is not None and m.verdict == "match":
            return CostChoice(cm, m, path, f"`{_shown(path)}` ({kind}), whose fingerprint matches the run's: "
                                          f"{m.describe()}")
    return None


def costs_for_run(fam, records, seconds: float = 10.0, min_reps: int = 1, progress: bool = True) -> CostChoice:
    """:func:`costs_for` for pricing a benchmark run's ``records`` here. A run of this machine class is priced by
    a stored cost model whose fingerprint matches the run's (reference steps too) when there is one, else by
    this machine's (its static fingerprint: one measured here minutes ago counts, however busy the machine was
    when the run was timed), and ``why`` says so; a run of another class is priced at this machine's costs."""
    run = run_fingerprint(records)
    here = fingerprint(environment(fam.target.device))
    same = run is None or match_fingerprints(here, run).usable
    exact = _run_match(fam.name, run) if run is not None and same else None
    if exact is not None:
        return exact
    choice = costs_for(fam, None, seconds, min_reps=min_reps, progress=progress)
    if same:
        step = ((run or {}).get("reference") or {}).get("target")
        return choice._replace(why=f"{choice.why}. No stored cost model matches the run's own one-token steps "
                                   f"(the target's {1e3 * step:.2f} ms when the run was timed): its calls are priced "
                                   f"at this machine's present costs") if step else choice
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
        cm = read_cost_file(spec, fam.name, [lm.name for lm in fam.models])
        return cm, match_fingerprints(fingerprint(environment(fam.target.device), reference), cost_fingerprint(cm))
    cm, m, _, _ = costs_for(fam, reference, seconds, prompt_ids)
    return cm, m
