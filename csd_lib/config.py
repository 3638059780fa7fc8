"""The one place that reads the environment, and picks device and dtype."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
# data/ of a checkout (editable install or not installed); in an installed wheel the same
# files ship inside the package as csd_lib/_data (pyproject.toml, package-data).
DATA_ROOT = REPO_ROOT / "data" if (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "data").is_dir() \
    else Path(__file__).resolve().parent / "_data"
MODELS_DIR = DATA_ROOT / "models"             # shipped tiny families (HF format)
TASKS_DIR = DATA_ROOT / "tasks"               # bundled synthetic test splits
RESULTS_DIR = REPO_ROOT / "results"           # committed benchmark results

FAMILY = os.environ.get("CSD_FAMILY", "tiny-t5")
# Local directory with gsm8k/ and mmlu/ (e.g. ../shared/data); None when unset or missing.
DATA_DIR = os.environ.get("CSD_DATA_DIR") or None
# Fast mode: notebooks and benches shrink their workload (CI sets it).
FAST = os.environ.get("CSD_FAST", "0") not in ("", "0", "false", "False")
# Seed of the synthetic prompt set that notebooks and solutions draw (0: the bundled test split);
# CI reruns the notebooks with another seed so that a claim holding by accident fails there.
SEED = int(os.environ.get("CSD_SEED", "0") or 0)
IN_CI = os.environ.get("CI", "") not in ("", "0", "false")
# Caps on the notebooks' workloads (CI runs every notebook on shadow checkpoints with short lengths):
# the most prompts and new tokens per generation a notebook knob asks for; None when unset.
MAX_PROMPTS = int(os.environ.get("CSD_MAX_PROMPTS") or 0) or None
MAX_NEW_TOKENS = int(os.environ.get("CSD_MAX_NEW_TOKENS") or 0) or None
CACHE_DIR = os.environ.get("CSD_CACHE_DIR") or None
XDG_CACHE_HOME = os.environ.get("XDG_CACHE_HOME") or None
# Where `python -m csd_lib tune` stores its settings per machine class (csd_lib.price.tuned); None: under cache_dir().
TUNED_DIR = os.environ.get("CSD_TUNED_DIR") or None
# Slow test sweeps (e.g. every exactness configuration in tests/engine/test_sampling_exact.py).
FULL_SWEEP = os.environ.get("CSD_FULL_SWEEP", "0") not in ("", "0", "false", "False")
# Plotly renderer for notebooks, e.g. "notebook" to inline plotly.js for static HTML exports
# (scripts/browser_check.py); None keeps plotly's default (JupyterLab, Colab).
PLOTLY_RENDERER = os.environ.get("CSD_PLOTLY_RENDERER") or None
# File that notebooks append their computed claims to, one JSON line each (csd_lib.report.claims.record,
# read by scripts/claims_sweep.sh); None when unset: nothing is recorded.
CLAIMS_LEDGER = os.environ.get("CSD_CLAIMS_LEDGER") or None
# Prompt tokens at most for a model with no position limit (T5's relative positions: the encoder's
# attention memory grows with the square of the prompt); checked when the prompt is encoded.
MAX_PROMPT_TOKENS = os.environ.get("CSD_MAX_PROMPT_TOKENS") or 2048
NO_COLOR = bool(os.environ.get("NO_COLOR"))  # no-color.org: set and not empty, no ANSI colour codes anywhere
HF_OFFLINE = os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false") or \
    os.environ.get("TRANSFORMERS_OFFLINE", "0") not in ("", "0", "false")


def color_for(stream) -> bool:
    """Whether text for ``stream`` may hold ANSI colour codes: a terminal, and ``NO_COLOR`` unset (never a
    file or a pipe)."""
    isatty = getattr(stream, "isatty", None)
    return not NO_COLOR and isatty is not None and isatty()


def cache_dir() -> Path:
    """Where derived artefacts (bigram tables of real families) are cached.

    CSD_CACHE_DIR, else $XDG_CACHE_HOME/csd-workbook, else ~/.cache/csd-workbook.
    """
    if CACHE_DIR:
        return Path(CACHE_DIR)
    return (Path(XDG_CACHE_HOME) if XDG_CACHE_HOME else Path.home() / ".cache") / "csd-workbook"


def tuned_dir() -> Path:
    """Where tuned settings are stored, one folder per machine class: CSD_TUNED_DIR, else ``cache_dir()/tuned``
    (never the repository, so that CI and committed evidence use the presets)."""
    return Path(TUNED_DIR) if TUNED_DIR else cache_dir() / "tuned"


def n_prompts(n: int) -> int:
    """A notebook's prompt count ``n``, capped by CSD_MAX_PROMPTS when set."""
    return min(n, MAX_PROMPTS) if MAX_PROMPTS else n


