"""Medusa-1 heads (Cai et al. 2024) on a frozen decoder-only target: train, save, load, trees.

Head ``i`` (0-based) reads the target's final hidden state ``h_t`` (the input of its output
layer, after the last norm) at position ``t``. The target's own LM head predicts token
``t+1`` from it; Medusa head ``i`` predicts token ``t+2+i``:

    head_i(h) = W_out_i (h + SiLU(W_i h + b_i))

with ``W_i, b_i`` initialised to zero (so an untrained head equals the target's LM head) and
``W_out_i`` initialised from the target's output embedding. Only the heads train.

Training data is self-distilled: the target's greedy continuation of each training prompt
(both synthetic tasks), with the hidden states recorded during that generation; head ``i`` at
the row predicting continuation token ``j`` learns token ``j+1+i``.

``python -m csd_lib.zoo medusa --family tiny-llama`` builds the data, trains (both resumable
from ``runs/<family>-medusa/``), measures per-head accuracy on the validation prompts, builds
the default candidate trees and writes ``data/models/<family>-medusa/`` and its card.
"""
from __future__ import annotations

import contextlib
import copy
import heapq
import json
import logging
import math
import os
import platform
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from csd_lib import config
from csd_lib.families.medusa import MedusaHeads, hf_model, load_medusa, medusa_logits  # noqa: F401
from csd_lib.engine.tree import tree_candidates  # noqa: F401  (its home is the engine)
from csd_lib.families import tasks

log = logging.getLogger(__name__)

TASK_NAMES = ("synth-gsm8k", "synth-mmlu")
CHUNK = 256                 # prompts per saved chunk of distillation data
GEN_BATCH = 128             # prompts per batched greedy generation
MAX_NEW_TOKENS = 128        # as the benchmarks and the family card generate
WARMUP_STEPS = 50
MIN_LR_FRAC = 0.1
MAX_RANK = 10               # ranks measured per head (the trees pick among these)
TREE_SIZES = (16, 32)       # default trees shipped in config.json

# How the shipped recipe was chosen, per family (rendered in the card).
HISTORY = {
    "tiny-llama": "The peak lr was chosen from four pilot runs of 300 steps on 512 prompts (256 per task): "
                  "head-0 top-1 on the first 10 validation prompts of each task was 0.51, 0.63, 0.69 and "
                  "0.72 for lr 3e-4, 1e-3, 3e-3 and 1e-2; 3e-3 was kept for the long schedule (1e-2 was "
                  "best so early but not tried over 8000 steps).",
}


# --------------------------------------------------------------------------- the heads
@contextlib.contextmanager
def capture_hidden(model):
    """Record the input of ``model``'s output layer at every forward: a list of (B, T, D).

    For a Llama this is the final hidden state after the last RMSNorm, for exactly the rows
    whose logits the forward returns (``logits_to_keep`` rows, or all).
    """
    caps: list[torch.Tensor] = []
    handle = hf_model(model).get_output_embeddings().register_forward_pre_hook(
        lambda mod, args: caps.append(args[0].detach()))
    try:
        yield caps
    finally:
        handle.remove()


# --------------------------------------------------------------------------- save / load
def _write_atomic(path: Path, write) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def save_medusa(heads: MedusaHeads, folder, meta: dict, trees: dict | None = None,
                extra_config: dict | None = None) -> Path:
    """Write ``config.json``, ``model.safetensors`` (fp16) and ``train_meta.json`` to ``folder``.

    ``trees`` (size -> list of paths) defaults to ``heads.trees``; ``extra_config`` adds keys
    to config.json (e.g. the target's name and the measured rank accuracies).
    """
    from safetensors.torch import save
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    trees = heads.trees if trees is None else trees
    cfg = {"model_type": "medusa-1", "heads": heads.n_heads, "hidden": heads.hidden_size,
           "vocab": heads.vocab_size, "dtype": "float32", "stored_dtype": "float16",
           "head_offset": "heads[i] at the row of position t predicts token t+2+i",
           "trees": {str(k): [list(p) for p in v] for k, v in sorted(trees.items())}, **(extra_config or {})}
    state = {k: v.detach().to("cpu", torch.float16).contiguous() for k, v in heads.state_dict().items()}
    blob = save(state, metadata={"format": "pt"})
    _write_atomic(folder / "model.safetensors", lambda p: p.write_bytes(blob))
    text = "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in cfg.items()) + "\n}\n"
    _write_atomic(folder / "config.json", lambda p: p.write_text(text))  # one line per key
    _write_atomic(folder / "train_meta.json", lambda p: p.write_text(json.dumps(meta, indent=1) + "\n"))
    return folder


