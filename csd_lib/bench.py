"""Benchmark harness: methods interleaved per example, resumable JSONL.

Each example is run as a *round*: every method once, back to back, so that a method and
AR meet the same machine load. ``repeats`` reruns each round; :mod:`csd_lib.summary` keeps
each method's fastest time per example and gives the aggregate speedup, the median over
examples with a bootstrap 95% interval, and the EWIF prediction from the run's own
acceptance priced with the per-call cost model (:mod:`csd_lib.predict`). Each line holds
the generation's :class:`csd_lib.plan.Plan` under ``plan`` (:class:`csd_lib.records.BenchRecord`).
"""
from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import torch

from .cascade import encode_prompt, generate
from .costs import device_name, environment, load_costs, measure_costs
from .fileio import write_atomic
from .plan import check_lenience, check_max_new_tokens
from .records import ALL_METHODS, HF_METHODS
from .summary import format_table, summarize, summary_json

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
    g = generate(family, prompt, method, k=k if method == "csd" else sd_k if method == "sd" else None,
                 lenience=lenience if method == "csd" else None, max_new_tokens=max_new_tokens)
    n_prompt = len(encode_prompt(family, prompt))
    # cache length at the first decoding step: T5's decoder starts empty, Llama's holds the prompt
    return {"token_ids": g.token_ids, "stats": g.stats.to_dict(), "plan": g.plan.to_dict(),
            "provenance": g.provenance_counts(), "prompt_tokens": n_prompt,
            "cache_start": 1 if family.target.is_encoder_decoder else n_prompt}


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
        out.append(rec)
    return out


def _repair(path: Path, records: list[dict]) -> None:
    """Rewrite the file with only complete lines (atomic), so appends start clean."""
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
              repeats: int = 1, sd_k=None) -> list[dict]:
    """Run every method on every example in interleaved rounds, one JSON line per (example, method, rep).

    Round ``(i, rep)`` runs every method on example ``i`` back to back (the order rotates
    with ``rep``). Existing lines are kept and skipped, so an interrupted run resumes where
    it stopped and a larger ``repeats`` adds only the missing rounds. A method that raises
    on an example is written as an error line (``error``: the message) and the run goes on.
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
    _repair(out, records)
    done = {_key(r) for r in records}
    todo = [(i, m, rep) for i in range(len(examples)) for rep in range(repeats)
            for m in methods[rep % len(methods):] + methods[:rep % len(methods)] if (i, m, rep) not in done]
    if not todo:
        return records
    env = environment()
    for _ in range(warmup):  # first calls of a new shape are slow: never time them
        for m in methods:
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
            rec.update(example=i, method=m, rep=rep, family=family.name, task=ex.task, source=ex.source,
                       max_new_tokens=max_new_tokens, env=env, load1=_load1())
            f.write(json.dumps(rec) + "\n")
            f.flush()
            os.fsync(f.fileno())
            records.append(rec)
            written += 1
            if stop_after is not None and written >= stop_after:
                break
    return records


# -- CLI -------------------------------------------------------------------------------

def main(args) -> None:
    from .families import load_from_args
    from .tasks import load_task
    if args.n < 1:
        raise ValueError(f"--n must be >= 1, got {args.n}")
    if args.threads:
        torch.set_num_threads(args.threads)
    fam = load_from_args(args)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if "staged" in methods and len(fam.drafters) < 2:
        print(f"note: family '{fam.name}' has one drafter; skipping 'staged'")
        methods.remove("staged")
    examples = load_task(args.task, args.split, args.n)
    records = run_bench(fam, examples, methods, Path(args.out), args.max_new_tokens, args.k, args.lenience,
                        repeats=getattr(args, "repeats", 1), sd_k=getattr(args, "sd_k", None))
    cm = bench_costs(fam, getattr(args, "costs", None))
    summary = summarize([r for r in records if r["method"] in methods or r["method"] == "ar"], cm)
    print(format_table(summary))
    if args.summary_json:
        write_atomic(Path(args.summary_json), json.dumps(summary_json(summary), indent=2) + "\n")
    errs = [r for r in records if "error" in r]
    for r in errs[:5]:
        print(f"error: example {r['example']} method {r['method']}: {r['error']}")
    if args.plot:
        from .viz import bench_figure
        write_atomic(Path(args.plot), bench_figure(summary, title=f"{fam.name} on {args.task}")
                     .to_html(include_plotlyjs=True, full_html=True))


def bench_costs(fam, spec=None):
    """The cost model for a bench summary: ``spec`` 'none', a JSON path, or None for the stored
    ``results/costs-<family>-<device>.json`` (measured now, about 10 s, when none is stored)."""
    if spec == "none":
        return None
    if spec:
        cm = load_costs(fam.name, path=Path(spec))
        if cm is None:
            raise ValueError(f"--costs {spec}: no such file; run `python -m csd_lib.costs --family {fam.name} "
                             f"--out {spec}`, or pass --costs none")
        return cm
    cm = load_costs(fam.name, device_name(fam.target.device))
    if cm is None:
        log.info(f"note: no stored cost model for {fam.name}; measuring one (10 s)")
        cm = measure_costs(fam, seconds=10)
    return cm
