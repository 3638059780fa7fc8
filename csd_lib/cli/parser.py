"""The command line's argument table: every command, flag, choice and default.
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import config
from ..engine.plan import ENGINE_METHODS, TREE_METHODS
from ..engine.policy import CONFIDENCE, POLICIES
from ..families.family import FAMILIES
from ..families.tasks import SPLITS, TASKS
from ..measure.records import ALL_METHODS as BENCH_METHODS
from ..measure.records import DEFAULT_METHODS
from .args import (FileArg, batch_sizes, device_arg, file_args, finite_float, method_list, model_id, model_ids,
                   positive_float, positive_int, saturation_tokens, seed_int)
from .commands import cmd_bench, cmd_costs, cmd_demo, cmd_generate, cmd_predict, cmd_shadow, cmd_tune

DTYPES = sorted(config.DTYPES_BY_NAME)
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
# file arguments: what each file is to its command (checked by args.check_file_args before any work)
K_FILE = FileArg("in", path_of=lambda v: v[1:] if v.startswith("@") else None)  # JSON, or @FILE
COSTS_FILE = FileArg("in", path_of=lambda v: None if v == "none" else v)
ACCEPTANCE_FILE = FileArg("in", path_of=lambda v: None if v == "paper" else v)  # paper, FILE or rates


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
    p.add_argument("--target", type=model_id, default=None, metavar="ID",
                   help="your own target instead of --family: a hub id or local folder (seq2seq or causal)")
    p.add_argument("--drafters", type=model_ids, default=None, metavar="ID,ID",
                   help="with --target: drafters, largest first, sharing the target's tokenizer; MaG is added")
    p.add_argument("--device", type=device_arg, default=None,
                   help="torch device, e.g. cpu, cuda, cuda:1 (default: the policy's; tiny families stay on the CPU)")
    p.add_argument("--dtype", choices=DTYPES, default=None,
                   help="compute dtype (default: the policy's: bf16 on GPUs with compute capability >= 8.0, "
                        "fp16 on T4/V100, else fp32)")


def add_policy_args(p: argparse.ArgumentParser, which: str = "") -> None:
    """The draft-length policy (csd_lib.engine.policy): shared by generate and bench."""
    p.add_argument("--draft-policy", choices=POLICIES, default=None,
                   help=f"how far each level drafts per round{which}: 'fixed' (K as given, the default), 'schedule' "
                        f"(+2 after a fully accepted draft, -1 otherwise), 'confidence' (a drafter's draft ends at a "
                        f"token whose top-1 probability is below --confidence), 'ewif' (the length with the most "
                        f"expected tokens per cost from this generation's acceptance); K's row totals bound them")
    p.add_argument("--confidence", type=finite_float, default=None,
                   help=f"with --draft-policy confidence: the top-1 probability below which a draft ends "
                        f"(default: {CONFIDENCE})")


# long: the CLI's argument table, one add_argument per option of every command
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
    g.add_argument("--method", choices=ENGINE_METHODS, default="csd", help="decoding method")
    g.add_argument("--tree", default=None,
                   help="tree methods: the tree budget, most nodes per depth as JSON, e.g. '[2,2,1]' "
                        "(default: the method's)")
    g.add_argument("--branch-below", type=finite_float, default=None,
                   help="tree-sd, csd-tree: a drafter adds its second choice where its first has less "
                        "probability than this")
    g.add_argument("--k", type=K_FILE, default=None,
                   help="K matrix as JSON, e.g. '[[5,14,10],[0,1,10],[0,0,10]]', or @FILE.json (default: the family's)")
    g.add_argument("--lenience", type=finite_float, default=None,
                   help="lenience >= 1 of draft-to-draft reviews, csd only (default: the family's)")
    g.add_argument("--mag-lenience", choices=("paper", "lenient"), default=None,
                   help="csd only: 'paper' reviews MaG's tokens strictly (the paper's rule, the default), "
                        "'lenient' applies --lenience to them too")
    add_policy_args(g)
    g.add_argument("--temperature", type=finite_float, default=0.0, help="0 = greedy")
    g.add_argument("--seed", type=seed_int, default=None, help="sampling seed (default: a fresh random one)")
    g.add_argument("--max-new-tokens", type=positive_int, default=200, help="tokens to generate at most")
    g.add_argument("--prompt", default=None, help="the prompt text")
    g.add_argument("--prompts-file", type=FileArg("in"), default=None, help='JSONL file, one {"prompt": "..."} per line')
    g.add_argument("--batch-size", type=positive_int, default=None,
                   help="generate this many prompts at once (linear methods; row r samples with seed + r); "
                        "default: one at a time")
    g.add_argument("--json", action="store_true", help="one JSON object per prompt")
    g.add_argument("--events", action="store_true", help="with --json: include the review log")
    g.set_defaults(func=cmd_generate)

    d = command("demo", "AR vs SD vs CSD on the embedded family: identity, trace, speed")
    d.add_argument("--family", choices=FAMILIES, default=None,
                   help=f"model family (default: $CSD_FAMILY, else tiny-t5; now {config.FAMILY})")
    d.add_argument("--n", type=positive_int, default=5, help="number of prompts")
    d.add_argument("--max-new-tokens", type=positive_int, default=128, help="tokens to generate at most")
    d.set_defaults(func=cmd_demo)

    b = command("bench", "benchmark methods on a task; resumable JSONL")
    add_model_args(b)
    b.add_argument("--task", choices=TASKS, default="synth-gsm8k", help="task to draw prompts from")
    b.add_argument("--split", choices=SPLITS, default="test", help="task split")
    b.add_argument("--n", type=positive_int, default=50, help="number of examples")
    b.add_argument("--methods", type=method_list, default=",".join(DEFAULT_METHODS),
                   help=f"comma-separated, from {', '.join(BENCH_METHODS)}; ar always runs as the reference")
    b.add_argument("--k", type=K_FILE, default=None, help="K matrix for csd as JSON, or @FILE.json (default: the family's)")
    b.add_argument("--lenience", type=finite_float, default=None, help="lenience for csd (default: the family's)")
    b.add_argument("--mag-lenience", choices=("paper", "lenient"), default=None,
                   help="csd only: 'paper' reviews MaG's tokens strictly (the paper's rule, the default), "
                        "'lenient' applies the lenience to them too")
    b.add_argument("--sd-k", type=positive_int, default=None, help="draft length of sd (default: the family's)")
    add_policy_args(b, " (of every method that takes it; the others run K as given)")
    b.add_argument("--max-new-tokens", type=positive_int, default=128, help="tokens to generate per example")
    b.add_argument("--out", type=FileArg("inout", (".jsonl", ".json")), required=True,
                   help="results JSONL; resumed if it exists and holds the same run (family, task, split, "
                        "--max-new-tokens, --clock, each method's settings), refused if not")
    b.add_argument("--new-out", action="store_true",
                   help="when --out holds another run, write OUT-2.jsonl (the first free name) instead")
    b.add_argument("--summary-json", type=FileArg("out", (".json",)), default=None, help="write the summary as JSON")
    b.add_argument("--spec-bench-out", type=FileArg("folder"), default=None, metavar="DIR",
                   help="also write DIR/<method>.jsonl in Spec-Bench's answer format (one line per example: text, "
                        "new_tokens, wall_time, accept_lengths), from the results file (docs/REFERENCE.md)")
    b.add_argument("--spec-bench-questions", type=FileArg("in"), default=None, metavar="PATH",
                   help="with --task spec-bench: Spec-Bench's question.jsonl (default: "
                        "$CSD_DATA_DIR/spec_bench/question.jsonl; never downloaded)")
    b.add_argument("--plot", type=FileArg("out", (".html", ".htm")), default=None, help="write a bar chart as standalone HTML")
    b.add_argument("--threads", type=positive_int, default=None, help="torch threads (default: torch's choice)")
    b.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="what every time is read from: 'wall' time, or 'cpu': this process's CPU time, which "
                        "other jobs' preemption cannot inflate (needs --threads 1 on a CPU)")
    b.add_argument("--repeats", type=positive_int, default=1,
                   help="rounds per example; the summary keeps each method's fastest time")
    b.add_argument("--batch-size", type=batch_sizes, default=None, metavar="B,B",
                   help="run the prompts in batches of each of these sizes (e.g. 1,2,4,8,16,32; engine methods, no "
                        "trees above 1): tokens/s over the batch, per-row latency and the speedup over AR at the "
                        "same size; default: one prompt at a time, as without it")
    b.add_argument("--costs", type=COSTS_FILE, default=None, metavar="FILE|none",
                   help="cost model JSON for the predicted walltime speedup; 'none' skips the prediction and "
                        "its measurement (default: the stored cost model whose machine fingerprint matches "
                        "this run's, else one measured now into results/machines/: about 10 s, a few points on a "
                        "real family; a FILE given is used as is, with a note when its machine differs)")
    b.set_defaults(func=cmd_bench)

    co = command("costs", "measure a family's per-call cost model t(n, L) and store it")
    add_model_args(co)
    co.add_argument("--seconds", type=positive_float, default=20.0, help="measurement budget")
    co.add_argument("--threads", type=positive_int, default=1, help="torch threads (benchmarks use 1)")
    co.add_argument("--out", type=FileArg("out", (".json",)), default=None, help="cost model JSON to write (default: results/costs-<family>-<device>.json)")
    co.set_defaults(func=cmd_costs)

    tu = command("tune", "tune K, SD's k and the draft policy on this machine (validation split); generate, bench "
                         "and the demo then use them")
    tu.add_argument("--family", choices=FAMILIES, default=config.FAMILY, help="model family")
    tu.add_argument("--task", choices=TASKS, default=None,
                    help="task whose validation split is tuned on (default: the family's; never the test split)")
    tu.add_argument("--budget", type=positive_int, default=4, help="CSD configurations measured after the probes")
    tu.add_argument("--n", type=positive_int, default=4, help="validation prompts each configuration runs")
    tu.add_argument("--max-new-tokens", type=positive_int, default=64, help="tokens to generate per prompt")
    tu.add_argument("--threads", type=positive_int, default=1,
                    help="torch threads (part of the machine class; benchmarks use 1)")
    tu.add_argument("--out", type=FileArg("folder"), default=None, metavar="DIR",
                    help="store under DIR/<machine class>/<family>.json (default: $CSD_TUNED_DIR, else "
                         "~/.cache/csd-workbook/tuned)")
    tu.set_defaults(func=cmd_tune)

    sh = command("shadow", "write random-weight copies of the real checkpoints into a hub cache (test bed)")
    sh.add_argument("--out", type=FileArg("folder"), required=True, help="hub cache folder to write; then set HF_HUB_CACHE to it")
    which = sh.add_mutually_exclusive_group()
    which.add_argument("--presets", default=None,
                       help="comma-separated real presets (default: flan-t5-colab,flan-t5,vicuna)")
    which.add_argument("--ids", default=None, help="comma-separated repo ids with a stored config "
                       "(data/hf_configs), e.g. google/flan-t5-xl, instead of presets")
    sh.add_argument("--max-layers", type=positive_int, default=None,
                    help="cut every layer count to at most N (width and vocabulary stay real; default: full depth)")
    sh.set_defaults(func=cmd_shadow)

    pr = command("predict", "predict tokens/s and speedups of AR, SD and CSD on this device, before any download")
    pr.add_argument("--family", choices=FAMILIES, default=None,
                    help=f"model family (default: $CSD_FAMILY, else tiny-t5; now {config.FAMILY})")
    pr.add_argument("--acceptance", type=ACCEPTANCE_FILE, default="paper", metavar="paper|FILE|RATES",
                    help="acceptance profile: 'paper' (FLAN-T5, Fig. 2), a bench results JSONL of your runs, or "
                         "rates: one per drafter with MaG last (0.8,0.7,0.3) or pairs (target<-base=0.8,...); "
                         "a rate may be per-position rates joined by ':'")
    pr.add_argument("--target", type=model_id, default=None, metavar="ID",
                    help="your own target instead of --family: a hub id in the cache or a local folder (its "
                         "config.json only is read)")
    pr.add_argument("--drafters", type=model_ids, default=None, metavar="ID,ID", help="with --target: drafters, largest first")
    pr.add_argument("--device", type=device_arg, default=None, help="torch device (default: the best available)")
    pr.add_argument("--max-layers", type=positive_int, default=None,
                    help="measure real models at this depth and scale each call to the full depth "
                         "(default: full depth where memory allows; 2 on a CPU)")
    pr.add_argument("--costs", type=FileArg("in"), default=None, metavar="FILE",
                    help="price with this cost model JSON (python -m csd_lib costs --out) instead of measuring; "
                         "a note says how its machine fingerprint compares with this one")
    pr.add_argument("--max-new-tokens", type=positive_int, default=None,
                    help="tokens per generation priced (default: 128, or, when --acceptance names bench runs, each method's own runs' length)")
    pr.add_argument("--prompt-tokens", type=positive_int, default=100, help="prompt length priced")
    pr.add_argument("--seconds", type=positive_float, default=20.0, help="cost measurement budget")
    pr.add_argument("--threads", type=positive_int, default=1, help="torch threads on a CPU (benchmarks use 1)")
    pr.add_argument("--method", choices=TREE_METHODS, default=None,
                    help="rank this tree method's tree budgets instead: on --acceptance FILE's runs of it, or (no "
                         "--acceptance) the tuner probes the family on --task, prices every budget and measures the "
                         "best --measure against AR")
    pr.add_argument("--tree", action="append", default=None, metavar="JSON",
                    help="with --method: a tree budget to rank, most nodes per depth, e.g. '[2,2,2]'; repeat it "
                         "(default: the tuner's grid)")
    pr.add_argument("--task", choices=TASKS, default=None,
                    help="with --method and no --acceptance: the task whose validation split the probe runs "
                         "(default: the family's)")
    pr.add_argument("--n", type=positive_int, default=6, help="with --method: prompts the probe runs")
    pr.add_argument("--measure", type=int, default=2,
                    help="with --method and no --acceptance: best priced budgets measured against AR (0: none)")
    pr.add_argument("--batch-size", type=batch_sizes, default=None, metavar="B,B",
                    help="also predict AR, SD and CSD at these batch sizes (e.g. 1,2,4,8,16,32): tokens/s over the "
                         "batch, speedup over AR at the same B, and the crossover B where it falls to 1")
    pr.add_argument("--saturation", type=saturation_tokens, default=None, metavar="TOKENS",
                    help="with --batch-size: tokens a batched call feeds at one row's price (a GPU below "
                         "saturation; default 1: every token fed costs its share, as on a CPU)")
    pr.add_argument("--json", action="store_true", help="print the prediction as one JSON line")
    pr.add_argument("--out", type=FileArg("out", (".json", ".jsonl")), default=None, help="also write the prediction as JSON to this file")
    pr.set_defaults(func=cmd_predict)
    for c in sub.choices.values():
        c.set_defaults(file_args=file_args(c))  # every file argument, for the checks before any work
    return ap
