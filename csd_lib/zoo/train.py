"""Training of the tiny families: data, resumable training loop, HF export.

``python -m csd_lib.zoo train --family tiny-t5`` prepares the shared tokenizer and the
tokenized corpus once (under ``runs/``), then trains each model of the family in turn,
smallest first, and exports it to ``data/models/<name>/``. Re-running the same command
resumes from the last checkpoint; a model already exported is skipped.
"""
from __future__ import annotations

import json
import math
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch

from csd_lib import config
from csd_lib.engine.mag import build_bigram
from csd_lib.families import tasks
from csd_lib.zoo.recipes import EOS_ID, FAMILY_RECIPES, PAD_ID, PRESETS, family_models, make_model, recipe
from csd_lib.zoo.tokenizer import load_tokenizer, train_tokenizer

RUNS_DIR = config.REPO_ROOT / "runs"
N_PER_TASK = 40_000          # training examples per synthetic task
WARMUP_STEPS = 50
MIN_LR_FRAC = 0.1


def _say(*parts) -> None:
    """Training progress and notes: diagnostics, so on stderr (stdout is for results)."""
    print(*parts, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- data
def prepare(runs_dir: Path = RUNS_DIR, n_per_task: int = N_PER_TASK, vocab_size: int = 2048,
            tokenizer_dir: Path | None = None):
    """Train the shared tokenizer and tokenize the corpus once; returns (tokenizer, data).

    ``tokenizer_dir`` (a shipped model folder) reuses that model's tokenizer instead of
    training one, so new models share its token ids; a prepared ``runs_dir`` whose
    tokenizer differs from it is an error.
    """
    runs_dir = Path(runs_dir)
    tok_dir, data_path = runs_dir / "tokenizer", runs_dir / "corpus.pt"
    if tok_dir.is_dir() and data_path.is_file():
        tok = load_tokenizer(tok_dir)
        if tokenizer_dir is not None and tok.get_vocab() != load_tokenizer(tokenizer_dir).get_vocab():
            raise ValueError(f"the tokenizer prepared in {tok_dir} differs from {tokenizer_dir}'s; "
                             f"move {runs_dir} aside (it is scratch space) and run again")
        return tok, torch.load(data_path)
    runs_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    train = tasks.corpus("train", n_per_task)
    val = tasks.corpus("val", 100)
    if tokenizer_dir is not None:
        tok = load_tokenizer(tokenizer_dir)
    else:
        texts = [t for ex in train for t in (ex.prompt, ex.reference)]
        # Real GSM8K/MMLU text (when CSD_DATA_DIR is set) fills the vocabulary past what the
        # small synthetic language needs, so real prompts also tokenize sensibly.
        if config.data_dir() is not None:
            for name, split in (("gsm8k", "train"), ("mmlu", "test")):
                texts += [t for ex in tasks.load_task(name, split) for t in (ex.prompt, ex.reference)]
        else:
            _say("prepare: CSD_DATA_DIR is not set; the tokenizer sees synthetic text only")
        tok = train_tokenizer(texts, vocab_size)
    if len(tok) < vocab_size:
        _say(f"prepare: the tokenizer has {len(tok)} < {vocab_size} tokens; the models keep "
              f"vocab_size={vocab_size} (the extra rows are never produced)")
    for ex in val[:50]:
        for text in (ex.prompt, ex.reference):
            assert tok.decode(tok.encode(text)) == text, text
    tok.save_pretrained(str(tok_dir))

    def enc(exs):
        p = tok([e.prompt for e in exs], add_special_tokens=False)["input_ids"]
        r = tok([e.reference for e in exs], add_special_tokens=False)["input_ids"]
        return {"prompt": p, "reference": r, "task": [e.task for e in exs]}

    data = {"train": enc(train), "val": enc(val), "n_per_task": n_per_task}
    torch.save(data, data_path)
    _say(f"prepared tokenizer + {len(train)} training examples in {time.time() - t0:.1f}s")
    return tok, data


def make_batch(arch: str, prompts: list[list[int]], refs: list[list[int]]) -> dict:
    """Padded tensors with the loss on the reference tokens (and the final ``</s>``) only."""
    if arch == "t5":
        ml = max(len(p) for p in prompts)
        tl = max(len(r) for r in refs) + 1
        ids = torch.full((len(prompts), ml), PAD_ID)
        att = torch.zeros((len(prompts), ml), dtype=torch.long)
        lab = torch.full((len(prompts), tl), -100)
        for i, (p, r) in enumerate(zip(prompts, refs)):
            ids[i, :len(p)] = torch.tensor(p)
            att[i, :len(p)] = 1
            lab[i, :len(r) + 1] = torch.tensor(r + [EOS_ID])
        return {"input_ids": ids, "attention_mask": att, "labels": lab}  # (B, S), (B, S), (B, T)
    seqs = [p + r + [EOS_ID] for p, r in zip(prompts, refs)]
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), PAD_ID)
    att = torch.zeros((len(seqs), L), dtype=torch.long)
    lab = torch.full((len(seqs), L), -100)
    for i, (p, s) in enumerate(zip(prompts, seqs)):
        ids[i, :len(s)] = torch.tensor(s)
        att[i, :len(s)] = 1
        lab[i, len(p):len(s)] = torch.tensor(s[len(p):])
    return {"input_ids": ids, "attention_mask": att, "labels": lab}  # (B, L) each


