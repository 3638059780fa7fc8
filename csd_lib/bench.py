"""Benchmark harness: methods interleaved per example, resumable JSONL, honest summaries.

Each example is run as a *round*: every method once, back to back, so that a method and
AR meet the same machine load. ``repeats`` reruns each round and the summary keeps each
method's fastest time per example. The summary gives the aggregate speedup (total AR time
over total method time), the median over examples of the per-example ratio with a
bootstrap 95% interval (robust to one slow example), and the EWIF prediction from the
run's own acceptance priced with the per-call cost model (:mod:`csd_lib.costs`).
"""
from __future__ import annotations

import json
import logging
import math
import os
import platform
import time
from pathlib import Path

import torch

from .cascade import METHODS, check_lenience, check_max_new_tokens, encode_prompt, generate, method_plan
from .fileio import write_atomic
from .trace import previous_work_costs

HF_METHODS = ("hf-assisted", "hf-pld")
ALL_METHODS = METHODS + HF_METHODS
SETTINGS = ("k", "lenience", "drafters")  # what a method runs with, as a record's ``config`` holds it

log = logging.getLogger(__name__)


# -- running -------------------------------------------------------------------------

def hf_generate(family, prompt_ids: list[int], method: str, max_new_tokens: int) -> dict:
    """HF transformers baselines on the same models: assisted generation or prompt lookup."""
    target = family.target
    ids = torch.tensor([prompt_ids], device=target.device)  # (1, S)
    kw = dict(max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
              pad_token_id=family.tokenizer.pad_token_id, attention_mask=torch.ones_like(ids))
    if method == "hf-assisted":
        if not family.drafters:
            raise ValueError(f"family '{family.name}' has no drafter for hf-assisted")
        kw["assistant_model"] = family.drafters[0].model
    elif method == "hf-pld":
        kw["prompt_lookup_num_tokens"] = 10
    else:
        raise ValueError(f"unknown HF method {method!r}")
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = target.model.generate(ids, **kw)[0].tolist()
    wall = time.perf_counter() - t0
    new = out[1:] if target.is_encoder_decoder else out[len(prompt_ids):]
    eos = target.eos_token_id
    if eos in new:
        new = new[:new.index(eos) + 1]
    return {"token_ids": new, "stats": {"n_tokens": len(new), "wall_time": wall}}


def run_one(family, prompt: str, method: str, max_new_tokens: int, k=None, lenience=None, sd_k=None) -> dict:
    """One (example, method) record: token ids and stats (``k``: csd's K, ``sd_k``: sd's draft length)."""
    if method in HF_METHODS:
        return hf_generate(family, encode_prompt(family, prompt), method, max_new_tokens)
    g = generate(family, prompt, method, *_method_args(method, k, lenience, sd_k), max_new_tokens=max_new_tokens)
    n_prompt = len(encode_prompt(family, prompt))
    # cache length at the first decoding step: T5's decoder starts empty, Llama's holds the prompt
    return {"token_ids": g.token_ids, "stats": g.stats.to_dict(), "config": g.config,
            "provenance": g.provenance_counts(), "prompt_tokens": n_prompt,
            "cache_start": 1 if family.target.is_encoder_decoder else n_prompt}


def _method_args(method: str, k, lenience, sd_k) -> tuple:
    """(k, lenience) that ``method`` gets from a bench's settings: csd takes K and lenience, sd its draft length."""
    return (k if method == "csd" else sd_k if method == "sd" else None), (lenience if method == "csd" else None)


def method_settings(family, method: str, k=None, lenience=None, sd_k=None) -> dict | None:
    """What ``method`` runs with in this bench ({'k', 'lenience', 'drafters'}), as its records' config
    holds it; None for the HF baselines. A bad K or lenience is a ValueError here, before any run."""
    if method in HF_METHODS:
        return None
    drafters, kk, lam = method_plan(family, method, *_method_args(method, k, lenience, sd_k))
    return {"k": kk, "lenience": lam, "drafters": [d.name for d in drafters]}


