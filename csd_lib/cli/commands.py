"""One function per command of the command line; each gets the parsed arguments.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from functools import partial
from pathlib import Path

import torch

from .. import config
from ..engine.batch import check_linear, generate_batch
from ..engine.cascade import encode_prompt, generate
from ..engine.inputs import check_prompt_text
from ..engine.methods import REFERENCE, find
from ..engine.plan import (METHODS, check_lenience, check_max_new_tokens, check_method_args, check_policy_args,
                           check_temperature, check_tree_budget)
from ..families.shadow import DEFAULT_PRESETS, build_shadows, describe
from ..families.tasks import SPEC_BENCH, load_task, spec_bench_note
from ..families.family import load_family
from ..families.presets import TINY_PRESETS
from ..fileio import check_output_path, write_atomic
from ..measure.bench import (check_examples, duration, policy_methods, results_lock, resume_problem, run_bench,
                             setting_methods)
from ..measure.batch_bench import check_batch_sizes, run_batch_bench
from ..measure.records import DEFAULT_METHODS, is_baseline, read_records
from ..measure.specbench import write_spec_bench
from ..measure.acceptance import acceptance_table, complete_table
from ..price.batch import LINEAR, format_batches, predict_batches
from ..price.costmodel import CostModel
from ..price.costs import bench_costs, load_costs, measure_costs, read_cost_file, save_costs, stored_costs_for_run
from ..price.predict import (PRICED_TOKENS, acceptance_source, bench_prices, family_spec, format_budget_ranking,
                             format_device_prediction, generation_seconds, predict_for_device, rank_run_budgets,
                             read_acceptance_file)
from ..price.tune import tree_budget_grid, tune_tree
from ..price.tuned import estimate_seconds, save_tuned, tune_family, tuned_path, tuned_settings
from ..report.batches import batch_summary, batch_summary_json, format_batch_table
from ..report.summary import format_table, summarize, summary_json
from ..teach.demo import run_demo
from ..viz import bench_figure, trace_text
from .args import check_args_method, free_path, load_from_args, read_k, read_prompts

log = logging.getLogger(__name__)


def cmd_generate(args) -> None:
    if (args.prompt is None) == (args.prompts_file is None):
        raise ValueError("give exactly one of --prompt TEXT or --prompts-file F.jsonl")
    check_temperature(args.temperature)
    mag_lenience = None if args.mag_lenience is None else args.mag_lenience == "lenient"
    check_method_args(args.method, args.k, args.lenience, mag_lenience=mag_lenience)
    check_policy_args(args.method, args.draft_policy, args.confidence)
    k = read_k(args.k)
    tree = check_tree_budget(args.tree, args.method) if args.tree is not None else None  # before anything loads
    if args.batch_size is not None:
        check_linear(args.method)
    prompts = [args.prompt] if args.prompt is not None else read_prompts(args.prompts_file)
    for p in prompts:  # text that cannot be encoded is refused before anything loads
        check_prompt_text(p)
    check_args_method(args, [args.method])  # before anything loads: e.g. 'staged' needs two drafters
    note = None
    if _named_family(args):  # settings tuned for this machine class fill what was not given
        used, note = tuned_settings(_named_family(args), args.method, k=k, lenience=args.lenience,
                                    draft_policy=args.draft_policy, confidence=args.confidence)
        k, args.lenience, args.draft_policy, args.confidence = (used["k"], used["lenience"], used["draft_policy"],
                                                                used["confidence"])
    fam = load_from_args(args)
    for p in prompts:  # every prompt is checked before the first generation writes anything
        encode_prompt(fam, p)
    if fam.cpu_probe is not None:  # a hub family on the CPU: what this run will take, before it starts
        one, how = generation_seconds(fam, prompts, args.method, args.max_new_tokens, k)
        log.warning(f"generate: {len(prompts)} prompt(s) by {args.method} at {args.max_new_tokens} new tokens take "
                    f"about {duration(one * len(prompts))} here ({one:.3g} s each, {how})")
    settings = dict(k=k, lenience=args.lenience, temperature=args.temperature, seed=args.seed,
                    max_new_tokens=args.max_new_tokens, mag_lenience=mag_lenience, draft_policy=args.draft_policy,
                    confidence=args.confidence)
    if args.batch_size is not None:
        for row, g in enumerate(generate_batch(fam, prompts, args.method, args.batch_size, **settings)):
            _print_generation(args, fam, g, row)
    else:
        for p in prompts:
            _print_generation(args, fam, generate(fam, p, args.method, tree=tree, branch_below=args.branch_below,
                                                  **settings))
    if note:  # after the run, so that an error stays one line
        log.info(f"K, k and policy: {note}")


def _print_generation(args, fam, g, row: int | None = None) -> None:
    """One generation on stdout: a JSON line (``row``: its place in a batch) or its trace and counts."""
    if args.json:
        print(json.dumps({**({} if row is None else {"row": row}), **g.to_dict(events=args.events)}), flush=True)
        return
    print(trace_text(g, fam.tokenizer, color=config.color_for(sys.stdout)))  # no ANSI codes into a file
    s = g.stats
    print(f"{'' if row is None else f'[row {row}] '}[{g.method}] {s.n_tokens} tokens, {s.wall_time:.3f}s, "
          f"{s.tokens_per_target_call:.2f} tokens/target call, calls {s.calls}")


def cmd_demo(args) -> None:
    run_demo(args.family or config.FAMILY, n_prompts=args.n, max_new_tokens=args.max_new_tokens)


def _named_family(args) -> str | None:
    """The family a command names before it loads (``--family`` or the default), None for ``--target`` models."""
    return None if getattr(args, "target", None) else args.family or config.FAMILY


# long: every check before the family loads, then the priced run and its summary, in order
def cmd_bench(args) -> None:
    """Benchmark: every check first (arguments, files, the task's size), then the family, the run, the summary."""
    if args.batch_size is not None:
        return cmd_batch_bench(args)
    methods = args.methods.split(",")
    if args.lenience is not None:
        check_lenience(args.lenience)
    if args.clock == "cpu" and args.threads != 1:
        raise ValueError("--clock cpu needs --threads 1 (process CPU time adds up the work of every torch thread); "
                         "pass --threads 1, or use --clock wall")
    if args.clock == "cpu" and args.device is not None and torch.device(args.device).type != "cpu":
        raise ValueError(f"--clock cpu times work on the CPU only, not on --device {args.device}; use --clock wall")
    mag_lenience = None if args.mag_lenience is None else args.mag_lenience == "lenient"
    for flag, value in (("--k", args.k), ("--lenience", args.lenience), ("--mag-lenience", args.mag_lenience),
                        ("--sd-k", args.sd_k)):
        setting = flag.removeprefix("--").replace("-", "_")
        if value is not None and not setting_methods(setting, methods):
            users = " or ".join(setting_methods(setting))
            raise ValueError(f"{flag} is for {users}, which --methods {args.methods} does not run; add one to "
                             f"--methods or drop {flag}")
    check_max_new_tokens(args.max_new_tokens)
    policy = bench_policy(args, methods)
    args.k = read_k(args.k)
    cost_model = read_cost_file(args.costs, _named_family(args)) if args.costs not in (None, "none") else None
    out = Path(args.out)
    read_records(out)  # a results file to resume must be readable before any model loads
    if args.spec_bench_questions is not None and args.task != SPEC_BENCH:
        raise ValueError(f"--spec-bench-questions is read by --task {SPEC_BENCH}, not --task {args.task}; add "
                         f"--task {SPEC_BENCH} or drop it")
    examples = load_task(args.task, args.split, args.n, questions=args.spec_bench_questions)
    if args.task == SPEC_BENCH and spec_bench_note(_named_family(args)):
        print(f"note: {spec_bench_note(_named_family(args))}", file=sys.stderr)
    # before anything loads; bench itself skips a method ('staged') that needs more drafters than the family has
    check_args_method(args, [m for m in methods if m in METHODS and not find(m).skippable])
    if args.threads:
        torch.set_num_threads(args.threads)
    policy, note = bench_tuned(args, methods, policy)
    with results_lock(out):  # before any model loads: a second bench on this file is refused now
        fam = load_from_args(args)
        check_examples(fam, examples, args.max_new_tokens)  # before pricing and the first example
        if cost_model is not None and cost_model.family != fam.name:
            print(f"note: --costs {args.costs} was measured on {cost_model.family}, not {fam.name}; its predictions "
                  f"price {fam.name}'s calls at {cost_model.family}'s costs", file=sys.stderr)
        for m in [m for m in methods if find(m) and not find(m).runs_on(fam)]:
            print(f"note: family '{fam.name}' has one drafter; skipping '{m}'", file=sys.stderr)
            methods.remove(m)
        settings = dict(max_new_tokens=args.max_new_tokens, k=args.k, lenience=args.lenience, sd_k=args.sd_k,
                        split=args.split, mag_lenience=mag_lenience, clock=args.clock, policy=policy)
        problem = resume_problem(read_records(out), fam, examples, [REFERENCE, *methods], **settings)
        if problem and not args.new_out:
            raise ValueError(f"{out} holds another run's results ({problem}); run with its settings to resume it, "
                             f"or pass --new-out (or another --out) to start a new file")
        if problem:
            out = free_path(out)
            print(f"note: {args.out} holds another run's results ({problem}); writing {out}", file=sys.stderr)
        prices, how = bench_prices(fam, examples, [REFERENCE, *methods], args.max_new_tokens, k=args.k, lenience=args.lenience,
                                   sd_k=args.sd_k, mag_lenience=mag_lenience, cost_model=cost_model,
                                   records=read_records(out))
        log.info(f"bench: each run {how}")
        records = run_bench(fam, examples, methods, out, repeats=args.repeats, predicted=prices, **settings)
    cost_model, match = bench_costs(fam, args.costs, records=records)
    if args.costs not in (None, "none") and match.verdict != "match":
        print(f"note: --costs {args.costs} is used as given, but {match.describe()}", file=sys.stderr)
    asked = [r for r in records if r["example"] < args.n and r["method"] in (REFERENCE, *methods)]
    summary = summarize(asked, cost_model)
    if args.spec_bench_out:  # the text as the engine decodes it (Generation.text)
        decode = partial(fam.tokenizer.decode, skip_special_tokens=True)
        for path in write_spec_bench(asked, args.spec_bench_out, decode, fam.name):
            log.info(f"bench: wrote {path} (Spec-Bench answers)")
    print(format_table(summary))
    if args.summary_json:
        write_atomic(args.summary_json, json.dumps(summary_json(summary), indent=2) + "\n", "--summary-json")
    errs = [r for r in records if "error" in r]
    for r in errs[:5]:
        print(f"note: example {r['example']} method {r['method']} failed: {r['error']}", file=sys.stderr)
    if args.plot:
        write_atomic(args.plot, bench_figure(summary, title=f"{fam.name} on {args.task}")
                     .to_html(include_plotlyjs=True, full_html=True), "--plot")
    if note:  # after the run, so that an error stays one line
        log.info(f"K, k and policy: {note}")


BATCH_UNSUPPORTED = ("lenience", "mag_lenience", "draft_policy", "confidence", "spec_bench_out", "spec_bench_questions",
                     "plot", "new_out")


# long: every check before the family loads, then the run and its summary, in order
def cmd_batch_bench(args) -> None:
    """``bench --batch-size``: the checks first (sizes against --n, tree methods, flags a batch bench does not take),
    then the family, the batch bench (:func:`csd_lib.measure.batch_bench.run_batch_bench`) and its summary."""
    methods = [m for m in args.methods.split(",") if args.methods != ",".join(DEFAULT_METHODS) or not is_baseline(m)]
    given = [f"--{a.replace('_', '-')}" for a in BATCH_UNSUPPORTED if getattr(args, a, None) not in (None, False)]
    if args.repeats != 1:
        given.append("--repeats")
    if given:
        raise ValueError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} not taken with --batch-size (a batch "
                         f"bench runs each method's K as given, once): drop {'it' if len(given) == 1 else 'them'}")
    if any(is_baseline(m) for m in methods):
        raise ValueError(f"--batch-size runs the engine's methods; drop {', '.join(m for m in methods if is_baseline(m))} "
                         f"from --methods (transformers' baselines run one prompt at a time)")
    check_batch_sizes(args.batch_size, args.n, methods)
    if args.clock == "cpu" and args.threads != 1:
        raise ValueError("--clock cpu needs --threads 1 (process CPU time adds up the work of every torch thread); "
                         "pass --threads 1, or use --clock wall")
    check_max_new_tokens(args.max_new_tokens)
    args.k = read_k(args.k)
    cost_model = read_cost_file(args.costs, _named_family(args)) if args.costs not in (None, "none") else None
    out = Path(args.out)
    read_records(out)  # a results file to resume must be readable before any model loads
    examples = load_task(args.task, args.split, args.n)
    check_args_method(args, [m for m in methods if m in METHODS and not find(m).skippable])
    if args.threads:
        torch.set_num_threads(args.threads)
    with results_lock(out):
        fam = load_from_args(args)
        records = run_batch_bench(fam, examples, methods, out, args.batch_size, args.max_new_tokens, k=args.k,
                                  sd_k=args.sd_k, split=args.split, clock=args.clock)
    if cost_model is None and args.costs != "none":
        cost_model = stored_costs_for_run(fam.name, [r for r in records if r.get("batch_size") == 1]).cost_model
    summary = batch_summary([r for r in records if r["example"] < args.n], cost_model)
    print(format_batch_table(summary))
    if args.summary_json:
        write_atomic(args.summary_json, json.dumps(batch_summary_json(summary), indent=2) + "\n", "--summary-json")


