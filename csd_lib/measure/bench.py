"""Benchmark harness: methods interleaved per example, resumable JSONL.

Each example is run as a *round*: every method once, back to back, so that a method and
AR meet the same machine load. ``repeats`` reruns each round; :mod:`csd_lib.report.summary` keeps
each method's fastest time per example and gives the aggregate speedup, the median over
examples with a bootstrap 95% interval, and the EWIF prediction from the run's own
acceptance priced with the per-call cost model (:mod:`csd_lib.price.predict`). Each line holds
the generation's :class:`csd_lib.engine.plan.Plan` under ``plan`` (:class:`csd_lib.measure.records.BenchRecord`).
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks, so results files are not guarded there
    fcntl = None

import torch
from tqdm.auto import tqdm

from ..engine.cascade import encode_prompt, generate
from ..engine.inputs import check_room
from ..engine.models import CLOCKS
from ..engine.methods import REFERENCE, find, get, names
from ..engine.plan import (Plan, check_draft_policy, check_lenience, check_mag_lenience, check_max_new_tokens,
                           make_plan)
from ..fileio import check_output_path, write_atomic
from ..logs import seconds_bar
from .machine import environment
from .records import base_method, is_baseline, other_run, read_records, unpack

SETTINGS = ("k", "lenience", "mag_lenience", "drafters", "draft_policy", "confidence")  # what a method runs with, compared when a results file is resumed

log = logging.getLogger(__name__)


# -- running -------------------------------------------------------------------------

def hf_generate(family, prompt_ids: list[int], method: str, max_new_tokens: int) -> dict:
    """HF transformers baselines on the same models: assisted generation or prompt lookup."""
    target = family.target
    ids = torch.tensor([prompt_ids], device=target.device)  # (1, S)
    kw = dict(max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
              pad_token_id=family.tokenizer.pad_token_id, attention_mask=torch.ones_like(ids))
    m = find(method)
    if m is not None and m.assistant:
        if not family.drafters:
            raise ValueError(f"family '{family.name}' has no drafter for {method}")
        kw["assistant_model"] = family.drafters[0].model
    elif m is not None and m.prompt_lookup:
        kw["prompt_lookup_num_tokens"] = m.prompt_lookup
    else:
        raise ValueError(f"unknown HF method {method!r}")
    clock = target.meter.clock  # the clock the engine's methods are timed with (see use_clock)
    t0 = clock()
    kw["streamer"] = commits = _commit_streamer(clock, t0)
    with torch.inference_mode():
        out = target.model.generate(ids, **kw)[0].tolist()
    wall = clock() - t0
    new = out[1:] if target.is_encoder_decoder else out[len(prompt_ids):]
    eos = target.eos_token_id
    if eos in new:
        new = new[:new.index(eos) + 1]
    rec = {"token_ids": new, "stats": {"n_tokens": len(new), "wall_time": wall}}
    if len(commits.times) >= len(new):  # else this transformers streams otherwise: not recorded, never guessed
        rec["commit_times"] = commits.times[:len(new)]
    return rec


def _commit_streamer(clock, t0):
    """A transformers streamer that notes when ``generate`` hands out new tokens (seconds since ``t0``), one time
    per token; the first ``put`` holds the prompt (or T5's decoder start) and is skipped."""
    from transformers.generation.streamers import BaseStreamer

    class CommitTimes(BaseStreamer):
        def __init__(self):
            self.times: list[float] = []
            self.started = False

        def put(self, value) -> None:
            if self.started:
                self.times += [clock() - t0] * int(value.numel())
            self.started = True

        def end(self) -> None:
            pass

    return CommitTimes()


def run_one(family, prompt: str, method: str, max_new_tokens: int, k=None, lenience=None, sd_k=None,
            mag_lenience=None, policy: dict | None = None) -> dict:
    """One (example, method) record: token ids, stats, commit times and tokens drafted per target round (``k``,
    ``lenience``, ``mag_lenience``: csd's, ``sd_k``: sd's draft length, ``policy``: the draft-length policy,
    :func:`_method_args`). The HF baselines' commit times come from a streamer on ``generate``."""
    if is_baseline(method):
        return hf_generate(family, encode_prompt(family, prompt), method, max_new_tokens)
    g = generate(family, prompt, base_method(method), **_method_args(method, k, lenience, sd_k, mag_lenience, policy),
                 max_new_tokens=max_new_tokens)
    n_prompt = len(encode_prompt(family, prompt))
    # cache length at the first decoding step: T5's decoder starts empty, Llama's holds the prompt
    return {"token_ids": g.token_ids, "stats": g.stats.to_dict(), "plan": g.plan.to_dict(),
            "provenance": g.provenance_counts(), "commit_times": g.commit_times, "prompt_tokens": n_prompt,
            "cache_start": 1 if family.target.is_encoder_decoder else n_prompt, "draft_lengths": g.draft_lengths()}


def _method_args(method: str, k, lenience, sd_k, mag_lenience=None, policy: dict | None = None) -> dict:
    """The k, lenience and mag_lenience that ``method`` gets from a bench's settings: csd (and csd-tree) take
    K, lenience and mag_lenience, sd (and tree-sd, as its depth) its draft length, ``sd@K`` K. ``policy``
    ({'draft_policy', 'confidence'}) goes to every method that takes it (:func:`policy_methods`)."""
    extra = policy if policy and policy_methods(policy["draft_policy"], [method]) else {}
    if base_method(method) != method:
        return {"k": int(method.partition("@")[2]), "lenience": None, "mag_lenience": None, **extra}
    m = get(method)
    csd = m.lenient  # the cascade's K (csd, and csd-tree's main chain); SD's k (sd, and tree-sd's draft)
    return {"k": k if csd else sd_k if m.takes_drafter else None, "lenience": lenience if csd else None,
            "mag_lenience": mag_lenience if csd else None, **extra}


def policy_methods(draft_policy: str, methods) -> list[str]:
    """The methods of ``methods`` that run the draft-length policy ``draft_policy`` (the others run K as given:
    ar and the tree methods take only fixed, MaG alone has no probabilities for the confidence stop)."""
    out = []
    for m in methods:
        if is_baseline(m):
            continue
        try:
            check_draft_policy(draft_policy, base_method(m))
        except ValueError:
            continue
        out.append(m)
    return out


def setting_methods(setting: str, methods=None) -> list[str]:
    """The methods of ``methods`` (None: every registered one) that a bench's ``setting`` ('k', 'lenience',
    'mag_lenience' or 'sd_k') reaches (:func:`_method_args`: csd and csd-tree take K, sd and tree-sd SD's draft
    length)."""
    mark = object()
    unset = dict(k=None, lenience=None, sd_k=None, mag_lenience=None)
    return [m for m in (names() if methods is None else methods) if any(v is mark for v in _method_args(m, **{**unset, setting: mark}).values())]


def _settings(plan: Plan) -> dict:
    return {"k": [list(row) for row in plan.k], "lenience": plan.lenience, "mag_lenience": plan.mag_lenience,
            "drafters": list(plan.drafters), **({"tree": list(plan.tree)} if plan.tree else {}),
            **({"draft_policy": list(plan.draft_policy)} if set(plan.draft_policy) - {"fixed"} else {}),
            **({"confidence": plan.confidence} if "confidence" in plan.draft_policy else {})}


def task_k(family, examples, k=None, sd_k=None) -> tuple:
    """(K, SD's k) that a bench of ``examples`` runs with: the given ones, else the family's for the
    examples' task (the preset's ``by_task``: ``Family.k_for``, ``Family.sd_k_for``)."""
    task = examples[0].task if len(examples) else None
    return (family.k_for(task) if k is None else k), (family.sd_k_for(task) if sd_k is None else sd_k)


def method_plan(family, method: str, k=None, lenience=None, sd_k=None, mag_lenience=None,
                policy: dict | None = None) -> Plan | None:
    """The plan ``method`` runs in this bench (None for the HF baselines); a bad K or lenience is a ValueError."""
    if is_baseline(method):
        return None
    return make_plan(family, base_method(method), **_method_args(method, k, lenience, sd_k, mag_lenience, policy))


def method_settings(family, method: str, k=None, lenience=None, sd_k=None, mag_lenience=None,
                    policy: dict | None = None) -> dict | None:
    """What ``method`` runs with in this bench ({'k', 'lenience', 'mag_lenience', 'drafters'} of its plan);
    None for the HF baselines. A bad K or lenience is a ValueError here, before any run."""
    plan = method_plan(family, method, k, lenience, sd_k, mag_lenience, policy)
    return None if plan is None else _settings(plan)


def record_settings(rec: dict) -> dict | None:
    """The settings a record was run with (its ``plan``), as :func:`method_settings`."""
    plan = rec.get("plan")
    return None if plan is None else _settings(Plan.from_dict({"method": base_method(rec["method"]), **plan}))


def resume_problem(records: list[dict], family, examples, methods, max_new_tokens: int, k=None, lenience=None,
                   sd_k=None, split: str = "test", seed: int = 0, mag_lenience=None,
                   clock: str = "wall", policy: dict | None = None) -> str | None:
    """The first way a results file's records differ from the run asked for (``line N: ...``), or None.

    Compared: family, task, split (a missing one is 'test'), seed (missing: 0), max_new_tokens, the
    clock (missing: 'wall'; times read from two clocks do not compare), the example's source, and each
    method's settings (:func:`method_settings`, with the task's K: :func:`task_k`). Error lines are not
    compared: they are run again.
    """
    k, sd_k = task_k(family, examples, k, sd_k)
    want = {m: method_settings(family, m, k, lenience, sd_k, mag_lenience, policy) for m in dict.fromkeys(methods)}
    problem = other_run(records, family=family.name)
    if problem:
        return problem
    for i, r in enumerate(records, 1):
        if "error" in r:
            continue
        ex = examples[r["example"]] if r["example"] < len(examples) else None
        pairs = [("split", r.get("split", "test"), split),
                 ("seed", r.get("seed", 0), seed), ("max_new_tokens", r.get("max_new_tokens"), max_new_tokens),
                 ("clock", r.get("clock", "wall"), clock)]
        if ex is not None:
            pairs += [("task", r.get("task"), ex.task),
                      (f"example {r['example']}'s source", r.get("source"), ex.source)]
        if r["method"] in want and not is_baseline(r["method"]):
            have, now = record_settings(r) or {}, want[r["method"]]
            pairs += [(f"{r['method']}'s {key}", have.get(key), now.get(key)) for key in SETTINGS]
        for what, old, new in pairs:
            if old != new:
                return f"line {i}: {what} is {old!r} there, {new!r} now"
    return None


def repair_results(path: Path, records: list[dict]) -> None:
    """Rewrite the file with only ``records`` (atomic): torn and error lines go, so appends start clean."""
    if not path.exists():
        return
    good = "".join(json.dumps(r) + "\n" for r in records)
    if path.read_text(encoding="utf-8") != good:
        write_atomic(path, good)


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a bench: ``args`` = (results written by this run, results it had to write)."""


@contextlib.contextmanager
def held_interrupt():
    """SIGINT waits until the block ends (in the main thread, where the OS can hold it back)."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


_HELD: set[str] = set()  # results files this process holds the lock of


@contextlib.contextmanager
def results_lock(out: Path):
    """One writer per results file: an advisory lock (``fcntl.flock``) on ``OUT.lock``, which holds the
    writer's pid, for as long as the block runs; the file goes when the block ends. A file another
    process holds is a ValueError naming that process; inside the block the same file may be locked again.
    """
    key = os.path.realpath(out)
    if key in _HELD:
        yield
        return
    if fcntl is None:
        log.warning("this platform has no advisory file locks: nothing stops a second bench on %s", out)
        yield
        return
    lock = Path(key + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise ValueError(f"{out} is being written by another bench (pid {pid}, lock {lock}); wait for it to "
                             f"finish, or give another --out") from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed it as we opened it: take a fresh one
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    _HELD.add(key)
    try:
        yield
    finally:
        _HELD.discard(key)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)


def load_average() -> float | None:
    """The machine's 1-minute load average (how busy the CPUs were), where the OS reports one."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def _key(r: dict) -> tuple[int, str, int]:
    return r["example"], r["method"], r.get("rep", 0)


def _first_of_each(records: list[dict]) -> tuple[list[dict], int]:
    """(the first record of each (example, method, repeat), how many later duplicates were dropped)."""
    seen, out = set(), []
    for r in records:
        if _key(r) not in seen:
            seen.add(_key(r))
            out.append(r)
    return out, len(records) - len(out)


def check_clock(clock: str, device=None) -> str:
    """``clock`` if a bench can time with it here: 'wall', or 'cpu' (this process's CPU time) with one torch
    thread on a CPU device; else a ValueError. CPU time sums every thread's work and misses a GPU's."""
    if clock not in CLOCKS:
        raise ValueError(f"unknown clock {clock!r}; use {' or '.join(CLOCKS)}")
    if clock == "cpu" and torch.get_num_threads() != 1:
        raise ValueError(f"clock 'cpu' needs one torch thread (CPU time adds up the work of all "
                         f"{torch.get_num_threads()}); pass --threads 1 (torch.set_num_threads(1)) or use clock 'wall'")
    if clock == "cpu" and device is not None and torch.device(device).type != "cpu":
        raise ValueError(f"clock 'cpu' times work on the CPU only; the models are on {device}: use clock 'wall'")
    return clock


@contextlib.contextmanager
def use_clock(family, clock: str):
    """Time every model of ``family`` (forwards and whole generations) with ``clock`` ('wall' or 'cpu') inside."""
    lms = family.models
    before = [lm.meter.clock for lm in lms]
    for lm in lms:
        lm.meter.clock = CLOCKS[clock]
    try:
        yield
    finally:
        for lm, c in zip(lms, before):
            lm.meter.clock = c


def duration(seconds: float) -> str:
    """``seconds`` for a person: 'N s' under two minutes, else minutes, else hours."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"


def _announce(family, todo, per_run: dict[str, float], warm: list[float], how: str) -> None:
    """Log what the runs ``todo`` (and a warm-up of ``warm`` seconds) will take, from ``per_run`` seconds a method:
    a warning for a hub family on the CPU (one with a load probe), else a note."""
    total = sum(per_run[m] for _, m, _ in todo) + sum(warm)
    ms = dict.fromkeys(m for _, m, _ in todo)
    say = log.warning if family.cpu_probe is not None else log.info
    say(f"bench {family.name}: {len(todo)} runs{' and a warm-up' if warm else ''} take about {duration(total)} here "
        f"({how}; one run: {', '.join(f'{m} {per_run[m]:.3g} s' for m in ms)})")


def _warm_up(family, prompt: str, methods: list[str], n: int, settings: dict, progress: bool,
             predicted: dict | None) -> dict[str, float]:
    """Run each of ``methods`` (a method may repeat) on ``prompt`` for ``n`` tokens, untimed by the bench:
    {method: its last run's wall seconds} for those that ran."""
    took = {}
    bar = seconds_bar(sum(predicted[m] for m in methods), f"warm-up {family.name}", not progress or not methods,
                      leave=False) if predicted else tqdm(methods, desc=f"warm-up {family.name}", leave=False,
                                                          disable=not progress or not methods)
    for m in methods:
        t0 = time.perf_counter()
        try:
            run_one(family, prompt, m, n, **settings)
            took[m] = time.perf_counter() - t0
        except Exception:  # noqa: BLE001 - the timed run records this method's error
            pass
        bar.update(predicted[m] if predicted else 1)
    bar.close()
    return took


def run_bench(family, examples, methods, out: Path, max_new_tokens: int = 128, k=None, lenience=None,
              warmup: int = 1, progress: bool = True, stop_after: int | None = None,
              repeats: int = 1, sd_k=None, split: str = "test", seed: int = 0, mag_lenience=None,
              clock: str = "wall", predicted: dict[str, float] | None = None,
              policy: dict | None = None) -> list[dict]:
    """Run every method on every example in interleaved rounds, one JSON line per (example, method, rep).

    Round ``(i, rep)`` runs every method on example ``i`` back to back (the order rotates
    with ``rep``). Existing lines are kept and skipped, so an interrupted run resumes where
    it stopped and a larger ``repeats`` adds only the missing rounds; a file written by another
    run (see :func:`resume_problem`) is a ValueError naming the difference. A method that raises
    on an example is written as an error line (``error``: the message) and the run goes on; error
    lines are run again on resume (dropped from the file first, atomically). Each line records
    ``split`` and ``seed`` (which examples: pass those ``examples`` came from), the ``clock`` its times
    were read from (:func:`check_clock`: 'wall', or 'cpu' with one torch thread) and the load average.
    ``mag_lenience`` (csd only) is passed to csd's plan. With no ``k`` (``sd_k``), csd (sd) runs the
    family's K for the examples' task (:func:`task_k`).
    ``policy`` ({'draft_policy', 'confidence'}; None: K as given) goes to the methods that take it
    (:func:`policy_methods`). ``stop_after`` ends the run after that many new lines (used to test resumption).
    The whole run holds the file's lock (:func:`results_lock`: a second writer is refused); a resumed
    file keeps the first of duplicate (example, method, repeat) lines. Ctrl-C raises
    :class:`BenchInterrupted` (a KeyboardInterrupt) after the last complete line.
    ``predicted``: seconds of one run of each method at ``max_new_tokens``, priced before the run
    (:func:`csd_lib.price.predict.bench_prices`); without it each method's warm-up time, scaled to
    ``max_new_tokens``, stands in. The run's time is logged from it before the (timed) work starts, as a
    warning for a hub family on the CPU, and the progress bar weighs each run by it.
    """
    bad = [m for m in methods if find(base_method(m)) is None]
    if bad:
        raise ValueError(f"unknown method(s) {bad}; use {', '.join(names())}, or sd@K (SD at draft length K)")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    check_max_new_tokens(max_new_tokens)  # bad settings fail here, not as an error line per example
    if lenience is not None:
        check_lenience(lenience)
    if mag_lenience is not None:
        check_mag_lenience(mag_lenience)
    check_clock(clock, family.target.device)
    if REFERENCE not in methods:
        methods = [REFERENCE, *methods]  # the reference for identity and speedups
    k, sd_k = task_k(family, examples, k, sd_k)
    check_examples(family, examples, max_new_tokens)
    out = Path(out)
    check_output_path(out, "out")  # an existing folder, device or FIFO is refused; a symlink is written through
    with results_lock(out):
        return _run_locked(family, examples, methods, out, max_new_tokens, k, lenience, warmup, progress, stop_after,
                           repeats, sd_k, split, seed, mag_lenience, clock, predicted, policy)


def check_examples(family, examples, max_new_tokens: int) -> None:
    """The limit that a run's settings put on every example, checked on each before the first runs (a prompt
    plus ``max_new_tokens`` beyond the target's positions), so that one bad setting is one error, not an
    error line per example; a prompt that is bad by itself stays that example's error line."""
    for i, ex in enumerate(examples):
        try:
            ids = encode_prompt(family, ex.prompt)
        except ValueError:  # the prompt alone: its run writes the error line
            continue
        try:
            check_room(family.target, ids, max_new_tokens)
        except ValueError as e:
            raise ValueError(f"example {i} ({ex.source}): {e}") from None


# long: the resumable run loop reads as one: resume check, warm-up, one line written per run
def _run_locked(family, examples, methods, out, max_new_tokens, k, lenience, warmup, progress, stop_after,
                repeats, sd_k, split, seed, mag_lenience, clock, predicted, policy=None) -> list[dict]:
    """:func:`run_bench` once it holds the results file's lock."""
    if unpack(out):
        log.info(f"bench: {out} written out from its packed copy {out.name}.gz, to resume")
    records = read_records(out)
    problem = resume_problem(records, family, examples, methods, max_new_tokens, k, lenience, sd_k, split, seed,
                             mag_lenience, clock, policy)
    if problem:
        raise ValueError(f"{out} holds another run's results ({problem}); resume it with the same settings, "
                         f"or write to a new file")
    records, dups = _first_of_each([r for r in records if "error" not in r])  # failed lines are run again
    if dups:
        log.warning(f"bench: {out} held {dups} duplicate (example, method, repeat) line(s); kept the first of each")
    repair_results(out, records)
    done = {_key(r) for r in records}
    todo = [(i, m, rep) for i in range(len(examples)) for rep in range(repeats)
            for m in methods[rep % len(methods):] + methods[:rep % len(methods)] if (i, m, rep) not in done]
    if not todo:
        return records
    if done:
        log.info(f"bench: {len(done)} results kept from {out}; {len(todo)} to run")
    env = environment()
    settings = dict(k=k, lenience=lenience, sd_k=sd_k, mag_lenience=mag_lenience, policy=policy)
    out.parent.mkdir(parents=True, exist_ok=True)
    with use_clock(family, clock), open(out, "a", encoding="utf-8") as f:
        written = 0
        try:
            warm = [m for _ in range(warmup) for m in methods]  # first calls of a new shape are slow: never time them
            warm_n = min(32, max_new_tokens)
            if predicted:
                _announce(family, todo, predicted, [predicted[m] * warm_n / max_new_tokens for m in warm],
                          "priced before the run")
            took = _warm_up(family, examples[0].prompt, warm, warm_n, settings, progress, predicted)
            cost = predicted or ({m: t * max_new_tokens / warm_n for m, t in took.items()}
                                 if set(took) >= {m for _, m, _ in todo} else None)
            if cost and not predicted:
                _announce(family, todo, cost, [], f"each method's warm-up time, scaled to {max_new_tokens} tokens")
            bar = seconds_bar(sum(cost[m] for _, m, _ in todo), f"bench {family.name}", not progress) if cost \
                else tqdm(total=len(todo), desc=f"bench {family.name}", disable=not progress)
            for i, m, rep in todo:
                ex = examples[i]
                try:
                    rec = run_one(family, ex.prompt, m, max_new_tokens, **settings)
                except Exception as e:  # noqa: BLE001 - one failing example must not end a long run
                    rec = {"error": f"{type(e).__name__}: {e}"}
                rec.update(example=i, method=m, rep=rep, family=family.name, task=ex.task, split=split, seed=seed,
                           source=ex.source, max_new_tokens=max_new_tokens, env=env, clock=clock, load1=load_average())
                with held_interrupt():  # a line is written whole and counted, then Ctrl-C lands
                    f.write(json.dumps(rec) + "\n")
                    f.flush()
                    os.fsync(f.fileno())
                    records.append(rec)
                    written += 1
                bar.update(cost[m] if cost else 1)
                if stop_after is not None and written >= stop_after:
                    break
            bar.close()
        except KeyboardInterrupt:
            raise BenchInterrupted(written, len(todo)) from None
    return records


# -- cost model for the summary ------------------------------------------------------------


