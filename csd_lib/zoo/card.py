"""Re-measure a shipped family and write ``data/models/<family>-MODEL_CARD.md`` (+ ``-card.json``).

``python -m csd_lib.zoo card --family tiny-t5`` measures, for every model, the parameter
count, the greedy answer accuracy on the held-out synthetic test splits and the CPU
latency of one decode step; and, for every drafter, the per-position acceptance against
the target and against the next larger model (see :mod:`csd_lib.measure.curves`).
"""
from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

import torch

from csd_lib import config
from csd_lib.engine.methods import CSD, MAG_ALONE
from csd_lib.engine.models import cache_keyword
from csd_lib.families import tasks
from csd_lib.measure import curves
from csd_lib.zoo.recipes import FAMILY_RECIPES, family_models

TASK_NAMES = ("synth-gsm8k", "synth-mmlu")

# What happened during the shipped training runs (unless said otherwise: 2 shared CPU cores,
# one thread per run, bf16 autocast, batch 16, cosine schedule with 50 warm-up steps). The step budget was
# fitted to a deadline at each checkpoint, so the cosine schedule was resized on the way.
HISTORY = {
    "tiny-t5-target": "trained on one NVIDIA H200 (one CPU thread per run), all runs at 16x "
                      "(= d_model**0.5) the peak lr on the tied embedding (`emb_lr_mult`: a tied T5 "
                      "scales the decoder output by d_model**-0.5, so with one rate its output layer "
                      "learns 16x slower; on the CPU, ~420 steps each, val loss went 0.82 -> 0.72 -> "
                      "0.59 for x1, x4, x16). Four runs side by side under one deadline (steps, val "
                      "loss, accuracy on the first 100 synth-gsm8k validation examples): batch 16 lr "
                      "5e-4 2136, 0.233, 4%; batch 32 lr 7e-4 1885, 0.208, 10%; batch 64 lr 7e-4 "
                      "2476, 0.061, 65%; batch 128 lr 1e-3 2197, 0.119, 22%. Then batch 128 lr 7e-4: "
                      "2015 steps in 150 s, val loss 0.018, 88% validation accuracy; chosen on the "
                      "validation split and shipped. Before it, the best CPU run (batch 16, lr 5e-4, "
                      "6352 steps, 86 min) had val loss 0.152 and 21% synth-gsm8k test accuracy, and "
                      "the first one (one lr of 1e-3, 3539 steps) 0.65 and 3%.",
    "tiny-t5-base": "retrained from scratch (a first 796-step run reached val loss 0.59, worse than "
                    "the small drafter; the retrain reached 0.45 in 1477 steps), then continued with a "
                    "warm restart of the cosine schedule (peak 2e-3) up to the deadline. A later "
                    "continuation to 10500 steps (val loss 0.047) raised its accuracy on the first 100 "
                    "validation examples from 0.32 to 0.71 (synth-gsm8k) and 0.23 to 0.28 "
                    "(synth-mmlu, where small also scores 0.28: both pick the answer letter at about "
                    "chance); it is not shipped, because it would not separate base from small on "
                    "synth-mmlu and would push base's acceptance closer to the target's.",
    "tiny-t5-paper-base": "a fixed budget of 400 steps (batch 16, peak lr 2e-3, cosine to 10% after "
                          "50 warm-up steps: tiny-t5-base's shape and recipe, which trained 6000 steps), "
                          "in fp32 (this CPU has no AVX-512, and bf16 autocast made a step 10x slower). "
                          "The budget was chosen on the first 20 synth-gsm8k validation prompts from the "
                          "snapshots of an 800-step run (`train --snapshot-every 50`, then `python -m "
                          "csd_lib.zoo snapshots`), stopped after step 500: position-1 acceptance by the "
                          "target 0.50, 0.57, 0.64, 0.66, 0.69, 0.71, 0.73, 0.73, 0.75, 0.76 at steps "
                          "50, 100, ..., 500 (still at the peak lr); a finished schedule ends a little "
                          "higher than the snapshot at the same step, so 400 aims at the middle of "
                          "0.70-0.80.",
    "tiny-t5-paper-small": "a fixed budget of 300 steps (batch 16, peak lr 3e-3: tiny-t5-small's shape "
                           "and recipe, which trained 2305 steps), in fp32, chosen as for the base drafter from "
                           "the snapshots of an 800-step run: position-1 acceptance 0.38, 0.47, 0.50, "
                           "0.54, 0.58, 0.63, 0.67, 0.70, 0.70, 0.72, 0.74, 0.75, 0.75, 0.76, 0.76, 0.77 "
                           "at steps 50, 100, ..., 800. Per step it learns faster than the base drafter "
                           "at first (higher lr, fewer parameters), so its budget is the shorter one. A "
                           "first finished run of 250 steps measured 0.54 at position 1 on this card's "
                           "prompts, just under the 0.55 aimed at; the shipped run has 300.",
    "tiny-llama-target": "the step budget was resized to fit the deadline (1873 planned, then 1169, "
                         "then stretched again when the machine got less busy).",
}