# --------------------------------------------------------------------------- candidate trees
def standard_tree(top_k_acc, n_nodes: int) -> list[tuple[int, ...]]:
    """Medusa's sparse candidate tree of ``n_nodes`` nodes from per-head rank accuracies.

    ``top_k_acc[i][r]`` is the share of rows where head ``i``'s rank-``r`` token is the right
    one (its row sums to head ``i``'s top-K accuracy). A node is a path ``(r_0, ..., r_d)``:
    rank ``r_i`` of head ``i``'s top-k. Nodes are added greedily by estimated acceptance, the
    product of ``top_k_acc[i][r_i]`` along the path, a parent always before its child; ties go
    to the shorter, then the lexicographically smaller path. Returns the paths in that order.
    """
    acc = [[float(a) for a in row] for row in top_k_acc]
    if not acc or not acc[0] or any(len(r) != len(acc[0]) for r in acc):
        raise ValueError(f"top_k_acc must be a non-empty (heads, k) table, got rows of lengths "
                         f"{[len(r) for r in acc]}")
    if any(not 0.0 <= a <= 1.0 for row in acc for a in row):
        raise ValueError("top_k_acc holds probabilities: every entry must lie in [0, 1]")
    H, K = len(acc), len(acc[0])
    n_max = sum(K ** d for d in range(1, H + 1))
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, int) or not 1 <= n_nodes <= n_max:
        raise ValueError(f"n_nodes must be an integer in [1, {n_max}] for {H} heads and k = {K}, got {n_nodes!r}")
    heap = [(-acc[0][r], 1, (r,)) for r in range(K)]
    heapq.heapify(heap)
    tree: list[tuple[int, ...]] = []
    while len(tree) < n_nodes:
        neg, depth, path = heapq.heappop(heap)
        tree.append(path)
        if depth < H:
            for r in range(K):
                heapq.heappush(heap, (neg * acc[depth][r], depth + 1, path + (r,)))
    return tree


# --------------------------------------------------------------------------- data
def head_labels(cont: list[int], n_heads: int) -> torch.Tensor:
    """(len(cont), H) labels: row j (predicting cont[j]) gets cont[j+1+i] for head i, else -100."""
    n = len(cont)
    y = torch.full((n, n_heads), -100, dtype=torch.long)
    c = torch.tensor(cont, dtype=torch.long)
    for i in range(n_heads):
        if n > 1 + i:
            y[:n - 1 - i, i] = c[1 + i:]
    return y


def greedy_with_hidden(model, prompts: list[list[int]], max_new_tokens: int = MAX_NEW_TOKENS):
    """Batched greedy generation (left padding); per prompt (continuation, hidden (n, D)).

    The continuation is cut after its first ``</s>`` (kept); hidden row j is the target's
    final hidden state at the position whose logits produced continuation token j.
    """
    cfg = model.config
    dev = next(model.parameters()).device
    L = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), L), cfg.pad_token_id, device=dev)     # (B, L)
    att = torch.zeros((len(prompts), L), dtype=torch.long, device=dev)     # (B, L)
    for b, p in enumerate(prompts):
        ids[b, L - len(p):] = torch.tensor(p, device=dev)
        att[b, L - len(p):] = 1
    with capture_hidden(model) as caps, torch.inference_mode():
        gen = model.generate(ids, attention_mask=att, max_new_tokens=max_new_tokens, min_new_tokens=1,
                             do_sample=False, eos_token_id=cfg.eos_token_id, pad_token_id=cfg.pad_token_id)
    new = gen[:, L:]                                                       # (B, S)
    hid = torch.cat([c[:, -1:] for c in caps], dim=1)                      # (B, S, D), a normal tensor
    if hid.shape[1] != new.shape[1]:
        raise RuntimeError(f"captured {hid.shape[1]} hidden steps for {new.shape[1]} generated tokens")
    out = []
    for b in range(len(prompts)):
        cont = new[b].tolist()
        if cfg.eos_token_id in cont:
            cont = cont[:cont.index(cfg.eos_token_id) + 1]
        out.append((cont, hid[b, :len(cont)].float().cpu().clone()))
    return out