def bench_policy(args, methods: list[str]) -> dict | None:
    """``bench --draft-policy`` and ``--confidence``, checked before anything loads: the policy the methods that take
    it run (a note names the others, which run K as given); None: K as given."""
    if args.draft_policy is None:
        check_policy_args("csd", None, args.confidence)  # a --confidence alone is refused
        return None
    check_policy_args("csd", args.draft_policy, args.confidence)
    takers = policy_methods(args.draft_policy, methods)
    if not takers:
        raise ValueError(f"--draft-policy {args.draft_policy} is for the methods that draft a chain (sd, mag, staged, "
                         f"csd); --methods {args.methods} runs none: add one or drop --draft-policy")
    others = [m for m in methods if m not in takers]
    if others:
        print(f"note: --draft-policy {args.draft_policy} applies to {', '.join(takers)}; {', '.join(others)} run K "
              f"as given", file=sys.stderr)
    return {"draft_policy": args.draft_policy, "confidence": args.confidence}


def bench_tuned(args, methods: list[str], policy: dict | None) -> tuple[dict | None, str | None]:
    """Fill the bench settings not given (``--k``, ``--lenience``, ``--sd-k``, the draft policy) from the settings
    tuned for this machine class (:func:`csd_lib.price.tuned.tuned_settings`); (the policy to run, the note saying
    which settings, logged once the run is done)."""
    if not _named_family(args):
        return policy, None
    used, note = tuned_settings(_named_family(args), "bench", k=args.k, lenience=args.lenience, sd_k=args.sd_k,
                                draft_policy=args.draft_policy, confidence=args.confidence)
    args.k, args.lenience, args.sd_k = used["k"], used["lenience"], used["sd_k"]
    if policy is None and used["draft_policy"] not in (None, "fixed") and policy_methods(used["draft_policy"], methods):
        return {"draft_policy": used["draft_policy"], "confidence": used["confidence"]}, note
    return policy, note