def record_settings(rec: dict) -> dict | None:
    """The settings a record was run with (from its ``config``), comparable to :func:`method_settings`."""
    cfg = rec.get("config")
    return None if cfg is None else {key: cfg.get(key) for key in SETTINGS}


def resume_problem(records: list[dict], family, examples, methods, max_new_tokens: int, k=None, lenience=None,
                   sd_k=None, split: str = "test", seed: int = 0) -> str | None:
    """The first way a results file's records differ from the run asked for (``line N: ...``), or None.

    Compared: family, task, split (a missing one is 'test'), seed (missing: 0), max_new_tokens, the
    example's source, and each method's settings (:func:`method_settings`). Error lines are not
    compared: they are run again.
    """
    want = {m: method_settings(family, m, k, lenience, sd_k) for m in dict.fromkeys(methods)}
    for i, r in enumerate(records, 1):
        if "error" in r:
            continue
        ex = examples[r["example"]] if r["example"] < len(examples) else None
        pairs = [("family", r.get("family"), family.name), ("split", r.get("split", "test"), split),
                 ("seed", r.get("seed", 0), seed), ("max_new_tokens", r.get("max_new_tokens"), max_new_tokens)]
        if ex is not None:
            pairs += [("task", r.get("task"), ex.task),
                      (f"example {r['example']}'s source", r.get("source"), ex.source)]
        if r["method"] in want and r["method"] not in HF_METHODS:
            have, now = record_settings(r) or {}, want[r["method"]]
            pairs += [(f"{r['method']}'s {key}", have.get(key), now[key]) for key in SETTINGS]
        for what, old, new in pairs:
            if old != new:
                return f"line {i}: {what} is {old!r} there, {new!r} now"
    return None