def new_tokens(n: int) -> int:
    """A notebook's new-token count ``n``, capped by CSD_MAX_NEW_TOKENS when set."""
    return min(n, MAX_NEW_TOKENS) if MAX_NEW_TOKENS else n


def data_dir() -> Path | None:
    """The local dataset directory named by CSD_DATA_DIR, if it exists."""
    if DATA_DIR and Path(DATA_DIR).is_dir():
        return Path(DATA_DIR)
    return None


DEVICE_TYPES = ("cpu", "cuda", "mps")


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """An explicit device ('cpu', 'cuda', 'cuda:N', 'mps'), else cuda, else mps, else cpu."""
    if device is not None:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError):
            dev = None
        if dev is None or dev.type not in DEVICE_TYPES:
            raise ValueError(f"unknown device {str(device)!r}; use 'cpu', 'cuda', 'cuda:N' (N: a GPU index) "
                             f"or 'mps', or leave it unset for the policy's choice")
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


DTYPES_BY_NAME = {"fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16,
           "float16": torch.float16, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
           "fp64": torch.float64, "float64": torch.float64}


def parse_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    """A torch dtype from a name such as 'bf16' or 'float32'; None stays None."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES_BY_NAME:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(DTYPES_BY_NAME)}")
    return DTYPES_BY_NAME[dtype]


# -- device and dtype policy ------------------------------------------------------------
# A pure function of a device description (``policy``), so that it can be tested with fake
# devices, plus ``describe_device``, the only part that asks torch about the hardware.

@dataclass(frozen=True)
class DeviceInfo:
    """What the policy needs to know about a device. Memory in bytes; None = unknown."""
    type: str                                # "cpu", "cuda" or "mps"
    name: str = ""
    capability: tuple[int, int] | None = None  # CUDA compute capability, e.g. (7, 5) for a T4
    total_mem: int | None = None
    free_mem: int | None = None
    index: int | None = None
    host_free: int | None = None               # available host RAM (where offloaded layers go)


@dataclass(frozen=True)
class Policy:
    """Where and in which dtype a family runs, and why (``notes``, one sentence each)."""
    device: torch.device
    dtype: torch.dtype
    keep_fp32: tuple[str, ...] = ()          # module names that must stay fp32 (T5's "wo" in fp16)
    notes: tuple[str, ...] = ()


def host_memory() -> tuple[int | None, int | None]:
    """(total, available) host RAM in bytes: /proc/meminfo's MemTotal and MemAvailable, else sysconf; None = unknown."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
        kib = lambda key: int(fields[key].split()[0]) * 1024 if key in fields else None  # noqa: E731
        if kib("MemTotal") is not None:
            return kib("MemTotal"), kib("MemAvailable")
    except (OSError, ValueError):
        pass
    size = lambda key: os.sysconf(key) * os.sysconf("SC_PAGE_SIZE") if key in os.sysconf_names else None  # noqa: E731
    try:
        return size("SC_PHYS_PAGES"), size("SC_AVPHYS_PAGES")
    except (OSError, ValueError):
        return None, None