def cmd_tune(args) -> None:
    """Tune K, k and the draft policy on this machine (validation split) and store them by machine class."""
    task = args.task or _family_task(args.family)
    load_task(task, "val", args.n)  # a task without a validation split is refused before anything loads
    torch.set_num_threads(args.threads)
    root = Path(args.out) if args.out else None
    path = tuned_path(args.family, root=root)
    check_output_path(path, "--out" if args.out else "the tuned-settings folder (set CSD_TUNED_DIR or --out)")
    log.info(f"tune {args.family} on {task} (validation split, {args.n} prompts, {args.max_new_tokens} new tokens, "
             f"{args.budget} configurations): about "
             f"{duration(estimate_seconds(args.family, args.budget, args.n, args.max_new_tokens))} at this machine's load")
    fam = load_family(args.family)
    result = tune_family(fam, task, budget=args.budget, n=args.n, max_new_tokens=args.max_new_tokens)
    written = save_tuned(result, root)
    for name in ("csd", "sd"):
        r = result[name]
        print(f"{name}: K = {json.dumps(r['k'])}" + (f", lenience {r['lenience']}" if "lenience" in r else "")
              + f", policy {r['draft_policy']}" + (f" (threshold {r['confidence']})" if r["confidence"] else "")
              + f": {r['speedup']:.2f}x over AR ({r['fixed_speedup']:.2f}x fixed)")
    print(f"stored for machine class {result['machine_class']}: {written} ({duration(result['seconds'])})")


