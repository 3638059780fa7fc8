"""Medusa-1 heads (Cai et al. 2024) on a decoder-only target: the module and its loader.

Head ``i`` (0-based) reads the target's final hidden state ``h_t`` (the input of its output
layer) and predicts token ``t+2+i``: ``head_i(h) = W_out_i (h + SiLU(W_i h + b_i))``.
Training them is :mod:`csd_lib.zoo.medusa`; a family loads shipped heads with :func:`load_medusa`.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .. import config


class MedusaHeads(nn.Module):
    """H Medusa-1 heads: a zero-initialised residual SiLU block and an LM head each."""

    def __init__(self, hidden_size: int, vocab_size: int, n_heads: int = 4):
        super().__init__()
        if n_heads < 1:
            raise ValueError(f"n_heads must be >= 1, got {n_heads}")
        self.hidden_size, self.vocab_size, self.n_heads = hidden_size, vocab_size, n_heads
        self.blocks = nn.ModuleList(nn.Linear(hidden_size, hidden_size) for _ in range(n_heads))
        self.lm_heads = nn.ModuleList(nn.Linear(hidden_size, vocab_size, bias=False) for _ in range(n_heads))
        for b in self.blocks:
            nn.init.zeros_(b.weight)
            nn.init.zeros_(b.bias)
        self.trees: dict[int, list[tuple[int, ...]]] = {}  # default candidate trees, by size

    @classmethod
    def from_target(cls, target, n_heads: int = 4) -> "MedusaHeads":
        """Fresh heads whose LM heads are copies of ``target``'s output embedding."""
        model = hf_model(target)
        emb = model.get_output_embeddings().weight                     # (V, D)
        heads = cls(emb.shape[1], emb.shape[0], n_heads).to(device=emb.device, dtype=torch.float32)
        with torch.no_grad():
            for lm in heads.lm_heads:
                lm.weight.copy_(emb.float())
        return heads

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., D) hidden states -> (H, ..., V) logits."""
        return torch.stack([lm(hidden + F.silu(blk(hidden))) for blk, lm in zip(self.blocks, self.lm_heads)])


def medusa_logits(heads: MedusaHeads, hidden: torch.Tensor) -> torch.Tensor:
    """Logits of every head for ``hidden`` (rows, D): shape (H, rows, V), float32.

    Row ``r`` of head ``i`` is the distribution of the token ``2 + i`` positions after the
    position of hidden row ``r`` (the target's own logits at that row predict the next one).
    """
    if hidden.dim() != 2 or hidden.shape[-1] != heads.hidden_size:
        raise ValueError(f"hidden must have shape (rows, {heads.hidden_size}), got {tuple(hidden.shape)}; "
                         f"pass the target's final hidden states (the input of its output layer)")
    p = next(heads.parameters())
    with torch.inference_mode():
        return heads(hidden.to(device=p.device, dtype=p.dtype)).float()   # (H, rows, V)


def hf_model(target) -> nn.Module:
    """The HF model of ``target`` (an HF model, or a ``csd_lib.engine.models.LM`` wrapping one)."""
    return target if isinstance(target, nn.Module) else target.model


def load_medusa(folder, device=None, dtype: torch.dtype = torch.float32, target=None) -> MedusaHeads:
    """Heads saved by ``save_medusa``, in ``dtype`` (fp32 by default) on ``device``.

    ``target`` (an HF model or an ``LM``) is checked against the heads' hidden size and
    vocabulary. A missing folder or file, or a mismatch, is a ValueError.
    """
    from safetensors.torch import load_file
    folder = Path(folder)
    cfg_path, w_path = folder / "config.json", folder / "model.safetensors"
    if not cfg_path.is_file() or not w_path.is_file():
        raise ValueError(f"no Medusa heads in {folder} (config.json and model.safetensors are needed); "
                         f"train them with `python -m csd_lib.zoo medusa --family tiny-llama`")
    cfg = json.loads(cfg_path.read_text())
    missing = [k for k in ("heads", "hidden", "vocab") if k not in cfg]
    if cfg.get("model_type") != "medusa-1" or missing:
        raise ValueError(f"{cfg_path} is not a Medusa-1 config (model_type {cfg.get('model_type')!r}, "
                         f"missing {missing}); point load_medusa at a folder written by save_medusa")
    if target is not None:
        model = hf_model(target)
        t_hidden = model.config.hidden_size
        t_vocab = model.get_output_embeddings().weight.shape[0]
        if (t_hidden, t_vocab) != (cfg["hidden"], cfg["vocab"]):
            raise ValueError(f"the Medusa heads in {folder} were trained for hidden size {cfg['hidden']} and "
                             f"vocabulary {cfg['vocab']}, but the target has hidden size {t_hidden} and "
                             f"vocabulary {t_vocab}; load the heads of this target's family")
    heads = MedusaHeads(cfg["hidden"], cfg["vocab"], cfg["heads"])
    state = load_file(str(w_path))
    want = {k: tuple(v.shape) for k, v in heads.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    if want != got:
        bad = sorted(set(want.items()) ^ set(got.items()))[:3]
        raise ValueError(f"the weights in {w_path} do not match its config.json ({cfg['heads']} heads, hidden "
                         f"{cfg['hidden']}, vocab {cfg['vocab']}); e.g. {bad}; save the heads again")
    heads.load_state_dict({k: v.to(dtype) for k, v in state.items()})
    heads.trees = {int(k): [tuple(p) for p in v] for k, v in cfg.get("trees", {}).items()}
    return heads.to(device=config.pick_device(device), dtype=dtype).eval()