def describe_device(device: str | torch.device | None = None) -> DeviceInfo:
    """Describe ``device``, or the best available one (cuda, mps, cpu) when None.

    Memory: a GPU's free memory; host RAM for the CPU and for MPS (unified memory).
    """
    dev = pick_device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r} was asked for but torch sees no CUDA GPU; "
                         f"leave device unset (the policy picks one) or pass device='cpu'")
    host_total, host_free = host_memory()
    if dev.type != "cuda":
        return DeviceInfo(dev.type, dev.type, total_mem=host_total, free_mem=host_free, host_free=host_free)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    free, total = torch.cuda.mem_get_info(index)
    return DeviceInfo("cuda", torch.cuda.get_device_name(index), tuple(torch.cuda.get_device_capability(index)),
                      total_mem=int(total), free_mem=int(free), index=index, host_free=host_free)


BF16_CAPABILITY = (8, 0)   # Ampere and newer: native bf16
FP16_CAPABILITY = (7, 0)   # Volta/Turing (V100 7.0, T4 7.5): fp16 tensor cores, no native bf16


def policy(family_kind: str, arch: str, info: DeviceInfo, dtype: str | torch.dtype | None = None,
           device: str | torch.device | None = None) -> Policy:
    """Device and dtype for a family (see the README, "On Colab / on a GPU").

    Args:
        family_kind: "tiny" (the embedded families) or "real" (hub checkpoints).
        arch: "t5" for T5-family encoder-decoders (fp16 keeps their ``wo`` layers in fp32),
            anything else (e.g. "llama") for models without that need.
        info: the device found (``describe_device``), or a fake one in tests.
        dtype, device: explicit choices of the user; they win.
    """
    if family_kind not in ("tiny", "real"):
        raise ValueError(f"family_kind must be 'tiny' or 'real', got {family_kind!r}")
    notes = []
    if device is not None:
        dev = torch.device(device)
        if dev.type != info.type:  # the user names another device than the one described
            info = DeviceInfo(dev.type, dev.type)
    elif family_kind == "tiny" and info.type != "cpu":
        notes.append(f"tiny families run on the CPU even though {info.name or info.type} is present: "
                     f"they are launch-bound on a GPU; pass device='{info.type}' to use it anyway")
        dev, info = torch.device("cpu"), DeviceInfo("cpu", "cpu")
    else:
        dev = torch.device(info.type, info.index) if info.index is not None else torch.device(info.type)
    dt = parse_dtype(dtype)
    cap = info.capability
    if dt is None:
        if family_kind == "tiny" or info.type != "cuda":
            dt = torch.float32
        elif cap is not None and cap >= BF16_CAPABILITY:
            dt = torch.bfloat16
        elif cap is not None and cap >= FP16_CAPABILITY:
            dt = torch.float16
            notes.append(f"{info.name or 'this GPU'} (compute capability {cap[0]}.{cap[1]}) has no native "
                         f"bf16, so the models run in fp16")
        else:
            dt = torch.float32
            notes.append(f"{info.name or 'this GPU'} has neither native bf16 nor fp16 tensor cores "
                         f"(compute capability {'unknown' if cap is None else f'{cap[0]}.{cap[1]}'}); fp32")
    elif dt == torch.bfloat16 and info.type == "cuda" and (cap is None or cap < BF16_CAPABILITY):
        notes.append(f"bf16 was asked for, but {info.name or 'this GPU'} has no native bf16: it is "
                     f"emulated and slow; leave dtype unset for the policy's choice")
    keep = ("wo",) if dt == torch.float16 and arch == "t5" else ()
    if keep:
        notes.append("T5 in fp16: its 'wo' feed-forward output layers stay in fp32 (they overflow in fp16)")
    return Policy(dev, dt, keep, tuple(notes))