def build_distill_data(target, tokenizer, work_dir, n_per_task: int, max_new_tokens: int = MAX_NEW_TOKENS,
                       progress: bool = True) -> list[Path]:
    """Self-distillation chunks in ``work_dir/distill/`` (resumable): the target's greedy
    continuation of every training prompt and the hidden states it came from."""
    from tqdm.auto import tqdm
    exs = tasks.corpus("train", n_per_task)
    prompts = [tasks.prompt_ids(tokenizer, e.prompt) for e in exs]
    d = Path(work_dir) / "distill"
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    bar = tqdm(total=len(prompts), desc="distill (target greedy)", unit="prompt", disable=not progress,
               mininterval=10)
    t_gen, n_gen = 0.0, 0
    for c0 in range(0, len(prompts), CHUNK):
        path = d / f"chunk-{c0 // CHUNK:05d}.pt"
        chunk = prompts[c0:c0 + CHUNK]
        paths.append(path)
        if path.is_file() and torch.load(path)["prompts"] == chunk:
            bar.update(len(chunk))
            continue
        t0 = time.time()
        order = sorted(range(len(chunk)), key=lambda i: len(chunk[i]))   # little padding per batch
        res: list = [None] * len(chunk)
        for b0 in range(0, len(order), GEN_BATCH):
            idx = order[b0:b0 + GEN_BATCH]
            for i, r in zip(idx, greedy_with_hidden(target, [chunk[i] for i in idx], max_new_tokens)):
                res[i] = r
            bar.update(len(idx))
        rec = {"prompts": chunk, "conts": [r[0] for r in res],
               "hidden": torch.cat([r[1] for r in res]),                   # (sum n, D) fp32
               "max_new_tokens": max_new_tokens, "seconds": time.time() - t0}
        _write_atomic(path, lambda p: torch.save(rec, p))
        t_gen, n_gen = t_gen + rec["seconds"], n_gen + len(chunk)
    bar.close()
    if n_gen:
        log.info(f"distill: generated {n_gen} continuations in {t_gen:.0f}s")
    return paths


def load_rows(paths: list[Path], n_heads: int) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """Training rows of the chunks: hidden (N, D), labels (N, H) (rows with no head label dropped)."""
    hs, ys, secs, n_seq, n_tok = [], [], 0.0, 0, 0
    for p in paths:
        rec = torch.load(p)
        y = torch.cat([head_labels(c, n_heads) for c in rec["conts"]])  # (sum n, H)
        keep = (y != -100).any(1)
        hs.append(rec["hidden"][keep])
        ys.append(y[keep])
        secs += rec["seconds"]
        n_seq += len(rec["conts"])
        n_tok += sum(len(c) for c in rec["conts"])
    h, y = torch.cat(hs), torch.cat(ys)
    return h, y, {"n_sequences": n_seq, "n_continuation_tokens": n_tok, "n_rows": int(h.shape[0]),
                  "distill_seconds": round(secs, 1)}


# --------------------------------------------------------------------------- training
def _lr(step: int, total: int, peak: float) -> float:
    if step < WARMUP_STEPS:
        return peak * (step + 1) / WARMUP_STEPS
    frac = min(1.0, (step - WARMUP_STEPS) / max(1, total - WARMUP_STEPS))
    return peak * (MIN_LR_FRAC + (1 - MIN_LR_FRAC) * 0.5 * (1 + math.cos(math.pi * frac)))


def _resume_heads(ckpt: Path, heads, opt, gen, state: dict, steps: int) -> None:
    """Load a checkpoint into heads, optimizer, generator and ``state``; a larger ``steps`` continues a finished run."""
    ck = torch.load(ckpt, weights_only=False)
    if ck["n_heads"] != state["n_heads"]:
        raise ValueError(f"{ckpt} holds {ck['n_heads']} heads, {state['n_heads']} were asked for; pass "
                         f"--heads {ck['n_heads']} or move {ckpt.parent} aside")
    heads.load_state_dict(ck["heads"])
    opt.load_state_dict(ck["optim"])
    gen.set_state(ck["rng"])
    state.update({k: ck[k] for k in state if k in ck})
    if steps > state["total_steps"]:
        state["total_steps"], state["done"] = steps, False
    log.info(f"medusa: resumed at step {state['step']}/{state['total_steps']}")