def _family_task(name: str) -> str:
    """A named family's own task without loading it: the embedded families' synth-gsm8k, the real ones' gsm8k."""
    return "synth-gsm8k" if name in TINY_PRESETS else "gsm8k"


def cmd_shadow(args) -> None:
    names = [n.strip() for n in (args.ids or args.presets or "").split(",") if n.strip()]
    if args.ids is not None:
        records = build_shadows(args.out, max_layers=args.max_layers, ids=names, verbose=False)
    else:
        presets = DEFAULT_PRESETS if args.presets is None else names
        records = build_shadows(args.out, presets, max_layers=args.max_layers, verbose=False)
    for rec in records:
        print(describe(rec), flush=True)
    print(f"use them with: HF_HUB_CACHE={args.out} HF_HUB_OFFLINE=1 (random weights: a test bed, not a model)")


def cmd_predict(args) -> None:
    if args.method is not None and args.batch_size is not None:
        raise ValueError(f"--batch-size predicts AR, SD and CSD; --method {args.method}'s tree budgets are priced at "
                         f"batch size 1 only: leave one out")
    if args.method is not None:
        return predict_trees(args)
    if args.tree:
        raise ValueError("--tree is a tree method's budget: give --method tree-sd, csd-tree or medusa with it")
    if args.saturation is not None and args.batch_size is None:
        raise ValueError("--saturation prices batched calls: give --batch-size with it")
    if args.device is None or torch.device(args.device).type == "cpu":
        torch.set_num_threads(args.threads)
    drafters = [d.strip() for d in (args.drafters or "").split(",") if d.strip()]
    if args.drafters is not None and args.target is None:
        raise ValueError("--drafters needs --target (your own target's hub id or folder)")
    if args.target is not None and args.family is not None:
        raise ValueError("give --family or --target/--drafters, not both")
    res = predict_for_device(_named_family(args), args.acceptance, device=args.device, max_layers=args.max_layers,
                             cost_file=args.costs, max_new_tokens=args.max_new_tokens,
                             prompt_tokens=args.prompt_tokens, seconds=args.seconds, target=args.target,
                             drafters=drafters, progress=True)
    if args.batch_size is not None:
        res["batch"] = _predict_batches(args, res)
    if args.out:
        write_atomic(args.out, json.dumps(res) + "\n", "--out")
    text = format_device_prediction(res) + ("\n" + format_batches(res["batch"]) if "batch" in res else "")
    print(json.dumps(res) if args.json else text, flush=True)


