"""Where a family's models go: its memory need from the configs (weights at their dtype, KV caches, headroom)
against the device's free memory, before anything is allocated; a refusal names what fits instead.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import torch

from .. import config
from .archs import published_config
from .hub import count_params, model_arch
from .presets import REAL_PRESETS

log = logging.getLogger(__name__)


def param_bytes(n_params: int, n_fp32_params: int, dtype: torch.dtype) -> int:
    """Bytes of weights: ``n_fp32_params`` of them kept in fp32, the rest in ``dtype``."""
    size = torch.tensor([], dtype=dtype).element_size()
    return (n_params - n_fp32_params) * size + n_fp32_params * 4


@dataclass(frozen=True)
class MemoryPlan:
    """How a family's models are placed: all on the device, or the target split by accelerate."""
    fits: bool                        # False: it cannot run here (see ``message``)
    target_device_map: str | None     # "auto" when accelerate must spread the target
    max_memory: dict | None           # accelerate's budget for the target, bytes per device
    need: int                         # bytes of all weights, KV caches and headroom
    free: int | None                  # free bytes on the device (None: not measured)
    message: str = ""
    host_note: str = ""               # on a GPU: host RAM is smaller than the largest model (a warning)

HEADROOM = 2**29       # 0.5 GiB beyond weights and KV caches: activations, logits, allocator slack

CACHE_TOKENS = 2048    # tokens (prompt + output) the KV cache estimate is sized for


def kv_cache_bytes(cfg: dict, dtype: torch.dtype, tokens: int = CACHE_TOKENS) -> int:
    """Bytes of one model's KV cache at ``tokens`` tokens: layers x 2 x heads x head_dim x tokens x dtype bytes.

    ``cfg`` is a ``config.json`` dict. For T5, the decoder's self- and cross-attention caches
    together hold one key and value per prompt or output token, so ``tokens`` counts both.
    """
    layers = cfg.get("num_decoder_layers") or cfg.get("num_layers") or cfg.get("num_hidden_layers") or 0
    heads = cfg.get("num_key_value_heads") or cfg.get("num_heads") or cfg.get("num_attention_heads") or 0
    head_dim = cfg.get("head_dim") or cfg.get("d_kv") or (cfg.get("hidden_size", 0) // max(1, cfg.get(
        "num_attention_heads") or 1))
    return layers * 2 * heads * head_dim * tokens * torch.tensor([], dtype=dtype).element_size()


def _gib(b: int) -> str:
    return f"{b / 2**30:.1f} GiB"


def host_note(sizes: list[int], info: config.DeviceInfo) -> str:
    """On a GPU, what to do when host RAM is smaller than the largest model's weights ("" when it is not, or unknown).

    Each weight is read straight onto the GPU (``hub.straight_to``), so host RAM need not hold a
    model: its checkpoint is read through the page cache. Loading then still works, more slowly,
    unless the runtime limits the page cache too (a notebook kernel killed while loading).
    """
    if info.type != "cuda" or info.host_free is None or max(sizes, default=0) <= info.host_free:
        return ""
    return (f"host RAM has {_gib(info.host_free)} available, less than the largest model's {_gib(max(sizes))}: "
            f"its weights are read from disk straight onto the GPU (slower); if loading is killed, free host RAM "
            f"(restart the runtime, close other notebooks) or use a machine with more")