def n_params(model) -> int:
    """Distinct parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


# --------------------------------------------------------------------------- training
def fast_bf16(device) -> bool:
    """Whether bf16 autocast speeds training up: on an accelerator or an AVX-512 CPU (on an
    AVX2-only CPU bf16 is emulated: a tiny-t5-base step took 8 s instead of 0.8 s)."""
    return device.type != "cpu" or torch.backends.cpu.get_cpu_capability().startswith("AVX512")


def _lr(step: int, total: int | None, peak: float) -> float:
    if step < WARMUP_STEPS:
        return peak * (step + 1) / WARMUP_STEPS
    if not total:
        return peak
    frac = min(1.0, (step - WARMUP_STEPS) / max(1, total - WARMUP_STEPS))
    return peak * (MIN_LR_FRAC + (1 - MIN_LR_FRAC) * 0.5 * (1 + math.cos(math.pi * frac)))


def _param_groups(model, emb_lr_mult: float) -> list[dict]:
    """AdamW groups: the input/output embedding gets ``emb_lr_mult`` times the learning rate.

    A tied T5 multiplies the decoder output by d_model**-0.5 before the shared embedding,
    so with one learning rate its output layer learns that many times slower than a Llama's.
    """
    emb = model.get_input_embeddings().weight
    rest = [p for p in model.parameters() if p is not emb]
    return [{"params": rest, "lr_mult": 1.0}, {"params": [emb], "lr_mult": emb_lr_mult}]


def _save_ckpt(path: Path, model, opt, state: dict):
    tmp = path.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "optim": opt.state_dict(), **state,
                "rng": {"torch": torch.get_rng_state(), "python": random.getstate(),
                        "numpy": np.random.get_state()}}, tmp)
    tmp.replace(path)


# what a checkpoint keeps of the training state (the RNG states and weights besides)
CKPT_KEYS = ("step", "total_steps", "budget_steps", "tokens", "target_tokens", "elapsed_s", "loss_ema", "done",
             "batch", "peak_lr", "emb_lr_mult", "bf16")


def _resume(name: str, ckpt_path: Path, model, opt, state: dict, steps: int | None, seed: int) -> None:
    """Load ``ckpt_path`` into model, optimizer, ``state`` and the RNGs if it exists, else seed the RNGs."""
    if not ckpt_path.is_file():
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed)
        return
    ck = torch.load(ckpt_path, weights_only=False)
    model.load_state_dict(ck["model"])
    if len(ck["optim"]["param_groups"]) == len(opt.param_groups):
        opt.load_state_dict(ck["optim"])
    else:  # a checkpoint from before the embedding group existed
        _say(f"{name}: optimizer layout changed; Adam moments start afresh")
    state.update({k: ck[k] for k in state if k in ck})
    # an explicit ``steps`` raises the budget of a resumed run (the schedule stretches,
    # and a finished run continues: a warm restart of the cosine schedule)
    state["budget_steps"] = max(steps or 0, ck.get("budget_steps") or ck["total_steps"] or 0) or None
    if steps and steps > (state["total_steps"] or 0):
        state["total_steps"], state["done"] = steps, False
    torch.set_rng_state(ck["rng"]["torch"])
    random.setstate(ck["rng"]["python"])
    np.random.set_state(ck["rng"]["numpy"])
    _say(f"{name}: resumed at step {state['step']}/{state['total_steps']}")


def _train_step(model, opt, data: dict, state: dict, batch: int, peak: float, device, bf16: bool) -> None:
    """One optimizer step on a random batch of the training split; counts tokens and the loss EMA."""
    arch = model.config.model_type
    P, R = data["train"]["prompt"], data["train"]["reference"]
    step = state["step"]
    idx = [random.randrange(len(P)) for _ in range(batch)]
    b = {k: v.to(device) for k, v in make_batch(arch, [P[i] for i in idx], [R[i] for i in idx]).items()}
    for g in opt.param_groups:
        g["lr"] = _lr(step, state["total_steps"], peak) * g["lr_mult"]
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        loss = model(**b).loss  # bf16 matmuls where fast (1.5x on an AVX-512 CPU), fp32 weights
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    state["step"] = step + 1
    state["tokens"] += int(b["attention_mask"].sum()) + (int((b["labels"] != -100).sum())
                                                         if arch == "t5" else 0)
    state["target_tokens"] += int((b["labels"] != -100).sum())
    lv = loss.detach().item()
    state["loss_ema"] = lv if state["loss_ema"] is None else 0.98 * state["loss_ema"] + 0.02 * lv


def _fit_to_stop(name: str, state: dict, stop_at: float, per_step: float, bar) -> None:
    """Deadline-aware budget: fit the schedule to the steps that can end before the stop time (never
    past the budget), as the shared machine speeds up or slows down."""
    fits = state["step"] + int((stop_at - time.time() - 30) / per_step)
    new_total = max(state["step"] + 1, min(fits, state["budget_steps"] or fits))
    if abs(new_total - state["total_steps"]) > 0.02 * state["total_steps"]:
        state["total_steps"] = new_total
        bar.total = state["total_steps"]
        _say(f"\n{name}: {per_step:.2f} s/step; step budget set to "
              f"{state['total_steps']} to end before the stop time")


def _train_loop(name: str, model, opt, data: dict, state: dict, run: dict, ckpt_path: Path, *, device, minutes,
                stop_at, ckpt_every_s, progress, snapshot_every) -> None:
    """Steps until the budget or the stop time, checkpointing every ``ckpt_every_s`` seconds."""
    from tqdm.auto import tqdm
    model.train()
    t_start, t_ckpt = time.time(), time.time()
    elapsed0 = state["elapsed_s"]
    bar = tqdm(total=state["total_steps"], initial=state["step"], desc=name, disable=not progress,
               mininterval=10)
    t5_mark, step_ckpt = None, state["step"]
    while state["total_steps"] is None or state["step"] < state["total_steps"]:
        _train_step(model, opt, data, state, run["batch"], run["peak_lr"], device, run["bf16"])
        state["elapsed_s"] = elapsed0 + time.time() - t_start
        if snapshot_every and state["step"] % snapshot_every == 0:
            torch.save(model.state_dict(), ckpt_path.parent / f"snap-{state['step']:06d}.pt")
        bar.update(1)
        bar.set_postfix(loss=f"{state['loss_ema']:.3f}", refresh=False)
        if state["total_steps"] is None:  # a minutes budget: steps from the time of steps 5..20
            if state["step"] == 5:
                t5_mark = time.time()
            elif state["step"] == 20:
                per_step = (time.time() - t5_mark) / 15
                state["total_steps"] = max(WARMUP_STEPS + 10, int(minutes * 60 / per_step))
                state["budget_steps"] = state["total_steps"]
                bar.total = state["total_steps"]
                _say(f"\n{name}: {per_step:.3f} s/step -> {state['total_steps']} steps "
                      f"for {minutes} min")
        if time.time() - t_ckpt > ckpt_every_s:
            if stop_at is not None and state["total_steps"]:
                _fit_to_stop(name, state, stop_at, (time.time() - t_ckpt) / max(1, state["step"] - step_ckpt), bar)
            _save_ckpt(ckpt_path, model, opt, state)
            t_ckpt, step_ckpt = time.time(), state["step"]
            _say(f"\n{name}: step {state['step']}/{state['total_steps']} loss {state['loss_ema']:.3f} "
                  f"tokens {state['tokens']} elapsed {state['elapsed_s']:.0f}s")
        if stop_at is not None and time.time() > stop_at:
            _say(f"\n{name}: stop time reached at step {state['step']}; stopping early")
            state["stopped_early"] = True
            break
    bar.close()


def train_model(name: str, data: dict, work_dir: Path, *, steps: int | None = None,
                minutes: float | None = None, batch: int | None = None, lr: float | None = None,
                stop_at: float | None = None, ckpt_every_s: float = 120.0, seed: int = 0,
                device=None, overrides: dict | None = None, progress: bool = True,
                bf16: bool | None = None, snapshot_every: int | None = None):
    """Train (or resume) one model; returns (model, meta dict).

    The step budget is ``steps`` if given (or the preset's), else ``minutes`` converted into
    steps from the time per step measured over steps 5..20. ``stop_at`` (a ``time.time()``)
    ends the run early, with a checkpoint, whatever the budget; at each checkpoint the step
    budget shrinks (cosine schedule included) if the remaining steps would not end before it.
    ``bf16`` runs the forward under bf16 autocast (weights and optimizer stay fp32); by
    default only where bf16 is fast (``fast_bf16``). ``snapshot_every`` saves the weights
    every that many steps to ``work_dir/snap-<step>.pt`` (for ``card.snapshot_curves``).
    """
    device = config.pick_device(device)
    bf16 = fast_bf16(device) if bf16 is None else bf16
    preset = {**(recipe(name, device.type) if name in PRESETS else {}), **(overrides or {})}
    batch = batch or preset.get("batch", 16)
    peak = lr or preset.get("lr", 1e-3)
    minutes = minutes if minutes is not None else preset.get("minutes", 5)
    steps = steps if steps is not None else preset.get("steps")
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path = work_dir / "ckpt.pt"

    model = make_model(name, seed=seed, **(overrides or {})).to(device)
    opt = torch.optim.AdamW(_param_groups(model, preset.get("emb_lr_mult", 1.0)), lr=peak,
                            betas=(0.9, 0.98), weight_decay=0.01)
    run = {"batch": batch, "peak_lr": peak, "emb_lr_mult": preset.get("emb_lr_mult", 1.0), "bf16": bf16}
    state = {"step": 0, "total_steps": steps, "budget_steps": steps, "tokens": 0, "target_tokens": 0,
             "elapsed_s": 0.0, "loss_ema": None, "done": False, **run}
    _resume(name, ckpt_path, model, opt, state, steps, seed)
    if state["done"]:
        state["val_loss"] = val_loss(model, data, model.config.model_type)
        return model, state
    state.update(run)  # what this run trains with (a resumed run may change device)
    _train_loop(name, model, opt, data, state, run, ckpt_path, device=device, minutes=minutes, stop_at=stop_at,
                ckpt_every_s=ckpt_every_s, progress=progress, snapshot_every=snapshot_every)
    state["done"] = not state.get("stopped_early", False)
    _save_ckpt(ckpt_path, model, opt, {k: state[k] for k in CKPT_KEYS})
    state["val_loss"] = val_loss(model, data, model.config.model_type)
    _say(f"{name}: finished step {state['step']} loss_ema {state['loss_ema']:.3f} "
          f"val_loss {state['val_loss']:.3f} in {state['elapsed_s']:.0f}s")
    return model, state


@torch.no_grad()
def val_loss(model, data: dict, arch: str, n: int = 128, batch: int = 32) -> float:
    """Mean per-token loss on the validation references."""
    model.eval()
    P, R = data["val"]["prompt"][:n], data["val"]["reference"][:n]
    tot, cnt = 0.0, 0
    dev = next(model.parameters()).device
    for i in range(0, len(P), batch):
        b = {k: v.to(dev) for k, v in make_batch(arch, P[i:i + batch], R[i:i + batch]).items()}
        k = int((b["labels"] != -100).sum())
        tot += float(model(**b).loss) * k
        cnt += k
    model.train()
    return tot / max(cnt, 1)


# --------------------------------------------------------------------------- export
def export_model(model, tokenizer, out_dir: Path, meta: dict, fp16: bool = True):
    """Save in HF format (fp16 weights, config dtype float32 so a plain load gives fp32)."""
    import copy

    from transformers import GenerationConfig
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    m = copy.deepcopy(model).to("cpu").eval()
    if fp16:
        m = m.half()
    m.generation_config = GenerationConfig(
        eos_token_id=EOS_ID, pad_token_id=PAD_ID,
        **({"decoder_start_token_id": PAD_ID} if m.config.model_type == "t5" else {}),
        do_sample=False, max_new_tokens=200)
    m.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    cfg_path = out_dir / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["dtype"] = "float32"  # weights are stored in fp16; compute in fp32 by default
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (out_dir / "train_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def write_family_manifest(family_name: str, models_dir: Path = config.MODELS_DIR) -> Path:
    """data/models/<family>.json: arch, target, drafters largest first."""
    path = Path(models_dir) / f"{family_name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(FAMILY_RECIPES[family_name], indent=2) + "\n")
    return path


def write_bigram(family_name: str, data: dict, vocab_size: int, models_dir: Path = config.MODELS_DIR) -> Path:
    """data/models/<family>-bigram.npy from the tokenized training corpus (prompts and references)."""
    tr = data["train"]
    seqs = [p + r + [EOS_ID] for p, r in zip(tr["prompt"], tr["reference"])]
    table = build_bigram(seqs, vocab_size)
    path = Path(models_dir) / f"{family_name}-bigram.npy"
    np.save(path, table)
    return path


def _meta(name: str, model, data: dict, state: dict, **extra) -> dict:
    """train_meta.json of an exported model: its preset, size, training state and ``extra``.

    ``state`` overrides the CPU recipe's batch and lr with what the run used, when it says."""
    p, cpu = PRESETS[name], recipe(name)
    return {"name": name, "arch": p["arch"], "params": n_params(model),
            "size": {k: p[k] for k in ("d_model", "num_layers", "num_heads", "d_ff")},
            "batch": cpu["batch"], "peak_lr": cpu["lr"], "emb_lr_mult": cpu["emb_lr_mult"], **state,
            "n_train_examples": len(data["train"]["prompt"]), **extra}


def target_tokenizer_dir(family_name: str, models_dir: Path = config.MODELS_DIR) -> Path | None:
    """The exported target's folder when there is one: new drafters must share its token ids."""
    path = Path(models_dir) / FAMILY_RECIPES[family_name]["target"]
    return path if (path / "tokenizer.json").is_file() else None


def train_family(family_name: str, *, minutes: dict | None = None, steps: dict | None = None,
                 stop_at: float | None = None, only: str | None = None, restart: bool = False,
                 snapshot_every: int | None = None, runs_dir: Path = RUNS_DIR,
                 models_dir: Path = config.MODELS_DIR):
    """Train every model of a family, smallest first, exporting each when it finishes.

    ``restart`` (with ``only``) trains that model again from scratch: its old run folder
    is moved aside to ``runs/<name>.old`` and its export is replaced at the end. When the
    target is already exported (a family that reuses another's target), the corpus is
    tokenized with the target's tokenizer. ``snapshot_every``: see ``train_model``.
    """
    if restart and not only:
        raise ValueError("restart needs only=<model name>")
    family_models(family_name)  # raises on an unknown family
    tok, data = prepare(runs_dir, tokenizer_dir=target_tokenizer_dir(family_name, models_dir))
    models_dir = Path(models_dir)
    write_family_manifest(family_name, models_dir)
    write_bigram(family_name, data, len(tok), models_dir)
    for name in reversed(family_models(family_name)):
        if only and name != only:
            continue
        if restart and not (Path(runs_dir) / name / ".restarted").is_file():
            old_dir = Path(runs_dir) / f"{name}.old"
            if old_dir.exists():
                shutil.rmtree(old_dir)
            if (Path(runs_dir) / name).exists():
                (Path(runs_dir) / name).rename(old_dir)
            (Path(runs_dir) / name).mkdir(parents=True)
            (Path(runs_dir) / name / ".restarted").touch()
        elif not restart and (models_dir / name / "train_meta.json").is_file() and \
                json.loads((models_dir / name / "train_meta.json").read_text()).get("done"):
            _say(f"{name}: already exported; skipping")
            continue
        model, state = train_model(name, data, Path(runs_dir) / name,
                                   steps=(steps or {}).get(name),
                                   minutes=(minutes or {}).get(name), stop_at=stop_at,
                                   snapshot_every=snapshot_every)
        meta = _meta(name, model, data, {k: v for k, v in state.items() if not k.startswith("_")},
                     device=str(next(model.parameters()).device), torch_threads=torch.get_num_threads())
        export_model(model, tok, models_dir / name, meta)
        _say(f"{name}: exported to {models_dir / name}")


def export_latest(family_name: str, runs_dir: Path = RUNS_DIR, models_dir: Path = config.MODELS_DIR):
    """Export the latest checkpoint of every model of a family, finished or not."""
    tok, data = prepare(runs_dir, tokenizer_dir=target_tokenizer_dir(family_name, models_dir))
    write_family_manifest(family_name, models_dir)
    write_bigram(family_name, data, len(tok), models_dir)
    for name in family_models(family_name):
        ck_path = Path(runs_dir) / name / "ckpt.pt"
        if not ck_path.is_file():
            _say(f"{name}: no checkpoint in {ck_path.parent}; skipping")
            continue
        ck = torch.load(ck_path, weights_only=False)
        model = make_model(name)
        model.load_state_dict(ck["model"])
        state = {k: ck[k] for k in ("step", "total_steps", "tokens", "target_tokens", "elapsed_s",
                                    "loss_ema", "done", "batch", "peak_lr", "emb_lr_mult") if k in ck}
        state["val_loss"] = val_loss(model, data, model.config.model_type)
        meta = _meta(name, model, data, state, exported_from_checkpoint=True)
        export_model(model, tok, Path(models_dir) / name, meta)
        _say(f"{name}: exported step {state['step']}/{state['total_steps']} "
              f"(val_loss {state['val_loss']:.3f})")


def bench_speed(names=None, steps: int = 8):
    """Seconds per training step and tokens/s of each preset on the prepared corpus."""
    _, data = prepare()
    P, R = data["train"]["prompt"], data["train"]["reference"]
    for name in names or PRESETS:
        p = PRESETS[name]
        model = make_model(name)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        rng = random.Random(0)
        times, toks = [], 0
        for s in range(steps + 2):
            idx = [rng.randrange(len(P)) for _ in range(p["batch"])]
            b = make_batch(p["arch"], [P[i] for i in idx], [R[i] for i in idx])
            t0 = time.perf_counter()
            loss = model(**b).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            if s >= 2:
                times.append(time.perf_counter() - t0)
                toks += int(b["attention_mask"].sum()) + (int((b["labels"] != -100).sum())
                                                          if p["arch"] == "t5" else 0)
        print(f"{name}: params {n_params(model)/1e6:.2f}M  {np.mean(times):.3f} s/step  "
              f"{toks / sum(times):.0f} tok/s  -> {60 / np.mean(times):.0f} steps/min", flush=True)