# A paragraph under the card's introduction, for a family that needs one.
FAMILY_NOTES = {
    "tiny-t5-paper": "The paper-regime variant of tiny-t5: the same target (`tiny-t5-target`, "
                     "the same folder; its training is tiny-t5's) and tokenizer, with drafters of "
                     "tiny-t5-base's and tiny-t5-small's shapes trained for a few hundred steps only, so "
                     "that the target accepts the base drafter's first token about as often as "
                     "FLAN-T5-XXL accepts FLAN-T5-base's in the paper's Fig. 2 (0.7-0.8), the small "
                     "drafter's less often, and a 30-token draft almost never. tiny-t5's own drafters "
                     "agree with the target far more (position 1: 0.94 and 0.90), which makes SD with a "
                     "long draft strong already; here the paper's lessons (a horizontal cascade, MaG "
                     "below a drafter, CSD over SD) have room to show. MaG's bigram table is tiny-t5's "
                     "(same tokenizer, same corpus: `train` rebuilds it identically). `python -m "
                     "csd_lib.zoo train --family tiny-t5-paper` needs the target exported (its tokenizer "
                     "tokenizes the corpus) and trains the two drafters for the fixed step budgets of "
                     "`csd_lib/zoo/recipes.py`, on the CPU. The bands hold on synth-gsm8k; two "
                     "differences from the paper's curves: the conditional acceptance stays near 0.7 "
                     "(base) and 0.5 (small) at every position, so the unconditional curve is down to "
                     "0.1 by position 6 rather than by position 30; and on synth-mmlu, whose answers "
                     "are short and formulaic, the base drafter's position 1 is higher (0.85). The family's "
                     "default K, lenience and SD k (`data/tuned_presets.json`) are the best predicted on "
                     "synth-gsm8k validation prompts; the paper's Table 5 K is predicted slower than AR "
                     "here, because a drafter step on this CPU costs 1/3 to 1/5 of a target step, not "
                     "1/50 as on a GPU.",
}