def _heads_step(heads, opt, gen, H_all, Y_all, state: dict, batch: int, lr: float) -> None:
    """One step on ``batch`` random rows: the mean over heads of the cross-entropy; updates the loss EMAs."""
    step, n_heads = state["step"], state["n_heads"]
    idx = torch.randint(H_all.shape[0], (batch,), generator=gen).to(H_all.device)
    h, y = H_all[idx], Y_all[idx]                                          # (B, D), (B, H)
    for g in opt.param_groups:
        g["lr"] = _lr(step, state["total_steps"], lr)
    logits = heads(h)                                                      # (H, B, V)
    per_head = torch.stack([F.cross_entropy(logits[i], y[:, i], ignore_index=-100)
                            for i in range(n_heads)])                      # (H,)
    loss = per_head.mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    state["step"] = step + 1
    lv, hv = loss.item(), per_head.detach().tolist()
    if state["loss_ema"] is None:
        state["loss_ema"], state["head_loss_ema"] = lv, hv
    else:
        state["loss_ema"] = 0.98 * state["loss_ema"] + 0.02 * lv
        state["head_loss_ema"] = [0.98 * a + 0.02 * b for a, b in zip(state["head_loss_ema"], hv)]


def train_medusa(target, tokenizer, work_dir, *, n_heads: int = 4, steps: int = 8000, batch: int = 1024,
                 lr: float = 3e-3, n_per_task: int = 6000, max_new_tokens: int = MAX_NEW_TOKENS,
                 ckpt_every_s: float = 120.0, seed: int = 0, progress: bool = True):
    """Train (or resume) Medusa heads on a frozen ``target``; returns (heads, meta).

    Data: ``build_distill_data`` (the target's greedy continuations of ``n_per_task`` training
    prompts per synthetic task). Each step draws ``batch`` rows at random; the loss is the mean
    over heads of the cross-entropy with the self-distilled tokens. AdamW, ``WARMUP_STEPS`` of
    warm-up, then cosine to ``MIN_LR_FRAC`` of ``lr``. ``work_dir/ckpt.pt`` is written every
    ``ckpt_every_s`` (atomically); re-running continues from it, and a larger ``steps``
    continues a finished run (the schedule stretches).
    """
    from tqdm.auto import tqdm
    model = hf_model(target).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    paths = build_distill_data(model, tokenizer, work_dir, n_per_task, max_new_tokens, progress)
    H_all, Y_all, data_meta = load_rows(paths, n_heads)                     # (N, D), (N, H)
    dev = next(model.parameters()).device
    H_all, Y_all = H_all.to(dev), Y_all.to(dev)
    log.info(f"medusa: {data_meta['n_rows']} training rows from {data_meta['n_sequences']} continuations")

    heads = MedusaHeads.from_target(model, n_heads).train()
    opt = torch.optim.AdamW(heads.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    state = {"step": 0, "total_steps": steps, "elapsed_s": 0.0, "loss_ema": None, "head_loss_ema": None,
             "batch": batch, "peak_lr": lr, "n_heads": n_heads, "n_per_task": n_per_task, "done": False}
    ckpt = work_dir / "ckpt.pt"
    if ckpt.is_file():
        _resume_heads(ckpt, heads, opt, gen, state, steps)

    def save_ckpt():
        rec = {"heads": heads.state_dict(), "optim": opt.state_dict(), "rng": gen.get_state(), **state}
        _write_atomic(ckpt, lambda p: torch.save(rec, p))

    bar = tqdm(total=state["total_steps"], initial=state["step"], desc="medusa heads", disable=not progress,
               mininterval=10)
    t_start, t_ckpt, elapsed0 = time.time(), time.time(), state["elapsed_s"]
    while state["step"] < state["total_steps"]:
        _heads_step(heads, opt, gen, H_all, Y_all, state, batch, lr)
        state["elapsed_s"] = elapsed0 + time.time() - t_start
        bar.update(1)
        bar.set_postfix(loss=f"{state['loss_ema']:.3f}", refresh=False)
        if time.time() - t_ckpt > ckpt_every_s:
            save_ckpt()
            t_ckpt = time.time()
            log.info(f"medusa: step {state['step']}/{state['total_steps']} loss {state['loss_ema']:.3f} "
                     f"(heads {' '.join(f'{a:.2f}' for a in state['head_loss_ema'])}) "
                     f"elapsed {state['elapsed_s']:.0f}s")
    bar.close()
    state["done"] = True
    save_ckpt()
    return heads.eval(), {**state, **data_meta, "max_new_tokens": max_new_tokens}


# --------------------------------------------------------------------------- evaluation
@torch.no_grad()
def evaluate_heads(heads: MedusaHeads, target, tokenizer, prompts: list[str], max_rank: int = MAX_RANK,
                   max_new_tokens: int = MAX_NEW_TOKENS) -> dict:
    """Per-head rank accuracies against the target's own (unbatched) greedy continuation.

    Returns ``rank_acc`` (H, max_rank): the share of rows where head i's rank-r token is the
    target's token; ``topk`` {k: [per head]} for k = 1, 2, 3, 5; ``base_top1`` (the target's
    own LM head, teacher-forced on its greedy output); ``rows`` per head.
    """
    from csd_lib.measure.curves import greedy_continuations
    model = hf_model(target).eval()
    dev = next(model.parameters()).device
    H = heads.n_heads
    hits = torch.zeros(H, max_rank, dtype=torch.long)
    rows = torch.zeros(H, dtype=torch.long)
    base_hit = base_rows = 0
    for c in greedy_continuations(model, tokenizer, prompts, max_new_tokens=max_new_tokens):
        cont, P = c.output_ids, len(c.prompt_ids)
        ids = torch.tensor([c.prompt_ids + cont[:-1]], device=dev)           # (1, P + n - 1)
        with capture_hidden(model) as caps:
            logits = model(input_ids=ids).logits[0, P - 1:]                   # (n, V)
        hid = caps[-1][0, P - 1:]                                              # (n, D)
        y_base = torch.tensor(cont, device=dev)
        base_hit += int((logits.argmax(-1) == y_base).sum())
        base_rows += len(cont)
        hl = medusa_logits(heads, hid)                                         # (H, n, V)
        top = torch.topk(hl, max_rank, dim=-1).indices.cpu()                   # (H, n, R)
        y = head_labels(cont, H)                                               # (n, H)
        for i in range(H):
            ok = y[:, i] != -100
            rows[i] += int(ok.sum())
            hits[i] += (top[i][ok] == y[ok, i, None]).sum(0)
    rank_acc = (hits.double() / rows.clamp(min=1)[:, None]).tolist()
    topk = {k: [sum(r[:k]) for r in rank_acc] for k in (1, 2, 3, 5)}
    return {"rank_acc": rank_acc, "topk": topk, "base_top1": base_hit / max(base_rows, 1),
            "rows": rows.tolist(), "n_prompts": len(prompts)}


def _merge(evals: list[dict]) -> dict:
    """Row-weighted union of evaluations of the same heads on several prompt sets."""
    H, R = len(evals[0]["rank_acc"]), len(evals[0]["rank_acc"][0])
    rows = [sum(e["rows"][i] for e in evals) for i in range(H)]
    rank_acc = [[sum(e["rank_acc"][i][r] * e["rows"][i] for e in evals) / max(rows[i], 1) for r in range(R)]
                for i in range(H)]
    n_base = [e["rows"][0] + e["n_prompts"] for e in evals]  # head 0 has one row less per prompt
    return {"rank_acc": rank_acc, "topk": {k: [sum(r[:k]) for r in rank_acc] for k in (1, 2, 3, 5)},
            "base_top1": sum(e["base_top1"] * n for e, n in zip(evals, n_base)) / sum(n_base),
            "rows": rows, "n_prompts": sum(e["n_prompts"] for e in evals)}


# --------------------------------------------------------------------------- the whole run
def run_family(family_name: str, *, steps: int = 8000, n_heads: int = 4, out=None, n_per_task: int = 6000,
               batch: int = 1024, lr: float = 3e-3, n_eval: int = 50, runs_dir=None, command: str = "") -> dict:
    """Train, measure and ship Medusa heads for ``family_name``'s target; returns train_meta."""
    from csd_lib.zoo.card import load_model
    from csd_lib.zoo.recipes import FAMILY_RECIPES
    from csd_lib.zoo.train import RUNS_DIR
    if family_name not in FAMILY_RECIPES:
        raise ValueError(f"unknown family {family_name!r}; use one of {sorted(FAMILY_RECIPES)}")
    if FAMILY_RECIPES[family_name]["arch"] != "llama":
        raise ValueError(f"Medusa heads need a decoder-only target; {family_name} is {FAMILY_RECIPES[family_name]['arch']}; "
                         f"use --family tiny-llama")
    out = Path(out) if out else config.MODELS_DIR / f"{family_name}-medusa"
    work = Path(runs_dir or RUNS_DIR) / f"{family_name}-medusa"
    target_name = FAMILY_RECIPES[family_name]["target"]
    target, tok = load_model(target_name)
    heads, state = train_medusa(target, tok, work, n_heads=n_heads, steps=steps, batch=batch, lr=lr,
                                n_per_task=n_per_task)
    shipped = copy.deepcopy(heads).half().float().eval()   # measure what ships: fp16 weights, fp32 compute
    t1 = time.time()
    evals = {t: evaluate_heads(shipped, target, tok, [e.prompt for e in tasks.load_task(t, "val", n_eval)])
             for t in TASK_NAMES}
    evals["all"] = _merge([evals[t] for t in TASK_NAMES])
    trees = {n: standard_tree(evals["all"]["rank_acc"], n) for n in TREE_SIZES}
    meta = {"family": family_name, "target": target_name, "command": command, **state,
            "eval": evals, "eval_seconds": round(time.time() - t1, 1),
            "data": f"self-distilled: {target_name}'s greedy continuation (batched, left-padded, at most "
                    f"{state['max_new_tokens']} new tokens) of tasks.corpus('train', {n_per_task}) "
                    f"(synth-gsm8k + synth-mmlu)",
            "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                        "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                        "device": str(next(target.parameters()).device), "torch": torch.__version__},
            "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    heads.trees = trees
    save_medusa(heads, out, meta, extra_config={"target": target_name, "rank_acc": evals["all"]["rank_acc"]})
    card = out.with_name(out.name + "-MODEL_CARD.md")
    _write_atomic(card, lambda p: p.write_text(medusa_card_md(meta, trees, out.name)))
    log.info(f"medusa: wrote {out} and {card}")
    return meta


def _row(name: str, e: dict, i: int) -> str:
    return (f"| {name} | head {i} (token t+{i + 2}) | {e['rows'][i]} | "
            + " | ".join(f"{e['topk'][k][i]:.3f}" for k in (1, 2, 3, 5)) + " |")


# long: the Medusa card's Markdown template, section by section
def medusa_card_md(meta: dict, trees: dict, folder_name: str) -> str:
    """Markdown card of shipped Medusa heads from their train_meta."""
    ev, H = meta["eval"], meta["n_heads"]
    m = meta["machine"]
    L = [f"# {folder_name}: model card", "",
         f"Medusa-1 heads (Cai et al. 2024) for `{meta['target']}`, the target of the `{meta['family']}` "
         "family: the baseline of the paper's Table 3. "
         f"{H} heads; head i (0-based) reads the target's final hidden state at position t (the input of "
         "its output layer, after the last RMSNorm) and predicts token t+2+i, where the target's own LM "
         "head predicts t+1. Each head is `W_out_i (h + SiLU(W_i h + b_i))` with `W_i, b_i` initialised to "
         "zero and `W_out_i` initialised from the target's (tied) output embedding; the target stays frozen.",
         "", "Weights are stored in fp16 (`model.safetensors`); `csd_lib.zoo.medusa.load_medusa(folder, "
         "target=...)` loads them in fp32 and checks them against the target.", "",
         "## Training", "",
         f"- Command: `{meta['command']}`",
         f"- Data: {meta['data']}: {meta['n_sequences']} continuations, {meta['n_continuation_tokens']} "
         f"tokens, {meta['n_rows']} training rows (a row: one hidden state and its {H} head labels; the "
         "loss is on solution tokens only, the prompt never is a label). Self-distillation, not the "
         "reference solutions: at inference the heads continue the target's own greedy text, which differs "
         "from the references wherever the target errs. Batched generation can differ from the "
         "unbatched greedy output on rare near-ties; the evaluation below uses the unbatched one.",
         f"- Steps: {meta['step']} of {meta['batch']} random rows, AdamW (betas 0.9, 0.98, no weight decay), "
         f"peak lr {meta['peak_lr']:g}, {WARMUP_STEPS} warm-up steps then cosine to {MIN_LR_FRAC:g} of the "
         "peak; loss = mean over heads of the cross-entropy. Final loss (EMA): "
         f"{meta['loss_ema']:.3f}; per head " + ", ".join(f"{a:.3f}" for a in meta["head_loss_ema"]) + ".",
         f"- Wall time: {meta['distill_seconds'] / 60:.1f} min generating the data, "
         f"{meta['elapsed_s'] / 60:.1f} min training, {meta['eval_seconds'] / 60:.1f} min measuring; on a "
         f"{m['cpu_count']}-core CPU ({m['processor']}, {m['platform']}), {m['torch_threads']} torch "
         "thread, shared with other work (so times are rough).",
         *([f"- Recipe: {HISTORY[meta['family']]}"] if meta["family"] in HISTORY else []), "",
         "## Accuracy against the target's greedy continuation", "",
         f"Held-out prompts: the first {ev['synth-gsm8k']['n_prompts']} of each validation split "
         "(`tasks.load_task(task, 'val', n)`), the target's unbatched greedy continuation (at most "
         f"{meta['max_new_tokens']} new tokens, `</s>` kept), teacher-forced; rows = positions with a "
         "token for that head. Top-k: the target's token is among the head's k best. The target's own LM "
         "head (teacher-forced on its greedy output) scores top-1 "
         + ", ".join(f"{ev[t]['base_top1']:.3f} on {t}" for t in TASK_NAMES) + ".", "",
         "| prompts | head | rows | top-1 | top-2 | top-3 | top-5 |", "|---|---|---|---|---|---|---|"]
    for name in (*TASK_NAMES, "all"):
        e = ev[name]
        L.append(f"| {name} | target's LM head (token t+1) | {e['rows'][0] + e['n_prompts']} | "
                 f"{e['base_top1']:.3f} | - | - | - |")
        L += [_row(name, e, i) for i in range(H)]
    L += ["", "Per-rank accuracy (all prompts; the share of rows where rank r is the target's token), the "
          "table the trees are built from (also `rank_acc` in config.json):", "",
          "| head | " + " | ".join(f"r={r}" for r in range(len(ev["all"]["rank_acc"][0]))) + " |",
          "|---|" + "---|" * len(ev["all"]["rank_acc"][0])]
    L += [f"| {i} | " + " | ".join(f"{a:.3f}" for a in row) + " |" for i, row in enumerate(ev["all"]["rank_acc"])]
    L += ["", "## Default candidate trees", "",
          "`standard_tree(rank_acc, n)` (csd_lib/zoo/medusa.py): nodes added greedily by estimated "
          "acceptance (the product of the per-rank accuracies along the path), parent before child, as in "
          "the Medusa paper. A node `(r_0, .., r_d)` takes rank r_i of head i; the candidates continue after "
          "the target's own next token. Also in config.json (`trees`).", ""]
    sizes = sorted(trees)
    if all(trees[b][:a] == trees[a] for a, b in zip(sizes, sizes[1:])):
        L += ["Each tree is the start of the next larger one (the greedy order does not depend on the size).", ""]
    for n, tree in sorted(trees.items()):
        L += [f"{n} nodes (depth {max(len(p) for p in tree)}): `" + " ".join(str(p).replace(" ", "") for p in tree)
              + "`", ""]
    L += ["## Re-make", "", f"`{meta['command']}` (resumes from `runs/{meta['family']}-medusa/`; the data "
          "chunks and the checkpoint are kept there).", ""]
    return "\n".join(L)
