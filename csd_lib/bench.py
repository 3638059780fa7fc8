"""Benchmark harness: methods interleaved per example, resumable JSONL, honest summaries."""
from __future__ import annotations

import json
import math
import os
import platform
import time
from pathlib import Path

import torch

from .cascade import METHODS, generate
from .trace import PREVIOUS_WORK_COST

HF_METHODS = ("hf-assisted", "hf-pld")
ALL_METHODS = METHODS + HF_METHODS


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


def run_one(family, prompt: str, method: str, max_new_tokens: int, k=None, lenience=None) -> dict:
    """One (example, method) record: token ids and stats."""
    if method in HF_METHODS:
        ids = family.tokenizer(prompt)["input_ids"]
        return hf_generate(family, ids, method, max_new_tokens)
    g = generate(family, prompt, method, k=k if method == "csd" else None,
                 lenience=lenience if method == "csd" else None, max_new_tokens=max_new_tokens)
    return {"token_ids": g.token_ids, "stats": g.stats.to_dict(), "config": g.config,
            "provenance": g.provenance_counts()}


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
        out.append(rec)
    return out


def _repair(path: Path, records: list[dict]) -> None:
    """Rewrite the file with only complete lines (atomic), so appends start clean."""
    if not path.exists():
        return
    good = "".join(json.dumps(r) + "\n" for r in records)
    if path.read_text(encoding="utf-8") != good:
        write_atomic(path, good)


def write_atomic(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def run_bench(family, examples, methods, out: Path, max_new_tokens: int = 128, k=None, lenience=None,
              warmup: int = 1, progress: bool = True, stop_after: int | None = None) -> list[dict]:
    """Run every method on every example, interleaved, appending one JSON line per pair.

    Existing lines are kept and skipped, so an interrupted run resumes where it stopped.
    ``stop_after`` ends the run after that many new lines (used to test resumption).
    """
    from tqdm.auto import tqdm
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad:
        raise ValueError(f"unknown method(s) {bad}; use {', '.join(ALL_METHODS)}")
    if "ar" not in methods:
        methods = ["ar", *methods]  # the reference for identity and speedups
    out = Path(out)
    records = read_records(out)
    _repair(out, records)
    done = {(r["example"], r["method"]) for r in records}
    todo = [(i, m) for i in range(len(examples)) for m in methods if (i, m) not in done]
    if not todo:
        return records
    env = environment()
    for _ in range(warmup):  # first calls of a new shape are slow: never time them
        for m in methods:
            run_one(family, examples[0].prompt, m, min(32, max_new_tokens), k, lenience)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(out, "a", encoding="utf-8") as f:
        for i, m in tqdm(todo, desc=f"bench {family.name}", disable=not progress):
            ex = examples[i]
            rec = run_one(family, ex.prompt, m, max_new_tokens, k, lenience)
            rec.update(example=i, method=m, family=family.name, task=ex.task, source=ex.source,
                       max_new_tokens=max_new_tokens, env=env)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            os.fsync(f.fileno())
            records.append(rec)
            written += 1
            if stop_after is not None and written >= stop_after:
                break
    return records


# -- summarising -----------------------------------------------------------------------

def summarize(records: list[dict]) -> dict:
    """Per-method summary computed from the raw lines only."""
    by = {}
    for r in records:
        by.setdefault(r["method"], {})[r["example"]] = r
    ar = by.get("ar", {})
    out = {}
    for m, recs in by.items():
        common = [i for i in recs if i in ar]
        toks = sum(recs[i]["stats"]["n_tokens"] for i in recs)
        wall = sum(recs[i]["stats"]["wall_time"] for i in recs)
        ar_wall = sum(ar[i]["stats"]["wall_time"] for i in common)
        m_wall = sum(recs[i]["stats"]["wall_time"] for i in common)
        s = {"n": len(recs), "tokens": toks, "tokens_per_s": toks / wall if wall else float("nan"),
             "speedup_walltime": ar_wall / m_wall if m_wall else float("nan"),
             "mismatches": sum(recs[i]["token_ids"] != ar[i]["token_ids"] for i in common)}
        st = [recs[i]["stats"] for i in recs]
        if "calls" in st[0]:
            calls: dict[str, int] = {}
            for x in st:
                for name, c in x["calls"].items():
                    calls[name] = calls.get(name, 0) + c
            params = st[0]["params"]
            target_calls = calls.get("target", 0)
            fwd = sum(sum(x["forward_time"].values()) for x in st)
            ms = {n: params[n] / params["target"] for n in params}
            s.update(
                calls_per_model=calls,
                mean_tokens_per_target_call=toks / target_calls if target_calls else float("nan"),
                speedup_swi_ms=_swi(toks, calls, ms), speedup_swi_pw=_swi(toks, calls, PREVIOUS_WORK_COST),
                outside_share=(wall - fwd) / wall if wall else float("nan"),
                forward_time_per_call={n: sum(x["forward_time"].get(n, 0) for x in st) / c
                                       for n, c in calls.items() if n != "mag" and c})
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
                "mean_tokens_per_target_call", "mismatches")


