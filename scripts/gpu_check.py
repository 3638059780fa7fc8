"""Time every real preset at full size on shadow checkpoints (called by scripts/gpu_check.sh).

For each preset: build its shadows into ``--hub`` (real width and, by default, full depth;
random weights initialised on the device), load the family through ``load_family`` in its
policy dtype, time one forward call of each model against the number of tokens scored
(``--tokens``) at several KV-cache lengths (``--cache-lens``), then run ar, sd and csd end
to end and record the share of walltime spent outside forward calls; also fit the per-call
cost model of ``csd_lib.costs`` (``OUT/costs-<preset>-<device>.json``), which
``ewif.predict_speedup`` takes for a walltime projection. Results go to
``OUT/gpu_check.json``, rewritten after each preset, so a run cut short keeps what it did.

    python scripts/gpu_check.py --hub /tmp/shadow-hub --out results/gpu_check
    python scripts/gpu_check.py --hub /tmp/h --out /tmp/o --device cpu --max-layers 1 \
        --presets vicuna --tokens 1,2 --cache-lens 8 --reps 1 --warmup 0 --max-new-tokens 4 --cost-seconds 0  # dry run

Random weights accept almost nothing, so these runs measure costs, never speedups.
"""
from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import huggingface_hub
import torch

from csd_lib import config
from csd_lib.fileio import write_atomic
from csd_lib.measure.machine import environment
from csd_lib.price.timing import measure_costs
from csd_lib.price.costfile import save_costs
from csd_lib.families.presets import REAL_PRESETS
from csd_lib.families.shadow import build_shadows


def int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def time_calls(lm, tokens: list[int], cache_lens: list[int], warmup: int, reps: int, enc_len: int) -> list[dict]:
    """Seconds per ``lm.logits`` call scoring t new tokens on top of a cache of L tokens.

    Each call rolls the cache back to L (as a rejected draft does) and feeds t tokens, so
    it costs what the cascade pays per call, the crop and the logits copy included.
    """
    vocab = lm.vocab_size - 200  # ordinary ids only: no specials, no sentinels
    g = torch.Generator().manual_seed(0)
    rows = []
    for L in cache_lens:
        ids = torch.randint(3, vocab, (enc_len + L + max(tokens) * (warmup + reps + 1),), generator=g).tolist()
        if lm.is_encoder_decoder:
            prefix = lm.start(ids[:enc_len]) + ids[enc_len:enc_len + L - 1]  # decoder start + L - 1 tokens
        else:
            prefix = lm.start(ids[:L])
        lm.logits(prefix, 0)  # fill the cache to L tokens
        pool = ids[enc_len + L:]
        for t in tokens:
            times = []
            for r in range(warmup + reps):
                seq = prefix + pool[r * t:(r + 1) * t]
                t0 = time.perf_counter()
                lm.logits(seq, t - 1)
                if r >= warmup:
                    times.append(time.perf_counter() - t0)
            rows.append(dict(cache_len=len(prefix), tokens=t, median_s=statistics.median(times), min_s=min(times),
                             reps=len(times)))
        lm.release()
    return rows


