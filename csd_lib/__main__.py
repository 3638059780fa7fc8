"""Command line: ``python -m csd_lib generate|demo|bench``."""
from __future__ import annotations

import argparse
import json
import sys

from . import config


def _generate(args) -> None:
    from .cascade import generate
    from .families import load_family
    if (args.prompt is None) == (args.prompts_file is None):
        raise ValueError("give exactly one of --prompt TEXT or --prompts-file F.jsonl")
    prompts = [args.prompt] if args.prompt is not None else _read_prompts(args.prompts_file)
    fam = load_family(args.family, device=args.device, dtype=args.dtype)
    for p in prompts:
        g = generate(fam, p, args.method, k=args.k, lenience=args.lenience, temperature=args.temperature,
                     seed=args.seed, max_new_tokens=args.max_new_tokens)
        if args.json:
            print(json.dumps(g.to_dict(events=args.events)), flush=True)
        else:
            from .viz import trace_text
            print(trace_text(g, fam.tokenizer))
            s = g.stats
            print(f"[{g.method}] {s.n_tokens} tokens, {s.wall_time:.3f}s, "
                  f"{s.tokens_per_target_call:.2f} tokens/target call, calls {s.calls}")


def _read_prompts(path: str) -> list[str]:
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{i} is not JSON ({e}); each line must be {{\"prompt\": \"...\"}}") from None
            if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
                raise ValueError(f"{path}:{i} has no string 'prompt'; each line must be {{\"prompt\": \"...\"}}")
            out.append(row["prompt"])
    if not out:
        raise ValueError(f"{path} holds no prompts")
    return out


def _demo(args) -> None:
    from .demo import run_demo
    run_demo(args.family, n_prompts=args.n, max_new_tokens=args.max_new_tokens)


def _bench(args) -> None:
    from .bench import main as bench_main
    bench_main(args)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m csd_lib", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    g = sub.add_parser("generate", help="generate with one method")
    g.add_argument("--family", default=config.FAMILY)
    g.add_argument("--method", default="csd")
    g.add_argument("--k", default=None, help="K matrix as JSON, e.g. '[[5,14,10],[0,1,10],[0,0,10]]'")
    g.add_argument("--lenience", type=float, default=None)
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--max-new-tokens", type=int, default=200)
    g.add_argument("--prompt", default=None)
    g.add_argument("--prompts-file", default=None)
    g.add_argument("--json", action="store_true", help="one JSON object per prompt")
    g.add_argument("--events", action="store_true", help="with --json: include the review log")
    g.add_argument("--device", default=None)
    g.add_argument("--dtype", default=None)
    g.set_defaults(func=_generate)

    d = sub.add_parser("demo", help="AR vs SD vs CSD on the embedded family: identity, trace, speed")
    d.add_argument("--family", default=config.FAMILY)
    d.add_argument("--n", type=int, default=5, help="number of prompts")
    d.add_argument("--max-new-tokens", type=int, default=128)
    d.set_defaults(func=_demo)

    b = sub.add_parser("bench", help="benchmark methods on a task; resumable JSONL")
    from .bench import add_arguments
    add_arguments(b)
    b.set_defaults(func=_bench)
    return ap


def main(argv=None) -> int:
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()  # weight-loading bars would bury the output
    args = parser().parse_args(argv)
    if getattr(args, "k", None) is not None and isinstance(args.k, str):
        try:
            args.k = json.loads(args.k)
        except json.JSONDecodeError as e:
            print(f"error: --k is not valid JSON ({e}); e.g. --k '[[5,14,10],[0,1,10],[0,0,10]]'", file=sys.stderr)
            return 2
    try:
        args.func(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