def _predict_batches(args, res: dict) -> dict:
    """``predict --batch-size``: the batch-1 prediction's cost model and acceptance (a results file's runs pooled)
    at each batch size, at the cache length it priced (:func:`csd_lib.price.batch.predict_batches`)."""
    cm = CostModel.from_dict(res["cost_model"])
    spec = family_spec(_named_family(args), args.target, [d.strip() for d in (args.drafters or "").split(",")
                                                         if d.strip()])
    levels = ["target", *spec["neural"], "mag"]
    table, recs, _ = acceptance_source(args.acceptance, levels, spec)
    if recs is not None:
        table = complete_table(acceptance_table([r.stats for r in recs if r.stats.get("acceptance")],
                                                min_reached=1), levels)
    L = (1.0 if spec["seq2seq"] else float(args.prompt_tokens)) + res["tokens"] / 2
    return predict_batches(cm, table, spec["neural"], args.batch_size, L, args.saturation or LINEAR)


def predict_trees(args) -> None:
    """``predict --method TREE``: rank tree budgets on a results file's per-branch rates (``--acceptance FILE``), or
    let the tuner probe the family, price every budget and measure the best (:func:`csd_lib.price.tune.tune_tree`)."""
    budgets = [check_tree_budget(t, args.method) for t in args.tree] if args.tree else None
    if args.measure < 0:
        raise ValueError(f"--measure is how many of the best priced budgets to measure, 0 or more; got {args.measure}")
    if args.target is not None and args.family is not None:
        raise ValueError("give --family or --target/--drafters, not both")
    cost_model = read_cost_file(args.costs, _named_family(args)) if args.costs else None
    if args.acceptance == "paper":
        rows, measured, best, source = _budgets_by_probe(args, budgets, cost_model)
    elif Path(args.acceptance).suffix in (".jsonl", ".json") or Path(args.acceptance).exists():
        rows, measured, best, source = _budgets_by_runs(args, budgets, cost_model)
    else:
        raise ValueError(f"--method {args.method}: a tree's rates come from runs; give --acceptance a bench results "
                         f"file of {args.method} runs, or leave --acceptance out to probe the family (the paper "
                         f"publishes no per-branch rates)")
    out = {"method": args.method, "source": source, "ranked": rows, "best": list(best or rows[0]["budget"]),
           "measured": {json.dumps(list(b)): v for b, v in measured.items()}}
    if args.out:
        write_atomic(args.out, json.dumps(out) + "\n", "--out")
    print(json.dumps(out) if args.json else format_budget_ranking(args.method, rows, source, measured, best),
          flush=True)


