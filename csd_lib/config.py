"""The one place that reads the environment, and picks device and dtype."""
from __future__ import annotations

import os
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = REPO_ROOT / "data" / "models"    # shipped tiny families (HF format)
TASKS_DIR = REPO_ROOT / "data" / "tasks"      # bundled synthetic test splits
RESULTS_DIR = REPO_ROOT / "results"           # committed benchmark results

FAMILY = os.environ.get("CSD_FAMILY", "tiny-t5")
# Local directory with gsm8k/ and mmlu/ (e.g. ../shared/data); None when unset or missing.
DATA_DIR = os.environ.get("CSD_DATA_DIR") or None
# Fast mode: notebooks and benches shrink their workload (CI sets it).
FAST = os.environ.get("CSD_FAST", "0") not in ("", "0", "false", "False")
IN_CI = os.environ.get("CI", "") not in ("", "0", "false")
CACHE_DIR = os.environ.get("CSD_CACHE_DIR") or None
XDG_CACHE_HOME = os.environ.get("XDG_CACHE_HOME") or None
# Slow test sweeps (e.g. every exactness configuration in tests/test_sampling_exact.py).
FULL_SWEEP = os.environ.get("CSD_FULL_SWEEP", "0") not in ("", "0", "false", "False")
# Plotly renderer for notebooks, e.g. "notebook" to inline plotly.js for static HTML exports
# (scripts/browser_check.py); None keeps plotly's default (JupyterLab, Colab).
PLOTLY_RENDERER = os.environ.get("CSD_PLOTLY_RENDERER") or None
HF_OFFLINE = os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false") or \
    os.environ.get("TRANSFORMERS_OFFLINE", "0") not in ("", "0", "false")


def cache_dir() -> Path:
    """Where derived artefacts (bigram tables of real families) are cached.

    CSD_CACHE_DIR, else $XDG_CACHE_HOME/csd-workbook, else ~/.cache/csd-workbook.
    """
    if CACHE_DIR:
        return Path(CACHE_DIR)
    return (Path(XDG_CACHE_HOME) if XDG_CACHE_HOME else Path.home() / ".cache") / "csd-workbook"


def data_dir() -> Path | None:
    """The local dataset directory named by CSD_DATA_DIR, if it exists."""
    if DATA_DIR and Path(DATA_DIR).is_dir():
        return Path(DATA_DIR)
    return None


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """An explicit device, else cuda, else mps, else cpu."""
    if device is not None:
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


_DTYPES = {"fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16,
           "float16": torch.float16, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
           "fp64": torch.float64, "float64": torch.float64}


def pick_dtype(dtype: str | torch.dtype | None, device: torch.device, real: bool = False) -> torch.dtype:
    """An explicit dtype, else bf16 for real checkpoints on a GPU, else fp32."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype is not None:
        if dtype not in _DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(_DTYPES)}")
        return _DTYPES[dtype]
    if real and device.type == "cuda":
        return torch.bfloat16
    return torch.float32
