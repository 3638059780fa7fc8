"""Command line: ``csd generate|demo|bench|shadow|predict`` (or ``python -m csd_lib ...``).

Bad input ends in one line ``error: ...`` on stderr and exit status 2; ``--debug`` shows
the traceback instead.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import torch

from . import config
from .bench import bench_costs, read_cost_file, read_records, resume_problem, run_bench
from .cascade import encode_prompt, generate
from .demo import run_demo
from .families import FAMILIES, check_args_method, load_from_args
from .fileio import write_atomic
from .forecast import forecast, format_forecast
from .models import hide_weight_loading_bars
from .plan import METHODS, check_lenience, check_max_new_tokens, check_method_args, check_seed, check_temperature
from .records import ALL_METHODS as BENCH_METHODS
from .shadow import DEFAULT_PRESETS, build_shadows, describe
from .summary import format_table, summarize, summary_json
from .tasks import SPLITS, TASKS, load_task
from .viz import bench_figure, trace_text

DTYPES = sorted(config.DTYPES_BY_NAME)
EXIT_BAD_INPUT = 2


# -- reading files -----------------------------------------------------------------------

def read_text(path: str, what: str, fix: str) -> str:
    """A UTF-8 text file; a missing, unreadable or non-UTF-8 file is a ValueError naming it and the fix."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{what} {path} not found; {fix}") from None
    except IsADirectoryError:
        raise ValueError(f"{what} {path} is a directory, not a file; {fix}") from None
    except PermissionError:
        raise ValueError(f"{what} {path} is not readable (permission denied); fix its permissions") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line} is not UTF-8 text (byte {data[e.start]:#04x}); save the {what} "
                         f"as UTF-8") from None


def read_prompts(path: str) -> list[str]:
    """Prompts from a JSONL file, one ``{"prompt": "..."}`` per line; blank lines are skipped."""
    fix = 'each line must be {"prompt": "..."}'
    out = []
    for i, line in enumerate(read_text(path, "prompts file", f"pass a JSONL file where {fix}").split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{i} is not JSON ({e.msg}); {fix}") from None
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
            raise ValueError(f"{path}:{i} has no string 'prompt'; {fix}")
        if not row["prompt"].strip():
            raise ValueError(f"{path}:{i} has an empty prompt; give it some text or delete the line")
        out.append(row["prompt"])
    if not out:
        raise ValueError(f"{path} holds no prompts; {fix}")
    return out


def read_k(value: str | None):
    """``--k``: a JSON matrix, or ``@FILE`` holding one."""
    if value is None:
        return None
    example = "e.g. [[5,14,10],[0,1,10],[0,0,10]]"
    if value.startswith("@"):
        path = value[1:]
        text = read_text(path, "K file", f"pass --k @FILE with an existing JSON file holding a K matrix, {example}")
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno} is not valid JSON ({e.msg}); the file must hold one K matrix, "
                             f"{example}") from None
    try:
        return json.loads(value)
    except json.JSONDecodeError as e:
        raise ValueError(f"--k is not valid JSON ({e.msg}); e.g. --k '[[5,14,10],[0,1,10],[0,0,10]]' "
                         f"or --k @k.json") from None