def environment() -> dict:
    """What the numbers were measured on."""
    import transformers
    dev = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    return {"device": dev, "torch": torch.__version__, "transformers": transformers.__version__,
            "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "machine": platform.machine()}


def read_records(path: Path) -> list[dict]:
    """Complete JSON lines of a results file; a torn last line (crash mid-write) is dropped.

    Any other line that is not a record is a ValueError naming the file, the line and the fix.
    """
    path = Path(path)
    if not path.exists():
        return []
    fix = "delete that line to re-run its example, or pass a new --out"
    data = path.read_bytes()
    out = []
    for i, raw in enumerate(data.splitlines(keepends=True), 1):
        if not raw.endswith(b"\n"):
            break  # torn write
        try:
            rec = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise ValueError(f"{path}:{i} is not UTF-8 text; {fix}") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{i} is not a JSON record ({e.msg}); {fix}") from None
        if not isinstance(rec, dict) or "example" not in rec or "method" not in rec:
            raise ValueError(f"{path}:{i} is not a results record (no 'example' and 'method'); {fix}")
        for key, kind, ok in (("example", "an integer >= 0", _index(rec["example"])),
                              ("rep", "an integer >= 0", _index(rec.get("rep", 0))),
                              ("method", "a method name", rec["method"] in ALL_METHODS)):
            if not ok:
                raise ValueError(f"{path}:{i} has {key} {rec.get(key)!r}, not {kind}; {fix}")
        if "error" not in rec and not isinstance(rec.get("stats"), dict):
            raise ValueError(f"{path}:{i} has neither 'stats' nor 'error'; {fix}")
        out.append(rec)
    return out


def _index(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _repair(path: Path, records: list[dict]) -> None:
    """Rewrite the file with only ``records`` (atomic): torn and error lines go, so appends start clean."""
    if not path.exists():
        return
    good = "".join(json.dumps(r) + "\n" for r in records)
    if path.read_text(encoding="utf-8") != good:
        write_atomic(path, good)


def _load1() -> float | None:
    """The machine's 1-minute load average (how busy the CPUs were), where the OS reports one."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def _key(r: dict) -> tuple[int, str, int]:
    return r["example"], r["method"], r.get("rep", 0)


def run_bench(family, examples, methods, out: Path, max_new_tokens: int = 128, k=None, lenience=None,
              warmup: int = 1, progress: bool = True, stop_after: int | None = None,
              repeats: int = 1, sd_k=None, split: str = "test", seed: int = 0) -> list[dict]:
    """Run every method on every example in interleaved rounds, one JSON line per (example, method, rep).

    Round ``(i, rep)`` runs every method on example ``i`` back to back (the order rotates
    with ``rep``). Existing lines are kept and skipped, so an interrupted run resumes where
    it stopped and a larger ``repeats`` adds only the missing rounds; a file written by another
    run (see :func:`resume_problem`) is a ValueError naming the difference. A method that raises
    on an example is written as an error line (``error``: the message) and the run goes on; error
    lines are run again on resume (dropped from the file first, atomically). Each line records
    ``split`` and ``seed`` (which examples: pass those ``examples`` came from).
    ``stop_after`` ends the run after that many new lines (used to test resumption).
    """
    from tqdm.auto import tqdm
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad:
        raise ValueError(f"unknown method(s) {bad}; use {', '.join(ALL_METHODS)}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    check_max_new_tokens(max_new_tokens)  # bad settings fail here, not as an error line per example
    if lenience is not None:
        check_lenience(lenience)
    if "ar" not in methods:
        methods = ["ar", *methods]  # the reference for identity and speedups
    out = Path(out)
    records = read_records(out)
    problem = resume_problem(records, family, examples, methods, max_new_tokens, k, lenience, sd_k, split, seed)
    if problem:
        raise ValueError(f"{out} holds another run's results ({problem}); resume it with the same settings, "
                         f"or write to a new file")
    records = [r for r in records if "error" not in r]  # failed lines are run again
    _repair(out, records)
    done = {_key(r) for r in records}
    todo = [(i, m, rep) for i in range(len(examples)) for rep in range(repeats)
            for m in methods[rep % len(methods):] + methods[:rep % len(methods)] if (i, m, rep) not in done]
    if not todo:
        return records
    if done:
        log.info(f"bench: {len(done)} results kept from {out}; {len(todo)} to run")
    env = environment()
    warm = [m for _ in range(warmup) for m in methods]  # first calls of a new shape are slow: never time them
    for m in tqdm(warm, desc=f"warm-up {family.name}", disable=not progress or not warm, leave=False):
        try:
            run_one(family, examples[0].prompt, m, min(32, max_new_tokens), k, lenience, sd_k)
        except Exception:  # noqa: BLE001 - the timed run records this method's error
            pass
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(out, "a", encoding="utf-8") as f:
        for i, m, rep in tqdm(todo, desc=f"bench {family.name}", disable=not progress):
            ex = examples[i]
            try:
                rec = run_one(family, ex.prompt, m, max_new_tokens, k, lenience, sd_k)
            except Exception as e:  # noqa: BLE001 - one failing example must not end a long run
                rec = {"error": f"{type(e).__name__}: {e}"}
            rec.update(example=i, method=m, rep=rep, family=family.name, task=ex.task, split=split, seed=seed,
                       source=ex.source, max_new_tokens=max_new_tokens, env=env, load1=_load1())
            f.write(json.dumps(rec) + "\n")
            f.flush()
            os.fsync(f.fileno())
            records.append(rec)
            written += 1
            if stop_after is not None and written >= stop_after:
                break
    return records


# -- summarising -----------------------------------------------------------------------

def fastest(records: list[dict]) -> dict[str, dict[int, dict]]:
    """{method: {example: the fastest successful record over repeats}}; error lines are skipped."""
    by: dict[str, dict[int, dict]] = {}
    for r in records:
        if "error" in r:
            continue
        cur = by.setdefault(r["method"], {}).get(r["example"])
        if cur is None or r["stats"]["wall_time"] < cur["stats"]["wall_time"]:
            by[r["method"]][r["example"]] = r
    return by


def ratios(best: dict[str, dict[int, dict]], method: str) -> dict[int, float]:
    """Per example: AR's walltime over the method's, both the fastest of their repeats."""
    ar, mine = best.get("ar", {}), best.get(method, {})
    return {i: ar[i]["stats"]["wall_time"] / mine[i]["stats"]["wall_time"]
            for i in sorted(mine) if i in ar and mine[i]["stats"]["wall_time"] > 0}


def bootstrap_median_ci(values, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> list[float]:
    """Percentile bootstrap interval of the median over examples (fixed seed: reproducible)."""
    import numpy as np
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        return [float("nan"), float("nan")]
    rng = np.random.default_rng(seed)
    meds = np.median(v[rng.integers(0, v.size, size=(n_boot, v.size))], axis=1)
    lo, hi = np.quantile(meds, [(1 - level) / 2, (1 + level) / 2])
    return [float(lo), float(hi)]


def summarize(records: list[dict], cost_model=None, n_sim: int = 4000) -> dict:
    """Per-method summary computed from the raw lines only (fastest repeat per example).

    With a cost model (:class:`csd_lib.costs.CostModel`), ``speedup_walltime_predicted``
    is the EWIF prediction from this run's own per-position acceptance (see
    :func:`predict_walltime`); without one it is NaN.
    """
    import numpy as np
    best = fastest(records)
    errors: dict[str, int] = {}
    reps: dict[str, int] = {}
    for r in records:
        if "error" in r:
            errors[r["method"]] = errors.get(r["method"], 0) + 1
        reps[r["method"]] = max(reps.get(r["method"], 0), r.get("rep", 0) + 1)
    ar = best.get("ar", {})
    out = {}
    for m in dict.fromkeys([r["method"] for r in records]):
        recs = best.get(m, {})
        common = [i for i in recs if i in ar]
        toks = sum(recs[i]["stats"]["n_tokens"] for i in recs)
        wall = sum(recs[i]["stats"]["wall_time"] for i in recs)
        ar_wall = sum(ar[i]["stats"]["wall_time"] for i in common)
        m_wall = sum(recs[i]["stats"]["wall_time"] for i in common)
        per = list(ratios(best, m).values())
        s = {"n": len(recs), "repeats": reps.get(m, 0), "errors": errors.get(m, 0), "tokens": toks,
             "tokens_per_s": toks / wall if wall else float("nan"),
             "speedup_walltime": ar_wall / m_wall if m_wall else float("nan"),
             "speedup_walltime_median": float(np.median(per)) if per else float("nan"),
             "speedup_walltime_ci95": bootstrap_median_ci(per),
             "speedup_walltime_predicted": float("nan"),
             "mismatches": sum(recs[i]["token_ids"] != ar[i]["token_ids"] for i in common)}
        st = [recs[i]["stats"] for i in recs]
        if st and "calls" in st[0]:
            calls: dict[str, int] = {}
            for x in st:
                for name, c in x["calls"].items():
                    calls[name] = calls.get(name, 0) + c
            params = st[0]["params"]
            target_calls = calls.get("target", 0)
            fwd = sum(sum(x["forward_time"].values()) for x in st)
            ms = {n: params[n] / params["target"] for n in params}
            first = next(iter(recs.values()))
            pw = st[0].get("previous_work_costs") or previous_work_costs(first.get("family", ""), params).costs
            s.update(
                calls_per_model=calls,
                mean_tokens_per_target_call=toks / target_calls if target_calls else float("nan"),
                speedup_swi_ms=_swi(toks, calls, ms), speedup_swi_pw=_swi(toks, calls, pw),
                outside_share=(wall - fwd) / wall if wall else float("nan"),
                forward_time_per_call={n: sum(x["forward_time"].get(n, 0) for x in st) / c
                                       for n, c in calls.items() if n != "mag" and c})
            if cost_model is not None:
                s["speedup_walltime_predicted"] = predict_walltime(list(recs.values()), cost_model, n_sim)["speedup"]
        else:
            s.update(calls_per_model=None, mean_tokens_per_target_call=float("nan"),
                     speedup_swi_ms=float("nan"), speedup_swi_pw=float("nan"), outside_share=float("nan"))
        out[m] = s
    return out


def mag_share(records: list[dict], method: str, kinds=("mag-match", "mag-bigram")) -> float:
    """Share of a method's output tokens that MaG proposed (of the given kinds) and the target kept."""
    rs = [r for r in records if r["method"] == method]
    total = sum(r["stats"]["n_tokens"] for r in rs)
    kept = sum(r["provenance"].get(k, 0) for r in rs for k in kinds)
    return kept / total if total else float("nan")


def _swi(tokens: int, calls: dict, costs: dict) -> float:
    spent = sum(c * costs.get(n, 0.0) for n, c in calls.items())
    return tokens * costs["target"] / spent if spent else float("nan")


SUMMARY_KEYS = ("tokens_per_s", "speedup_walltime", "speedup_swi_ms", "speedup_swi_pw",
                "mean_tokens_per_target_call", "mismatches", "n", "repeats", "errors",
                "speedup_walltime_median", "speedup_walltime_ci95", "speedup_walltime_predicted")


def _nan_none(v):
    if isinstance(v, list):
        return [_nan_none(x) for x in v]
    return None if isinstance(v, float) and math.isnan(v) else v


def summary_json(summary: dict) -> dict:
    """The fixed-schema summary written by --summary-json (NaN written as null)."""
    return {m: {k: _nan_none(s[k]) for k in SUMMARY_KEYS} for m, s in summary.items()}


def format_table(summary: dict) -> str:
    """A plain-text table of the summary, one row per method."""
    head = f"{'method':<12}{'n':>4}{'tok/s':>9}{'speedup':>9}{'median':>8}{'CI95':>12}{'pred':>7}" \
           f"{'SWI-MS':>8}{'SWI-PW':>8}{'tok/call':>9}{'outside':>9}{'mismatch':>9}{'errors':>7}"
    rows = [head, "-" * len(head)]
    order = [m for m in ALL_METHODS if m in summary]
    for m in order:
        s = summary[m]
        f = lambda v, w, p: f"{v:>{w}.{p}f}" if isinstance(v, (int, float)) and not math.isnan(v) else f"{'-':>{w}}"  # noqa: E731
        lo, hi = s["speedup_walltime_ci95"]
        ci = f"{lo:.2f}-{hi:.2f}" if not (math.isnan(lo) or math.isnan(hi)) else "-"
        rows.append(f"{m:<12}{s['n']:>4}{f(s['tokens_per_s'], 9, 1)}{f(s['speedup_walltime'], 9, 2)}"
                    f"{f(s['speedup_walltime_median'], 8, 2)}{ci:>12}{f(s['speedup_walltime_predicted'], 7, 2)}"
                    f"{f(s['speedup_swi_ms'], 8, 2)}{f(s['speedup_swi_pw'], 8, 2)}"
                    f"{f(s['mean_tokens_per_target_call'], 9, 2)}"
                    f"{f(100 * s['outside_share'] if not math.isnan(s['outside_share']) else float('nan'), 8, 1)}"
                    f"{'%' if not math.isnan(s['outside_share']) else ' '}{s['mismatches']:>9}{s['errors']:>7}")
    return "\n".join(rows)


# -- theory against measurement -------------------------------------------------------------

def ewif_config(cfg: dict) -> dict:
    """A generation's config as a :func:`csd_lib.ewif.predict_speedup` config."""
    if cfg["method"] == "ar":
        return {"method": "ar"}
    drafters = list(cfg["drafters"])
    return {"method": "csd", "drafters": drafters, "k": cfg["k"], "lenience": cfg["lenience"],
            "bottom_block": 10 if drafters[-1] == "mag" else 1}


def read_cost_file(path):
    """The CostModel in a JSON file written by ``python -m csd_lib.costs --out``; missing or malformed: ValueError."""
    from .costs import CostModel
    fix = f"write one with `python -m csd_lib.costs --family FAMILY --out {path}`, or pass --costs none"
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
    from .costs import device_name, load_costs, measure_costs
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


def predict_walltime(recs: list[dict], cost_model, n_sim: int = 4000, seed: int = 0, config=None) -> dict:
    """EWIF walltime speedup of one method from its own records, priced by a cost model.

    Acceptance: this run's per-position rates per (reviewer, proposer); ``config`` (default:
    the records' own) prices another K on the same acceptance. Cost: a call scoring
    ``n`` tokens at the run's mean cache length ``L`` (start + half the mean output),
    plus each model's start per generation (T5: the encoder pass; Llama: the prompt
    prefill, t(prompt, 0)), spread over the mean output length.
    """
    import numpy as np
    from .ewif import predict_speedup
    from .tune import acceptance_table, complete_table
    config = config or recs[0]["config"]
    cfg = ewif_config(config)
    toks = float(np.mean([r["stats"]["n_tokens"] for r in recs]))
    start = float(np.mean([r.get("cache_start", cost_model.cache_length) for r in recs]))
    L = start + toks / 2
    models = ["target"] + [d for d in config["drafters"] if d != "mag"]

    def setup(name):
        s = cost_model.start.get(name, 0.0)
        return s + (float(cost_model.forward[name](start, 0)) if start > 1 else 0.0)
    ar_time = setup("target") + toks * cost_model.ar_step("target", L)
    if cfg["method"] == "ar":
        return {"speedup": 1.0, "cache_length": L, "cost_share": {"target": 1.0}}
    table = complete_table(acceptance_table(recs, min_reached=1), ["target", *cfg["drafters"]])
    p = predict_speedup(cfg, table, cost_model, n_sim=n_sim, seed=seed, cache_length=L, horizon=round(toks))
    time = sum(setup(n) for n in models) + toks * p["cost_per_token"]
    return {"speedup": ar_time / time, "cache_length": L, "cost_share": p["cost_share"],
            "tokens_per_target_call": p["tokens_per_target_call"]}


def predicted_vs_measured(records: list[dict], cost_model=None, n_sim: int = 4000) -> dict:
    """Per method: EWIF predictions from this run's own acceptance, beside measurements.

    ``predicted_swi_ms`` uses parameter-ratio costs (isolates the i.i.d. acceptance model);
    ``predicted_walltime`` prices calls with the per-call cost model when one is given
    (:func:`predict_walltime`), else with measured seconds per call, relative to the
    target's (the old, uncalibrated prediction). The gaps to ``speedup_swi_ms`` and the
    measured walltime are what the paper never calibrated.
    """
    from .ewif import predict_speedup
    from .tune import acceptance_table, complete_table, latency_costs
    summary = summarize(records, cost_model, n_sim)
    best = fastest(records)
    out = {}
    for m, s in summary.items():
        recs = list(best.get(m, {}).values())
        if not recs or "config" not in recs[0]:
            continue
        cfg = ewif_config(recs[0]["config"])
        table = complete_table(acceptance_table(recs, min_reached=1), ["target", *cfg.get("drafters", [])])
        ms_costs = _model_size_costs(recs)
        lat = latency_costs(recs)
        pred_ms = predict_speedup(cfg, table, ms_costs, n_sim=n_sim)["speedup"] if m != "ar" else 1.0
        if cost_model is not None:
            pw = predict_walltime(recs, cost_model, n_sim)
            pred_wall, share = pw["speedup"], pw["cost_share"]
        else:
            pred_wall = predict_speedup(cfg, table, lat, n_sim=n_sim)["speedup"] if m != "ar" else 1.0
            share = {}
        out[m] = {"speedup_swi_ms": s["speedup_swi_ms"], "predicted_swi_ms": pred_ms,
                  "speedup_walltime": s["speedup_walltime"], "predicted_walltime": pred_wall,
                  "speedup_walltime_median": s["speedup_walltime_median"],
                  "outside_share": s["outside_share"], "latency_costs": lat, "cost_share": share}
    return out


def _model_size_costs(recs: list[dict]) -> dict:
    """Cost per call relative to the target by parameter count (SWI model-size; MaG costs 0)."""
    params = recs[0]["stats"]["params"]
    costs = {n: params[n] / params["target"] for n in params}
    costs.setdefault("mag", 0.0)
    return costs


def vertical_k(k: int, levels: int = 3, mag: int = 10) -> list[list[int]]:
    """K of the vertical cascade only (paper Table 2 "base + MaG"): the largest drafter
    proposes ``k`` tokens, every middle drafter gets no budget, MaG drafts ``mag`` for each."""
    return [[k if j == 0 else 0 for j in range(levels - 1)] + [mag]] + \
        [[0] * (levels - 1) + [mag] for _ in range(levels - 1)]


def prediction_limits(records: list[dict], cost_model, vertical_records=None, n_sim: int = 2000,
                      sd_ks=tuple(range(2, 25)), vertical_ks=tuple(range(1, 17))) -> dict:
    """How far this run's acceptance lets CSD beat SD, by the cost model: the best K and k.

    Each method is searched on its own records' acceptance (a row beyond the measured
    budget repeats its pooled rate): SD every k in ``sd_ks``; CSD every K of
    :func:`csd_lib.tune.candidate_grid` (plus the run's own) at the run's lenience, since
    draft-to-draft rows are measured at that lenience only; the vertical cascade (the
    ``csd`` lines of ``vertical_records``) every k in ``vertical_ks``. Each is priced like
    :func:`predict_walltime` (walltime) and with parameter-ratio costs (``swi_ms``).
    Returns, per method, ``{"preset": ..., "best_walltime": ..., "best_swi": ...}``, each
    ``{"k", "walltime", "swi_ms"}``.
    """
    from .ewif import predict_speedup
    from .tune import acceptance_table, candidate_grid, complete_table
    best = fastest(records)
    out = {}

    def price(recs, config):
        cfg = ewif_config(config)
        table = complete_table(acceptance_table(recs, min_reached=1), ["target", *cfg["drafters"]])
        swi = predict_speedup(cfg, table, _model_size_costs(recs), n_sim=n_sim)["speedup"]
        wall = predict_walltime(recs, cost_model, n_sim, config=config)["speedup"]
        return {"k": config["k"], "walltime": wall, "swi_ms": swi}

    def search(recs, ks):
        base = recs[0]["config"]
        rows = [price(recs, {**base, "k": k}) for k in ks]
        return {"preset": price(recs, base), "best_walltime": max(rows, key=lambda r: r["walltime"]),
                "best_swi": max(rows, key=lambda r: r["swi_ms"])}

    sd = list(best.get("sd", {}).values())
    if sd and "config" in sd[0]:
        out["sd"] = search(sd, [[[k]] for k in sd_ks])
    csd = list(best.get("csd", {}).values())
    if csd and "config" in csd[0]:
        cfg = csd[0]["config"]
        neural = [d for d in cfg["drafters"] if d != "mag"]
        ks = [k for k, _ in candidate_grid(len(neural), leniences=(cfg["lenience"],))]
        out["csd"] = search(csd, ks + ([cfg["k"]] if cfg["k"] not in ks else []))
    vert = list(fastest(vertical_records or []).get("csd", {}).values())
    if vert and "config" in vert[0]:
        out["vertical"] = search(vert, [vertical_k(k, len(vert[0]["config"]["drafters"])) for k in vertical_ks])
    return out