def summary_json(summary: dict) -> dict:
    """The fixed-schema summary written by --summary-json."""
    return {m: {k: (None if isinstance(s[k], float) and math.isnan(s[k]) else s[k]) for k in SUMMARY_KEYS}
            for m, s in summary.items()}


def format_table(summary: dict) -> str:
    """A plain-text table of the summary, one row per method."""
    head = f"{'method':<12}{'n':>4}{'tok/s':>9}{'speedup':>9}{'SWI-MS':>8}{'SWI-PW':>8}{'tok/call':>9}" \
           f"{'outside':>9}{'mismatch':>9}"
    rows = [head, "-" * len(head)]
    order = [m for m in ALL_METHODS if m in summary]
    for m in order:
        s = summary[m]
        f = lambda v, w, p: f"{v:>{w}.{p}f}" if isinstance(v, (int, float)) and not math.isnan(v) else f"{'-':>{w}}"  # noqa: E731
        rows.append(f"{m:<12}{s['n']:>4}{f(s['tokens_per_s'], 9, 1)}{f(s['speedup_walltime'], 9, 2)}"
                    f"{f(s['speedup_swi_ms'], 8, 2)}{f(s['speedup_swi_pw'], 8, 2)}"
                    f"{f(s['mean_tokens_per_target_call'], 9, 2)}"
                    f"{f(100 * s['outside_share'] if not math.isnan(s['outside_share']) else float('nan'), 8, 1)}"
                    f"{'%' if not math.isnan(s['outside_share']) else ' '}{s['mismatches']:>9}")
    return "\n".join(rows)


# -- CLI -------------------------------------------------------------------------------

def main(args) -> None:
    from .families import load_family
    from .tasks import load_task
    if args.n < 1:
        raise ValueError(f"--n must be >= 1, got {args.n}")
    if args.threads:
        torch.set_num_threads(args.threads)
    fam = load_family(args.family, device=args.device, dtype=args.dtype)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if "staged" in methods and len(fam.drafters) < 2:
        print(f"note: family '{fam.name}' has one drafter; skipping 'staged'")
        methods.remove("staged")
    examples = load_task(args.task, args.split, args.n)
    records = run_bench(fam, examples, methods, Path(args.out), args.max_new_tokens, args.k, args.lenience)
    summary = summarize([r for r in records if r["method"] in methods or r["method"] == "ar"])
    print(format_table(summary))
    if args.summary_json:
        write_atomic(Path(args.summary_json), json.dumps(summary_json(summary), indent=2) + "\n")
    if args.plot:
        from .viz import bench_figure
        write_atomic(Path(args.plot), bench_figure(summary, title=f"{fam.name} on {args.task}")
                     .to_html(include_plotlyjs=True, full_html=True))


# -- theory against measurement -------------------------------------------------------------

def ewif_config(cfg: dict) -> dict:
    """A generation's config as a :func:`csd_lib.ewif.predict_speedup` config."""
    if cfg["method"] == "ar":
        return {"method": "ar"}
    drafters = list(cfg["drafters"])
    return {"method": "csd", "drafters": drafters, "k": cfg["k"], "lenience": cfg["lenience"],
            "bottom_block": 10 if drafters[-1] == "mag" else 1}


def predicted_vs_measured(records: list[dict], n_sim: int = 4000) -> dict:
    """Per method: EWIF predictions from this run's own acceptance and costs, beside measurements.

    ``predicted_swi_ms`` uses parameter-ratio costs (isolates the i.i.d. acceptance model),
    ``predicted_walltime`` uses measured seconds per forward call (adds the cost model);
    the gaps to ``speedup_swi_ms`` and ``speedup_walltime`` are what the paper never calibrated.
    """
    from .ewif import predict_speedup
    from .tune import acceptance_table, latency_costs
    summary = summarize(records)
    out = {}
    for m, s in summary.items():
        recs = [r for r in records if r["method"] == m]
        if "config" not in recs[0]:
            continue
        cfg = ewif_config(recs[0]["config"])
        table = acceptance_table(recs, min_reached=1)
        params = recs[0]["stats"]["params"]
        ms_costs = {n: (params[n] / params["target"] if n in params else 0.0) for n in params}
        ms_costs.setdefault("mag", 0.0)
        lat = latency_costs(recs)
        pred_ms = predict_speedup(cfg, table, ms_costs, n_sim=n_sim)["speedup"] if m != "ar" else 1.0
        pred_wall = predict_speedup(cfg, table, lat, n_sim=n_sim)["speedup"] if m != "ar" else 1.0
        out[m] = {"speedup_swi_ms": s["speedup_swi_ms"], "predicted_swi_ms": pred_ms,
                  "speedup_walltime": s["speedup_walltime"], "predicted_walltime": pred_wall,
                  "outside_share": s["outside_share"], "latency_costs": lat}
    return out