def plan_memory(sizes: list[int], info: config.DeviceInfo, cache: int = 0, headroom: int = HEADROOM) -> MemoryPlan:
    """Place a family whose weights take ``sizes`` bytes (target first, then drafters).

    ``need`` = weights + ``cache`` (KV cache bytes, ``kv_cache_bytes``) + ``headroom``. Everything
    goes on the device when ``need`` fits its free memory (a GPU's, or host RAM for the CPU and
    MPS, read from this machine when ``info`` does not say), so a family that fits is never
    offloaded. On a CPU or MPS that is too small, nothing fits (``fits=False``). On a GPU that
    is too small the drafters stay on it and accelerate spreads the target over what is left
    and host RAM (``device_map="auto"``), when host RAM holds the rest; a target larger than
    the GPU's total memory does not fit at all: every call would stream its weights, which no
    speedup can pay back.
    """
    need = int(sum(sizes) + cache + headroom)
    if info.type != "cuda" and info.free_mem is None:  # the CPU or MPS described by hand: this machine's RAM
        total, free = config.host_memory()
        info = replace(info, total_mem=total, free_mem=free, host_free=free)
    where = {"cpu": "host RAM", "mps": "unified memory (MPS)"}.get(info.type, info.name or info.type)
    if info.free_mem is None or need <= info.free_mem:
        return MemoryPlan(True, None, None, need, info.free_mem, host_note=host_note(sizes, info))
    short = (f"the family needs {_gib(need)} (weights {_gib(sum(sizes))}, target {_gib(sizes[0])}, plus "
             f"{_gib(cache)} of KV cache and {_gib(headroom)} headroom), more than the {_gib(info.free_mem)} "
             f"free in {where}" if info.type != "cuda" else
             f"its weights take {_gib(sum(sizes))} (the target {_gib(sizes[0])}), plus {_gib(cache)} of KV cache "
             f"and {_gib(headroom)} headroom, more than {where} can hold ({_gib(info.free_mem)} free of "
             f"{_gib(info.total_mem or info.free_mem)})")
    if info.type != "cuda":
        return MemoryPlan(False, None, None, need, info.free_mem, short)
    target = sizes[0]
    gpu = int(info.free_mem - (need - target))  # left on the GPU for the target's weights
    offloaded = target - gpu
    if target > (info.total_mem or info.free_mem) or gpu <= 0:
        return MemoryPlan(False, None, None, need, info.free_mem, short)
    if info.host_free is not None and offloaded + headroom > info.host_free:
        return MemoryPlan(False, None, None, need, info.free_mem,
                          f"{short}, and host RAM ({_gib(info.host_free)} available) cannot hold the "
                          f"{_gib(offloaded)} of the target that would be offloaded")
    host = info.host_free - headroom if info.host_free is not None else 2 * target
    return MemoryPlan(True, "auto", {info.index or 0: gpu, "cpu": int(host)}, need, info.free_mem,
                      f"the family needs {_gib(need)} (with KV cache and headroom) but {_gib(info.free_mem)} is "
                      f"free on {where}: the drafters stay on it and accelerate spreads the target over the GPU "
                      f"({_gib(gpu)}) and host RAM ({_gib(offloaded)}), which is slower", host_note(sizes, info))


def family_memory(cfgs: dict[str, dict], dtype: torch.dtype, keep_fp32: tuple[str, ...], info: config.DeviceInfo):
    """The memory plan of models described by ``cfgs`` (id -> config dict, target first) in ``dtype``."""
    sizes = [param_bytes(*count_params(cfg, keep_fp32), dtype) for cfg in cfgs.values()]
    cache = sum(kv_cache_bytes(cfg, dtype) for cfg in cfgs.values())
    return plan_memory(sizes, info, cache)


def fitting_presets(info: config.DeviceInfo, dtype: torch.dtype, arch: str = "") -> list[str]:
    """Real presets that fit ``info`` whole (no offload) in ``dtype``, from their stored configs.

    Presets of architecture ``arch`` come first, then the largest first.
    """
    fits = []
    for n, s in REAL_PRESETS.items():
        cfgs = {rid: published_config(rid) for rid in (s["target"], *s["drafters"])}
        a = model_arch(cfgs[s["target"]])
        plan = family_memory(cfgs, dtype, ("wo",) if dtype == torch.float16 and a == "t5" else (), info)
        if plan.fits and plan.target_device_map is None:
            fits.append((a != arch, -plan.need, n))
    return [n for *_, n in sorted(fits)]


def _smaller_dtypes(info: config.DeviceInfo, dtype: torch.dtype) -> list[torch.dtype]:
    """16-bit dtypes to suggest when ``dtype`` does not fit: bf16 where it is native (or on a CPU), else fp16."""
    if torch.tensor([], dtype=dtype).element_size() <= 2:
        return []
    if info.type == "cuda":
        return [torch.bfloat16 if (info.capability or (0, 0)) >= config.BF16_CAPABILITY else torch.float16]
    return [torch.bfloat16] if info.type == "cpu" else [torch.float16]


def place_family(name: str, cfgs: dict[str, dict], device, dtype) -> tuple[config.Policy, MemoryPlan]:
    """The policy and memory plan of a family from its configs (target first); ValueError when it cannot fit.

    The refusal names what fits instead: a smaller preset, or a 16-bit dtype.
    """
    archs = [model_arch(c) for c in cfgs.values()]
    arch = "t5" if "t5" in archs else archs[0]
    info = config.describe_device(device)
    pol = config.policy("real", arch, info, dtype, device)
    plan = family_memory(cfgs, pol.dtype, pol.keep_fp32, info)
    if not plan.fits:
        alt = [f"family={p!r}" for p in fitting_presets(info, pol.dtype, arch) if p != name][:1]
        alt += [f"dtype='{str(dt).removeprefix('torch.')}'" for dt in _smaller_dtypes(info, pol.dtype)
                if family_memory(cfgs, dt, ("wo",) if dt == torch.float16 and arch == "t5" else (), info).fits]
        where = {"cpu": "this machine's RAM", "mps": "this Mac's memory"}.get(info.type, info.name)
        raise ValueError(f"family '{name}' cannot fit {where}: {plan.message}; use "
                         f"{' or '.join(alt) + ' (fits), or ' if alt else ''}a machine with more memory"
                         f"{'' if info.type == 'cpu' else ', or device=' + repr('cpu')}")
    return pol, plan