def run_generate(fam, prompts: list[str], methods: list[str], max_new_tokens: int) -> dict:
    """Walltime, calls and the share of walltime outside forward calls of each method (``ar`` first)."""
    from csd_lib import generate
    generate(fam, prompts[0], "csd", max_new_tokens=min(16, max_new_tokens))  # warm-up
    out, ref = {}, None
    for m in methods:
        gens = [generate(fam, p, m, max_new_tokens=max_new_tokens) for p in prompts]
        ids = [g.token_ids for g in gens]
        ref = ref if ref is not None else ids
        wall = sum(g.stats.wall_time for g in gens)
        outside = sum(g.stats.outside_forward_time for g in gens)
        calls: dict[str, int] = {}
        for g in gens:
            for k, v in g.stats.calls.items():
                calls[k] = calls.get(k, 0) + v
        out[m] = dict(tokens=sum(g.stats.n_tokens for g in gens), wall_s=wall, outside_forward_s=outside,
                      outside_share=outside / wall if wall else float("nan"), calls=calls, same_as_first=ids == ref)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hub", required=True, help="folder for the shadow hub cache (never your real HF cache)")
    ap.add_argument("--out", required=True, help="folder for gpu_check.json")
    ap.add_argument("--presets", default="flan-t5-colab,flan-t5,vicuna")
    ap.add_argument("--max-layers", type=int, default=None, help="cut depth (default: full depth)")
    ap.add_argument("--device", default=None, help="default: the best available")
    ap.add_argument("--dtype", default=None, help="default: the policy's")
    ap.add_argument("--tokens", type=int_list, default=[1, 2, 4, 8, 16, 32])
    ap.add_argument("--cache-lens", type=int_list, default=[64, 256, 1024])
    ap.add_argument("--enc-len", type=int, default=128, help="encoder prompt tokens (T5)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--n-prompts", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--cost-seconds", type=float, default=10,
                    help="seconds for csd_lib.costs.measure_costs per preset (0: skip)")
    ap.add_argument("--free-disk", action="store_true", help="delete each preset's shadows once it is done")
    ap.add_argument("--budget-s", type=float, default=420, help="skip presets not started by then")
    args = ap.parse_args(argv)
    hub, out = Path(args.hub), Path(args.out)
    real_cache = Path(huggingface_hub.constants.HF_HUB_CACHE).resolve()
    if hub.resolve() == real_cache and not any((hub / n).exists() for n in ("models--google--flan-t5-small",)):
        print(f"--hub {hub} is your Hugging Face cache; give an empty folder for shadows", file=sys.stderr)
        return 2
    # This process reads the shadow hub, offline.
    huggingface_hub.constants.HF_HUB_CACHE = str(hub)
    huggingface_hub.constants.HF_HUB_OFFLINE = True
    config.HF_OFFLINE = True
    from csd_lib.families.family import load_family
    from csd_lib.families.tasks import load_task

    t_start = time.perf_counter()
    dev = config.pick_device(args.device)
    result = dict(env=environment(), device=str(dev), args={k: v for k, v in vars(args).items()}, presets={},
                  note="shadow checkpoints: random weights at the published widths; costs only, never speedups")
    if dev.type == "cuda":
        result["gpu"] = torch.cuda.get_device_name(dev)
    prompts = [ex.prompt for ex in load_task("gsm8k", "test", args.n_prompts)]
    for preset in args.presets.split(","):
        if time.perf_counter() - t_start > args.budget_s:
            result["presets"][preset] = dict(skipped=f"over the {args.budget_s:.0f} s budget")
            continue
        rec: dict = {}
        t0 = time.perf_counter()
        rec["shadows"] = build_shadows(hub, [preset], max_layers=args.max_layers,
                                       device=dev if dev.type == "cuda" else None, verbose=True)
        rec["build_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        fam = load_family(preset, device=args.device, dtype=args.dtype)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        rec["load_s"] = time.perf_counter() - t0
        rec["models"] = {}
        for lm in fam.models:
            t0 = time.perf_counter()
            rec["models"][lm.name] = dict(id=lm.model_id, params=lm.n_params, dtype=str(lm.dtype), device=str(lm.device),
                                          calls=time_calls(lm, args.tokens, args.cache_lens, args.warmup, args.reps,
                                                           args.enc_len))
            print(f"{preset}/{lm.name} ({lm.model_id}, {lm.dtype}): timed in {time.perf_counter() - t0:.1f} s; "
                  + ", ".join(f"L{r['cache_len']}/t{r['tokens']} {r['median_s'] * 1e3:.2f} ms"
                              for r in rec["models"][lm.name]["calls"]), flush=True)
        if args.cost_seconds > 0:  # the per-call cost model that ewif's walltime projection takes
            t0 = time.perf_counter()
            cm = measure_costs(fam, seconds=args.cost_seconds)
            rec["cost_model"] = str(save_costs(cm, out / f"costs-{preset}-{cm.device}.json"))
            rec["cost_model_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        methods = ["ar", "sd", "csd"]
        rec["generate"] = run_generate(fam, prompts, methods, args.max_new_tokens)
        rec["generate_s"] = time.perf_counter() - t0
        for m, g in rec["generate"].items():
            print(f"{preset}/{m}: {g['tokens']} tokens in {g['wall_s']:.2f} s, outside forwards "
                  f"{g['outside_share']:.1%}, calls {g['calls']}, same as ar: {g['same_as_first']}", flush=True)
        result["presets"][preset] = rec
        del fam
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        if args.free_disk:
            keep = {rid for p in args.presets.split(",") if p not in result["presets"]
                    for rid in (REAL_PRESETS[p]["target"], *REAL_PRESETS[p]["drafters"])}
            for r in rec["shadows"]:
                if r["id"] not in keep:
                    shutil.rmtree(hub / f"models--{r['id'].replace('/', '--')}", ignore_errors=True)
        result["elapsed_s"] = time.perf_counter() - t_start
        write_atomic(out / "gpu_check.json", json.dumps(result, indent=1, default=str) + "\n")
    result["elapsed_s"] = time.perf_counter() - t_start
    write_atomic(out / "gpu_check.json", json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {out / 'gpu_check.json'} in {result['elapsed_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