def _budgets_by_runs(args, budgets, cost_model) -> tuple[list[dict], dict, None, str]:
    """Budgets ranked on the ``--method`` runs of a results file, priced by ``cost_model`` or the family's committed
    one."""
    name = args.family or config.FAMILY
    recs = [r for r in read_acceptance_file(args.acceptance, name) if r.method == args.method]
    if not recs:
        raise ValueError(f"--acceptance {args.acceptance} holds no {args.method} runs; bench it with --methods "
                         f"{args.method}")
    cost_model = cost_model or load_costs(name, "cpu")
    if cost_model is None:
        raise ValueError(f"no committed cost model of {name} (results/costs-{name}-cpu.json): pass --costs FILE "
                         f"(python -m csd_lib costs --family {name} --out FILE)")
    rows = rank_run_budgets(recs, cost_model, budgets or tree_budget_grid(args.method))
    return rows, {}, None, f"the {args.method} runs in {args.acceptance}"


def _budgets_by_probe(args, budgets, cost_model) -> tuple[list[dict], dict, tuple, str]:
    """The tuner's ranking (:func:`csd_lib.price.tune.tune_tree`) on the family's ``--task`` validation prompts."""
    check_args_method(args, [args.method])  # before anything loads
    torch.set_num_threads(args.threads)
    fam = load_from_args(args)
    task = args.task or fam.task
    res = tune_tree(fam, task, args.method, budgets, measure=args.measure, n=args.n,
                    max_new_tokens=args.max_new_tokens or PRICED_TOKENS, cost_model=cost_model)
    source = f"a probe of {args.n} {task} validation prompts at budget {list(res.probe)}"
    return res.ranked, res.measured, res.best, source


def cmd_costs(args) -> None:
    """Measure a family's per-call cost model and store it (results/costs-<family>-<device>.json, or --out)."""
    if args.threads:
        torch.set_num_threads(args.threads)
    fam = load_from_args(args)
    t0 = time.perf_counter()
    cm = measure_costs(fam, seconds=args.seconds)
    path = save_costs(cm, args.out)
    log.info(f"measured in {time.perf_counter() - t0:.1f}s -> {path}")
    for r in cm.summary_rows():
        log.info(f"{r['model']:<8} a {r['a_ms']:.3f} ms  b {r['b_ms_per_token']:.4f} ms/token  "
                 f"c {r['c_ms_per_cached']:.5f} ms/cached  d {r['d_ms_per_token_cached']:.6f}  "
                 f"R² {r['r2']:.3f}  max rel err {100 * r['max_rel_err']:.1f}%  "
                 f"1 token {r['ms_1']:.2f} ms, 17 tokens {r['ms_17']:.2f} ms")
    log.info(f"review overhead: {1e3 * float(cm.review(1)):.3f} ms (1 row), {1e3 * float(cm.review(17)):.3f} ms "
             f"(17 rows); MaG proposal {1e3 * cm.mag:.3f} ms; start {({k: round(1e3 * v, 2) for k, v in cm.start.items()})} ms")