def load_model(name: str, models_dir: Path = config.MODELS_DIR):
    """A shipped model (fp32, eval mode) and its tokenizer, offline."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, PreTrainedTokenizerFast
    path = Path(models_dir) / name
    if not (path / "config.json").is_file():
        raise ValueError(f"model {name!r} is not in {models_dir}; train it with "
                         f"`python -m csd_lib.zoo train --family ...`")
    cfg = json.loads((path / "config.json").read_text())
    cls = AutoModelForSeq2SeqLM if cfg.get("is_encoder_decoder") else AutoModelForCausalLM
    model = cls.from_pretrained(str(path), dtype=torch.float32).eval()
    return model, PreTrainedTokenizerFast.from_pretrained(str(path))


@torch.no_grad()
def step_latency(model, n_cache: int = 200, n_new: int = 1, n_prompt: int = 64,
                 warmup: int = 40, reps: int = 90, blocks: int = 3) -> float:
    """Seconds of one cached forward of ``n_new`` tokens with ``n_cache`` tokens cached (fp32).

    The smallest of ``blocks`` medians (of ``reps / blocks`` calls each) after ``warmup``
    calls, which is robust to other processes on a shared machine.
    """
    from transformers import DynamicCache, EncoderDecoderCache
    dev = next(model.parameters()).device
    g = torch.Generator(device=dev).manual_seed(0)
    V = model.config.vocab_size
    y = torch.randint(4, V, (1, n_cache), generator=g, device=dev)        # (1, n_cache)
    new = torch.randint(4, V, (1, n_new), generator=g, device=dev)        # (1, n_new)
    kw = cache_keyword(model)  # the KV cache's keyword in the installed transformers
    if model.config.is_encoder_decoder:
        enc = model.get_encoder()(input_ids=torch.randint(4, V, (1, n_prompt), generator=g, device=dev))
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        model(encoder_outputs=enc, decoder_input_ids=y, use_cache=True, **{kw: cache})
        call = lambda: model(encoder_outputs=enc, decoder_input_ids=new, use_cache=True, **{kw: cache})  # noqa: E731
    else:
        cache = DynamicCache(config=model.config)
        model(input_ids=y, use_cache=True, **{kw: cache})
        call = lambda: model(input_ids=new, use_cache=True, **{kw: cache})  # noqa: E731
    times = []
    for i in range(warmup + reps):
        t0 = time.perf_counter()
        call()
        dt = time.perf_counter() - t0
        cache.crop(-n_new)
        if i >= warmup:
            times.append(dt)
    per = max(1, len(times) // blocks)
    return min(statistics.median(times[i:i + per]) for i in range(0, len(times) - per + 1, per))


@torch.no_grad()
def greedy_accuracy(model, tokenizer, examples, max_new_tokens: int = 160, batch: int = 20) -> dict:
    """Share of examples whose greedy output has the right final answer (batched, padded)."""
    correct, outputs = 0, []
    encdec = model.config.is_encoder_decoder
    tokenizer.padding_side = "right" if encdec else "left"
    for i in range(0, len(examples), batch):
        chunk = examples[i:i + batch]
        enc = tokenizer([e.prompt for e in chunk], add_special_tokens=False, padding=True,
                        return_tensors="pt").to(model.device)
        gen = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                             eos_token_id=model.config.eos_token_id,
                             pad_token_id=model.config.pad_token_id)
        new = gen if encdec else gen[:, enc.input_ids.shape[1]:]
        for e, ids in zip(chunk, new):
            text = tokenizer.decode(ids, skip_special_tokens=True)
            outputs.append(text)
            correct += tasks.is_correct(text, e)
    return {"accuracy": correct / max(len(examples), 1), "n": len(examples), "sample": outputs[:2]}


def measure_family(family_name: str, n: int = 100, n_accept: int = 20, max_pos: int = 10,
                   models_dir: Path = config.MODELS_DIR) -> dict:
    """All the numbers of the card, as data."""
    names = family_models(family_name)
    loaded = [load_model(nm, models_dir) for nm in names]
    models, tok = [m for m, _ in loaded], loaded[0][1]
    result = {"family": family_name, "models": {}, "acceptance": {}, "torch_threads": torch.get_num_threads(),
              "machine": platform.processor() or platform.machine(), "measured_at": time.strftime(
                  "%Y-%m-%d %H:%M UTC", time.gmtime())}
    exs = {t: tasks.load_task(t, "test", n) for t in TASK_NAMES}
    for name, model in zip(names, models):
        meta_path = Path(models_dir) / name / "train_meta.json"
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        row = {"params": sum(p.numel() for p in {id(p): p for p in model.parameters()}.values()),
               "step1_ms": 1000 * step_latency(model, n_new=1),
               "step10_ms": 1000 * step_latency(model, n_new=10),
               "train": {k: meta.get(k) for k in ("step", "total_steps", "tokens", "target_tokens",
                                                  "elapsed_s", "val_loss", "loss_ema", "done", "size", "device")}}
        for t in TASK_NAMES:
            row[t] = greedy_accuracy(model, tok, exs[t])
        result["models"][name] = row
        print(f"{name}: {row['params'] / 1e6:.2f}M step1 {row['step1_ms']:.2f} ms "
              + " ".join(f"{t} {row[t]['accuracy']:.2f}" for t in TASK_NAMES), flush=True)
    for t in TASK_NAMES:
        prompts = [e.prompt for e in exs[t][:n_accept]]
        by_model = curves.family_curves(models, tok, prompts, names=names, max_new_tokens=128, max_pos=max_pos)
        result["acceptance"][t] = by_model
        for k, c in by_model.items():
            print(f"{t} {k}: " + " ".join(f"{u:.2f}" for u in c["unconditional"]), flush=True)
    return result


def snapshot_curves(family_name: str, name: str, task: str = "synth-gsm8k", split: str = "val",
                    n_prompts: int = 20, max_pos: int = 30, runs_dir: Path | None = None,
                    models_dir: Path = config.MODELS_DIR) -> list[dict]:
    """Acceptance by the family's target of each weight snapshot of drafter ``name``.

    The snapshots are ``runs/<name>/snap-<step>.pt`` (``train --snapshot-every N``); the
    prompts are the first ``n_prompts`` of ``task``'s ``split`` (validation by default, so
    that choosing a step budget never looks at the test prompts the card measures on).
    Returns one row per snapshot: step, unconditional curve, position 1 and ``max_pos``, alpha.
    """
    from csd_lib.zoo.recipes import make_model
    from csd_lib.zoo.train import RUNS_DIR
    if name not in family_models(family_name)[1:]:
        raise ValueError(f"{name!r} is not a drafter of {family_name}; use one of {family_models(family_name)[1:]}")
    snaps = sorted((Path(runs_dir or RUNS_DIR) / name).glob("snap-*.pt"))
    if not snaps:
        raise ValueError(f"no snapshots of {name} in {Path(runs_dir or RUNS_DIR) / name}; train with "
                         f"`python -m csd_lib.zoo train --family {family_name} --only {name} --snapshot-every N`")
    target, tok = load_model(FAMILY_RECIPES[family_name]["target"], models_dir)
    prompts = [e.prompt for e in tasks.load_task(task, split, n_prompts)]
    conts = curves.greedy_continuations(target, tok, prompts, max_new_tokens=128)
    rows = []
    for path in snaps:
        model = make_model(name)
        model.load_state_dict(torch.load(path))
        model.half().float().eval()  # as exported: fp16 weights, fp32 compute
        c = curves.acceptance_curve(model, target, tok, prompts, max_pos=max_pos, continuations=conts)
        rows.append({"step": int(path.stem.split("-")[1]), "unconditional": c["unconditional"],
                     "pos1": c["unconditional"][0], f"pos{max_pos}": c["unconditional"][-1],
                     "alpha": c["alpha"], "n_prompts": c["n_prompts"], "n_tokens": c["n_tokens"]})
    return rows


def _f(x, nd=2):
    return "-" if x is None or x != x else f"{x:.{nd}f}"


# long: the model card's Markdown template, section by section
def family_card_md(res: dict) -> str:
    """Markdown for a measured family."""
    fam = FAMILY_RECIPES[res["family"]]
    target = fam["target"]
    t_step = res["models"][target]["step1_ms"]
    L = [f"# {res['family']}: model card", "",
         f"An embedded family for the workbook: target `{target}` and drafters "
         f"{', '.join(f'`{d}`' for d in fam['drafters'])} (largest first), one shared byte-level BPE "
         "tokenizer (vocabulary 2048; ids 0 `<pad>`, 1 `</s>`, 2 `<unk>`, 3 `<s>`; no special token "
         "is added by the tokenizer). " + (
             "Encoder input = prompt tokens; the decoder starts from `<pad>` (as in T5)."
             if fam["arch"] == "t5" else "Input = prompt tokens, no BOS; the model continues with "
             "the solution and `</s>`."), "",
         "Weights are stored in fp16; `config.json` says `dtype: float32`, so "
         "`from_pretrained(path)` computes in fp32 (pass `dtype=torch.float32` to be explicit).", "",
         "Trained from scratch with `python -m csd_lib.zoo train --family "
         f"{res['family']}` on the synthetic `synth-gsm8k` + `synth-mmlu` training split (teacher "
         "forcing, loss on the solution tokens only, AdamW, bf16 autocast unless the training history "
         "says fp32; on a 2-core CPU unless "
         "the training history names a GPU). "
         f"Measured on {res['measured_at']} with {res['torch_threads']} torch thread(s) while the "
         "machine was shared, so treat latencies as ratios.", "",
         *([FAMILY_NOTES[res["family"]], ""] if res["family"] in FAMILY_NOTES else []),
         "## Sizes, training, accuracy, latency", "",
         "| model | params | d_model x layers | steps | target tokens | all tokens | train time | "
         "val loss | synth-gsm8k acc | synth-mmlu acc | step1 ms | step10 ms | target/step1 |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in res["models"].items():
        tr, sz = r["train"], r["train"].get("size") or {}
        L.append(f"| `{name}` | {r['params'] / 1e6:.2f}M | {sz.get('d_model', '?')} x "
                 f"{sz.get('num_layers', '?')}{'+' + str(sz.get('num_layers')) if fam['arch'] == 't5' else ''} | "
                 f"{tr.get('step')}/{tr.get('total_steps')} | {(tr.get('target_tokens') or 0) / 1e6:.2f}M | "
                 f"{(tr.get('tokens') or 0) / 1e6:.2f}M | {(tr.get('elapsed_s') or 0) / 60:.1f} min"
                 f"{'' if (tr.get('device') or 'cpu') == 'cpu' else ' (' + tr['device'] + ')'} | "
                 f"{_f(tr.get('val_loss'), 3)} | {r['synth-gsm8k']['accuracy']:.2f} | "
                 f"{r['synth-mmlu']['accuracy']:.2f} | {r['step1_ms']:.2f} | {r['step10_ms']:.2f} | "
                 f"{t_step / r['step1_ms']:.1f}x |")
    notes = [f"- `{n}`: {HISTORY[n]}" for n in res["models"] if n in HISTORY]
    if notes:
        L += ["", "Training history of the shipped weights:", "", *notes]
    n_acc = next(iter(res["models"].values()))["synth-gsm8k"]["n"]
    L += ["", f"Accuracy: greedy, first {n_acc} examples of each bundled test split "
          "(`data/tasks/`), final answer extracted with `tasks.answer_of`. Latency: one cached "
          "forward of 1 (step1) or 10 (step10) new tokens with 200 tokens in the cache, fp32, "
          "after 40 warm-up calls, the smallest of 3 medians of 30 calls.", "",
          "## Per-position acceptance (greedy, lenience 1)", "",
          "P(first i accepted) (unconditional) and P(i accepted | first i-1 accepted) "
          "(conditional), from every start position of the reviewer's greedy output "
          "(`csd_lib.acceptance`; positions only count starts with at least i tokens left). "
          "alpha is the geometric fit P = alpha^i.", ""]
    for t, by_model in res["acceptance"].items():
        K = len(next(iter(by_model.values()))["unconditional"])
        L += [f"### {t}", "", "| drafter -> reviewer | kind | " + " | ".join(str(i) for i in range(1, K + 1))
              + " | alpha |", "|---|---|" + "---|" * (K + 1)]
        for k, c in by_model.items():
            L.append(f"| `{k}` | uncond. | " + " | ".join(_f(u) for u in c["unconditional"])
                     + f" | {_f(c['alpha'])} |")
            L.append(f"| | cond. | " + " | ".join(_f(u) for u in c["conditional"]) + " | |")
        n_p = next(iter(by_model.values()))["n_prompts"]
        L += ["", f"({n_p} prompts, up to 128 new tokens.)", ""]
    L += [f"The acceptance numbers are also in `{res['family']}-card.json` (`acceptance`).", ""]
    L += ["## MaG accepted share by task", ""]
    rows = _mag_rows(res["family"])
    if rows:
        L += [f"From `results/{res['family']}-<task>.jsonl`, written by `bash scripts/run_benchmarks.sh` "
              f"(n = {rows[0]['n']} test prompts per task, greedy, 128 new tokens at most; see BENCHMARKS.md): the "
              "share of output tokens that MaG proposed and the target kept.", "",
              "| task | method `mag`: tokens from MaG | `mag`: tokens per target call | "
              "method `csd`: tokens from MaG (match / bigram) |", "|---|---|---|---|",
              *(r["row"] for r in rows), "",
              "Suffix matches supply " + "; ".join(f"{100 * r['match_fraction']:.0f}% of CSD's kept MaG "
                                                   f"tokens on {r['task']}" for r in rows)
              + " (a solution that copies numbers and phrases from its question gives MaG more to match; "
              "the bigram fallback supplies the rest).", ""]
    else:
        L += ["No benchmark results yet: run `bash scripts/run_benchmarks.sh`, then this command.", ""]
    K = len(next(iter(next(iter(res["acceptance"].values())).values()))["unconditional"])
    L += ["## Re-measure", "", f"`python -m csd_lib.zoo card --family {res['family']}"
          f"{'' if K == 10 else f' --max-pos {K}'}`", ""]
    return "\n".join(L)


def _mag_rows(family_name: str, results_dir: Path = config.RESULTS_DIR) -> list[dict]:
    """Per task with benchmark records: n, the markdown row of MaG's kept share, and the part
    of CSD's kept MaG tokens that came from suffix matches."""
    from csd_lib.measure.records import read_records
    from csd_lib.report.summary import mag_share, summarize
    rows = []
    for t in TASK_NAMES:
        recs = read_records(Path(results_dir) / f"{family_name}-{t}.jsonl")
        if not {MAG_ALONE.name, CSD.name} <= {r["method"] for r in recs}:
            continue
        s = summarize(recs)
        csd, match, bigram = (mag_share(recs, "csd", kinds) for kinds in
                              (("mag-match", "mag-bigram"), ("mag-match",), ("mag-bigram",)))
        rows.append({"task": t, "n": s["mag"]["n"], "match_fraction": match / csd if csd else float("nan"),
                     "row": f"| {t} | {100 * mag_share(recs, 'mag'):.1f}% | "
                            f"{_f(s['mag']['mean_tokens_per_target_call'])} | {100 * csd:.1f}% "
                            f"({100 * match:.1f}% / {100 * bigram:.1f}%) |"})
    return rows


def write_card(family_name: str, n: int = 100, n_accept: int = 20, max_pos: int = 10,
               models_dir: Path = config.MODELS_DIR):
    """Measure, print and write the card and its JSON (acceptance to position ``max_pos``)."""
    if family_name not in FAMILY_RECIPES:
        raise ValueError(f"unknown family {family_name!r}; use one of {sorted(FAMILY_RECIPES)}")
    res = measure_family(family_name, n=n, n_accept=n_accept, max_pos=max_pos, models_dir=models_dir)
    md = family_card_md(res)
    (Path(models_dir) / f"{family_name}-MODEL_CARD.md").write_text(md)
    (Path(models_dir) / f"{family_name}-card.json").write_text(json.dumps(res, indent=1) + "\n")
    print(md)
    return res
