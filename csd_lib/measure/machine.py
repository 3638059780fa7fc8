"""The machine a number was measured on: device label and environment, stored with cost models and records.
"""
from __future__ import annotations

import logging
import os
import platform
from pathlib import Path

import torch
import transformers

from .. import config

log = logging.getLogger(__name__)


def device_name(device=None) -> str:
    """A file-name-safe device label: 'cpu', 'cuda-<gpu name>', 'mps'."""
    dev = torch.device(device) if device is not None else config.pick_device(None)
    if dev.type == "cuda":
        return "cuda-" + torch.cuda.get_device_name(dev).lower().replace(" ", "-")
    return dev.type


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device=None) -> dict:
    """What the numbers were measured on (stored with cost models and benchmark records)."""
    return {"device": device_name(device), "torch": torch.__version__, "transformers": transformers.__version__,
            "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(), "cpu_model": _cpu_model(),
            "python": platform.python_version(), "machine": platform.machine()}
