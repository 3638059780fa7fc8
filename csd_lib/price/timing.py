"""A per-call cost model: what one forward call of each model costs, measured here.

A speculative step's walltime is the sum of its calls, and a call's price depends on what
it does: the target scoring 17 drafted tokens costs more than a one-token AR step, and a
call deep into a long generation costs more than one near its start. ``measure_costs``
times each model of a family through :meth:`csd_lib.engine.models.LM.logits` (the exact call the
engine makes) for ``n`` tokens scored (1..32) at several cache lengths ``L``, after a
warm-up, and keeps the median of repetitions. ``fit_costs`` fits, per model,

    t(n, L) = a + b n + c L + d n L + e [n = 1]        (seconds, least squares; e: a one-token step)

and reports R² and the largest relative error over the grid (a fit with R² below
:data:`csd_lib.price.costmodel.MIN_R2` is replaced by the median timing, ``CostModel.fit_notes``). The same
file also holds the
engine's own overhead per review (softmax and :func:`csd_lib.engine.review.review` over ``n``
rows) and per MaG proposal, so that :func:`csd_lib.price.ewif.predict_speedup` can price a step
in seconds. The fitted :class:`csd_lib.price.costmodel.CostModel` is stored as ``results/costs-<family>-<device>.json``
together with the environment it was measured in (torch version, threads, CPU model and vector
extensions, and the reference steps of its fingerprint: :mod:`csd_lib.measure.machine`).

    python -m csd_lib costs --family tiny-t5 [--seconds 20] [--threads 1]
"""
from __future__ import annotations

import logging
import time

import numpy as np
import torch

from ..engine.cascade import encode_prompt, generate
from ..engine.plan import METHODS
from ..families.tasks import load_task
from ..measure.bench import seconds_bar
from ..measure.machine import device_name, environment
from .costmodel import CallFit, CostModel, fit_call, overhead_fit
from .estimate import PROBE_START, method_seconds, probe_cost_model, run_acceptance

log = logging.getLogger(__name__)

N_GRID = (1, 2, 4, 8, 16, 32)
OVERHEAD_PROMPTS = 3  # validation prompts the engine-overhead fit runs every method on


# -- measuring -------------------------------------------------------------------------


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
                  l_grid=None, warmup: int = 2, min_reps: int = 10) -> CostModel:
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
    The rounds interleave every point, so a busy spell cannot favour one of them.
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
    bar = seconds_bar(sum(w for ws in weight.values() for w in ws.values()) * (warmup + reps),
                      f"cost model {fam.name}", leave=False)
    clock = cost_clock()
    samples: list[list] = []
    for lm in lms:                     # every point is timed once per round, rounds interleave
        samples += _time_points(lm, prompt_ids, grids[lm.name], n_grid, warmup + reps, warmup, clock,
                                lambda n, w=weight[lm.name]: bar.update(w[n] / len(grids[lm.name])))
    bar.close()
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
    """Price the measurement from a probe of every model (:func:`csd_lib.price.estimate.probe_cost_model`) and size
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
    return [m for m in METHODS if m != "staged" or len(fam.drafters) >= 2]


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
                calls = sum(c for n, c in st.calls.items() if n != "mag")
                reviewed = sum(len(e.tokens) + 1 for e in g.events)
                out = (st.wall_time - sum(st.forward_time.values())) * min(1.0, busy)
                if (m, i) not in best or out < best[m, i][0]:
                    best[m, i] = (out, [calls, reviewed, st.calls.get("mag", 0)])
    coef, r2, rel, note = overhead_fit([v[1] for v in best.values()], [v[0] for v in best.values()])
    return {"per_call": coef[0], "per_row": coef[1], "per_mag": coef[2], "r2": r2, "max_rel_err": rel, "note": note}


# -- storing ---------------------------------------------------------------------------