def check_out_path(path: str | None, flag: str) -> None:
    """An output path must not be a directory, its parent must not be a file, and it must be writable."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{flag} {path} is a directory; give a file path")
    parent = next((a for a in p.absolute().parents if a.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ValueError(f"{flag} {path}: {parent} is a file, not a folder; give a path in a folder")
    if p.exists() and not os.access(p, os.W_OK):
        raise ValueError(f"{flag} {path} is not writable (permission denied); fix its permissions or give "
                         f"another path")
    if parent is not None and not p.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: the folder {parent} is not writable (permission denied); give a path "
                         f"in a folder you can write")


def free_path(path: Path) -> Path:
    """``path``, or the first of ``stem-2.ext``, ``stem-3.ext``, ... that does not exist."""
    j = 2
    while path.exists():
        path, j = path.with_name(f"{path.stem.removesuffix(f'-{j - 1}')}-{j}{path.suffix}"), j + 1
    return path


# -- argument types: one line per mistake ---------------------------------------------

def finite_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return x


def positive_int(text: str) -> int:
    try:
        x = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if x < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return x


def seed_int(text: str) -> int:
    try:
        return check_seed(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer in [0, 2**64)") from None


def device_arg(text: str) -> str:
    """``--device``: a torch device this machine has (cpu, cuda, cuda:N, mps)."""
    try:
        dev = torch.device(text)
    except (RuntimeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a torch device; use cpu, cuda, cuda:N or mps") from None
    n_cuda = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if dev.type == "cuda" and (dev.index or 0) >= n_cuda:
        raise argparse.ArgumentTypeError(f"{text!r}: this machine has {n_cuda} CUDA device(s); use "
                                         f"{'cpu' if not n_cuda else f'cuda:0 to cuda:{n_cuda - 1}, or cpu'}")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise argparse.ArgumentTypeError(f"{text!r}: MPS is not available on this machine; use cpu")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise argparse.ArgumentTypeError(f"{text!r}: device type {dev.type!r} is not supported; use cpu, cuda or mps")
    return text


def method_list(text: str) -> str:
    """``bench --methods``: a comma-separated list of known methods (checked before any model loads)."""
    methods = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in methods if m not in BENCH_METHODS]
    if bad or not methods:
        raise argparse.ArgumentTypeError(f"unknown method(s) {', '.join(bad) or repr(text)}; use a comma-separated "
                                         f"list of {', '.join(BENCH_METHODS)}")
    return ",".join(methods)


# -- commands --------------------------------------------------------------------------

def _generate(args) -> None:
    if (args.prompt is None) == (args.prompts_file is None):
        raise ValueError("give exactly one of --prompt TEXT or --prompts-file F.jsonl")
    check_temperature(args.temperature)
    mag_lenience = None if args.mag_lenience is None else args.mag_lenience == "lenient"
    check_method_args(args.method, args.k, args.lenience, mag_lenience=mag_lenience)
    k = read_k(args.k)
    prompts = [args.prompt] if args.prompt is not None else read_prompts(args.prompts_file)
    check_args_method(args, [args.method])  # before anything loads: e.g. 'staged' needs two drafters
    fam = load_from_args(args)
    for p in prompts:  # every prompt is checked before the first generation writes anything
        encode_prompt(fam, p)
    for p in prompts:
        g = generate(fam, p, args.method, k=k, lenience=args.lenience, temperature=args.temperature,
                     seed=args.seed, max_new_tokens=args.max_new_tokens, mag_lenience=mag_lenience)
        if args.json:
            print(json.dumps(g.to_dict(events=args.events)), flush=True)
        else:
            print(trace_text(g, fam.tokenizer, color=sys.stdout.isatty()))  # no ANSI codes into a pipe
            s = g.stats
            print(f"[{g.method}] {s.n_tokens} tokens, {s.wall_time:.3f}s, "
                  f"{s.tokens_per_target_call:.2f} tokens/target call, calls {s.calls}")


def _demo(args) -> None:
    run_demo(args.family or config.FAMILY, n_prompts=args.n, max_new_tokens=args.max_new_tokens)


def _bench(args) -> None:
    """Benchmark: every check first (arguments, files, the task's size), then the family, the run, the summary."""
    methods = args.methods.split(",")
    if args.lenience is not None:
        check_lenience(args.lenience)
    if args.clock == "cpu" and args.threads != 1:
        raise ValueError("--clock cpu needs --threads 1 (process CPU time adds up the work of every torch thread); "
                         "pass --threads 1, or use --clock wall")
    if args.clock == "cpu" and args.device is not None and torch.device(args.device).type != "cpu":
        raise ValueError(f"--clock cpu times work on the CPU only, not on --device {args.device}; use --clock wall")
    mag_lenience = None if args.mag_lenience is None else args.mag_lenience == "lenient"
    for flag, value, needs in (("--k", args.k, "csd"), ("--lenience", args.lenience, "csd"),
                               ("--mag-lenience", args.mag_lenience, "csd"), ("--sd-k", args.sd_k, "sd")):
        if value is not None and needs not in methods:
            raise ValueError(f"{flag} is for {needs}, which --methods {args.methods} does not run; add {needs} to "
                             f"--methods or drop {flag}")
    check_max_new_tokens(args.max_new_tokens)
    args.k = read_k(args.k)
    for path, flag in ((args.out, "--out"), (args.summary_json, "--summary-json"), (args.plot, "--plot")):
        check_out_path(path, flag)
    cost_model = read_cost_file(args.costs) if args.costs not in (None, "none") else None
    out = Path(args.out)
    records = read_records(out)  # a results file to resume must be readable before any model loads
    examples = load_task(args.task, args.split, args.n)
    # before anything loads; bench itself skips 'staged' for a family with one drafter
    check_args_method(args, [m for m in methods if m in METHODS and m != "staged"])
    if args.threads:
        torch.set_num_threads(args.threads)
    fam = load_from_args(args)
    if cost_model is not None and cost_model.family != fam.name:
        print(f"note: --costs {args.costs} was measured on {cost_model.family}, not {fam.name}; its predictions "
              f"price {fam.name}'s calls at {cost_model.family}'s costs", file=sys.stderr)
    if "staged" in methods and len(fam.drafters) < 2:
        print(f"note: family '{fam.name}' has one drafter; skipping 'staged'", file=sys.stderr)
        methods.remove("staged")
    settings = dict(max_new_tokens=args.max_new_tokens, k=args.k, lenience=args.lenience, sd_k=args.sd_k,
                    split=args.split, mag_lenience=mag_lenience, clock=args.clock)
    problem = resume_problem(records, fam, examples, ["ar", *methods], **settings)
    if problem and not args.new_out:
        raise ValueError(f"{out} holds another run's results ({problem}); run with its settings to resume it, "
                         f"or pass --new-out (or another --out) to start a new file")
    if problem:
        out = free_path(out)
        print(f"note: {args.out} holds another run's results ({problem}); writing {out}", file=sys.stderr)
    records = run_bench(fam, examples, methods, out, repeats=args.repeats, **settings)
    if args.costs is None:
        cost_model = bench_costs(fam)
    summary = summarize([r for r in records if r["example"] < args.n and r["method"] in ("ar", *methods)],
                        cost_model)
    print(format_table(summary))
    if args.summary_json:
        write_atomic(Path(args.summary_json), json.dumps(summary_json(summary), indent=2) + "\n")
    errs = [r for r in records if "error" in r]
    for r in errs[:5]:
        print(f"note: example {r['example']} method {r['method']} failed: {r['error']}", file=sys.stderr)
    if args.plot:
        write_atomic(Path(args.plot), bench_figure(summary, title=f"{fam.name} on {args.task}")
                     .to_html(include_plotlyjs=True, full_html=True))


def _shadow(args) -> None:
    names = [n.strip() for n in (args.ids or args.presets or "").split(",") if n.strip()]
    if args.ids is not None:
        records = build_shadows(args.out, max_layers=args.max_layers, ids=names, verbose=False)
    else:
        presets = DEFAULT_PRESETS if args.presets is None else names
        records = build_shadows(args.out, presets, max_layers=args.max_layers, verbose=False)
    for rec in records:
        print(describe(rec), flush=True)
    print(f"use them with: HF_HUB_CACHE={args.out} HF_HUB_OFFLINE=1 (random weights: a test bed, not a model)")


def _predict(args) -> None:
    if args.device is None or torch.device(args.device).type == "cpu":
        torch.set_num_threads(args.threads)
    drafters = [d.strip() for d in (args.drafters or "").split(",") if d.strip()]
    if args.drafters is not None and args.target is None:
        raise ValueError("--drafters needs --target (your own target's hub id or folder)")
    if args.target is not None and args.family is not None:
        raise ValueError("give --family or --target/--drafters, not both")
    res = forecast(None if args.target else args.family or config.FAMILY, args.acceptance, device=args.device,
                   max_layers=args.max_layers, costs=args.costs, max_new_tokens=args.max_new_tokens,
                   prompt_tokens=args.prompt_tokens, seconds=args.seconds, target=args.target, drafters=drafters)
    if args.out:
        write_atomic(Path(args.out), json.dumps(res) + "\n")
    print(json.dumps(res) if args.json else format_forecast(res), flush=True)


# -- the parser --------------------------------------------------------------------------

class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Show defaults, except None and flags."""

    def _get_help_string(self, action):
        if action.default is None or isinstance(action.default, bool):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line: ``error: ...; see PROG --help``."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"error: {message}; see {self.prog} --help\n")


def prog_name() -> str:
    """The console script's own name (``csd``), or ``python -m csd_lib``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m csd_lib" if name in ("", "__main__.py", "-c") else name


def add_model_args(p: argparse.ArgumentParser) -> None:
    """Which models to load and where: shared by every command that loads a family."""
    p.add_argument("--family", choices=FAMILIES, default=None,
                   help=f"model family (default: $CSD_FAMILY, else tiny-t5; now {config.FAMILY})")
    p.add_argument("--target", default=None, metavar="ID",
                   help="your own target instead of --family: a hub id or local folder (seq2seq or causal)")
    p.add_argument("--drafters", default=None, metavar="ID,ID",
                   help="with --target: drafters, largest first, sharing the target's tokenizer; MaG is added")
    p.add_argument("--device", type=device_arg, default=None,
                   help="torch device, e.g. cpu, cuda, cuda:1 (default: the policy's; tiny families stay on the CPU)")
    p.add_argument("--dtype", choices=DTYPES, default=None,
                   help="compute dtype (default: the policy's: bf16 on GPUs with compute capability >= 8.0, "
                        "fp16 on T4/V100, else fp32)")


def parser(prog: str | None = None) -> argparse.ArgumentParser:
    ap = _Parser(prog=prog or prog_name(), description=__doc__, formatter_class=_Help)
    ap.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    sub = ap.add_subparsers(dest="command", required=True)
    common = dict(formatter_class=_Help)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help, **common)
        c.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the Python traceback of an error")
        return c

    g = command("generate", "generate with one method")
    add_model_args(g)
    g.add_argument("--method", choices=METHODS, default="csd", help="decoding method")
    g.add_argument("--k", default=None,
                   help="K matrix as JSON, e.g. '[[5,14,10],[0,1,10],[0,0,10]]', or @FILE.json (default: the family's)")
    g.add_argument("--lenience", type=finite_float, default=None,
                   help="lenience >= 1 of draft-to-draft reviews, csd only (default: the family's)")
    g.add_argument("--mag-lenience", choices=("paper", "lenient"), default=None,
                   help="csd only: 'paper' reviews MaG's tokens strictly (the paper's rule, the default), "
                        "'lenient' applies --lenience to them too")
    g.add_argument("--temperature", type=finite_float, default=0.0, help="0 = greedy")
    g.add_argument("--seed", type=seed_int, default=None, help="sampling seed (default: a fresh random one)")
    g.add_argument("--max-new-tokens", type=positive_int, default=200, help="tokens to generate at most")
    g.add_argument("--prompt", default=None, help="the prompt text")
    g.add_argument("--prompts-file", default=None, help='JSONL file, one {"prompt": "..."} per line')
    g.add_argument("--json", action="store_true", help="one JSON object per prompt")
    g.add_argument("--events", action="store_true", help="with --json: include the review log")
    g.set_defaults(func=_generate)

    d = command("demo", "AR vs SD vs CSD on the embedded family: identity, trace, speed")
    d.add_argument("--family", choices=FAMILIES, default=None,
                   help=f"model family (default: $CSD_FAMILY, else tiny-t5; now {config.FAMILY})")
    d.add_argument("--n", type=positive_int, default=5, help="number of prompts")
    d.add_argument("--max-new-tokens", type=positive_int, default=128, help="tokens to generate at most")
    d.set_defaults(func=_demo)

    b = command("bench", "benchmark methods on a task; resumable JSONL")
    add_model_args(b)
    b.add_argument("--task", choices=TASKS, default="synth-gsm8k", help="task to draw prompts from")
    b.add_argument("--split", choices=SPLITS, default="test", help="task split")
    b.add_argument("--n", type=positive_int, default=50, help="number of examples")
    b.add_argument("--methods", type=method_list, default=",".join(BENCH_METHODS),
                   help=f"comma-separated, from {', '.join(BENCH_METHODS)}; ar always runs as the reference")
    b.add_argument("--k", default=None, help="K matrix for csd as JSON, or @FILE.json (default: the family's)")
    b.add_argument("--lenience", type=finite_float, default=None, help="lenience for csd (default: the family's)")
    b.add_argument("--mag-lenience", choices=("paper", "lenient"), default=None,
                   help="csd only: 'paper' reviews MaG's tokens strictly (the paper's rule, the default), "
                        "'lenient' applies the lenience to them too")
    b.add_argument("--sd-k", type=positive_int, default=None, help="draft length of sd (default: the family's)")
    b.add_argument("--max-new-tokens", type=positive_int, default=128, help="tokens to generate per example")
    b.add_argument("--out", required=True,
                   help="results JSONL; resumed if it exists and holds the same run (family, task, split, "
                        "--max-new-tokens, --clock, each method's settings), refused if not")
    b.add_argument("--new-out", action="store_true",
                   help="when --out holds another run, write OUT-2.jsonl (the first free name) instead")
    b.add_argument("--summary-json", default=None, help="write the summary as JSON")
    b.add_argument("--plot", default=None, help="write a bar chart as standalone HTML")
    b.add_argument("--threads", type=positive_int, default=None, help="torch threads (default: torch's choice)")
    b.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="what every time is read from: 'wall' time, or 'cpu': this process's CPU time, which "
                        "other jobs' preemption cannot inflate (needs --threads 1 on a CPU)")
    b.add_argument("--repeats", type=positive_int, default=1,
                   help="rounds per example; the summary keeps each method's fastest time")
    b.add_argument("--costs", default=None, metavar="FILE|none",
                   help="cost model JSON for the predicted walltime speedup; 'none' skips the prediction and "
                        "its measurement (default: results/costs-<family>-<device>.json, measured when missing: "
                        "about 10 s, a few points on a real family)")
    b.set_defaults(func=_bench)

    sh = command("shadow", "write random-weight copies of the real checkpoints into a hub cache (test bed)")
    sh.add_argument("--out", required=True, help="hub cache folder to write; then set HF_HUB_CACHE to it")
    which = sh.add_mutually_exclusive_group()
    which.add_argument("--presets", default=None,
                       help="comma-separated real presets (default: flan-t5-colab,flan-t5,vicuna)")
    which.add_argument("--ids", default=None, help="comma-separated repo ids with a stored config "
                       "(data/hf_configs), e.g. google/flan-t5-xl, instead of presets")
    sh.add_argument("--max-layers", type=positive_int, default=None,
                    help="cut every layer count to at most N (width and vocabulary stay real; default: full depth)")
    sh.set_defaults(func=_shadow)

    pr = command("predict", "predict tokens/s and speedups of AR, SD and CSD on this device, before any download")
    pr.add_argument("--family", choices=FAMILIES, default=None,
                    help=f"model family (default: $CSD_FAMILY, else tiny-t5; now {config.FAMILY})")
    pr.add_argument("--acceptance", default="paper", metavar="paper|FILE|RATES",
                    help="acceptance profile: 'paper' (FLAN-T5, Fig. 2), a bench results JSONL of your runs, or "
                         "rates: one per drafter with MaG last (0.8,0.7,0.3) or pairs (target<-base=0.8,...); "
                         "a rate may be per-position rates joined by ':'")
    pr.add_argument("--target", default=None, metavar="ID",
                    help="your own target instead of --family: a hub id in the cache or a local folder (its "
                         "config.json only is read)")
    pr.add_argument("--drafters", default=None, metavar="ID,ID", help="with --target: drafters, largest first")
    pr.add_argument("--device", type=device_arg, default=None, help="torch device (default: the best available)")
    pr.add_argument("--max-layers", type=positive_int, default=None,
                    help="measure real models at this depth and scale each call to the full depth "
                         "(default: full depth where memory allows; 2 on a CPU)")
    pr.add_argument("--costs", default=None, metavar="FILE",
                    help="price with this cost model JSON (python -m csd_lib.costs --out) instead of measuring")
    pr.add_argument("--max-new-tokens", type=positive_int, default=128, help="tokens per generation priced")
    pr.add_argument("--prompt-tokens", type=positive_int, default=100, help="prompt length priced")
    pr.add_argument("--seconds", type=finite_float, default=20.0, help="cost measurement budget")
    pr.add_argument("--threads", type=positive_int, default=1, help="torch threads on a CPU (benchmarks use 1)")
    pr.add_argument("--json", action="store_true", help="print the prediction as one JSON line")
    pr.add_argument("--out", default=None, help="also write the prediction as JSON to this file")
    pr.set_defaults(func=_predict)
    return ap


def main(argv=None) -> int:
    """Run the CLI; returns the exit status (0, or 2 for bad input)."""
    args = parser().parse_args(argv)
    hide_weight_loading_bars()  # weight-loading bars would bury the output; download bars stay
    try:
        args.func(args)
    except (ValueError, OSError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        if args.debug:
            raise
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def _one_line(e: Exception) -> str:
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or e}; check the path and its permissions"
    return " ".join(str(e).split()) or type(e).__name__


if __name__ == "__main__":
    sys.exit(main())
