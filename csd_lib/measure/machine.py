"""The machine a number was measured on: device label, environment and fingerprint, stored with cost
models and records, and the rule that says whether two fingerprints are one machine class.

A **fingerprint** is the CPU model string, its vector extensions (``/proc/cpuinfo`` flags: AVX2,
AVX-512, AMX, NEON, ...), the core count and torch threads, plus a measured **reference**: the
median seconds of the target's one-token step and of the smallest drafter's (a cost model takes them
from its own timings, a benchmark run from its AR and drafter calls). :func:`match_fingerprints`: two
fingerprints match when the device, CPU model, vector extensions and threads are the same and, where
both carry reference steps, each step is within :data:`REFERENCE_TOLERANCE` of the other.

The core count is stored and shown but not compared (:data:`STATIC_KEYS`, :func:`machine_key`): the
numbers are timed with a fixed number of torch threads, which is compared, so cores beyond them do not
enter a call's time, and what does (per-core speed, caches, memory bandwidth, threads outnumbering
cores) moves the reference steps, which are compared. ``os.cpu_count()`` also counts the host's CPUs,
not a container's share, so comparing it would split one machine class by host size. A difference is
named in :meth:`Match.describe`.
"""
from __future__ import annotations

import hashlib
import logging
import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import transformers

from .. import config
from ..engine.methods import REFERENCE
from .records import as_records

log = logging.getLogger(__name__)

# Two reference steps (one machine's, another's) name one machine class when neither is more than this
# factor slower than the other: a run on a busy machine stays inside it, another CPU generation does not.
REFERENCE_TOLERANCE = 1.5

# /proc/cpuinfo flags that change what a matrix kernel costs (x86 "flags", ARM "Features").
_VECTOR_FLAG = re.compile(r"^(avx\w*|amx\w*|fma|f16c|sse4_2|neon|asimd\w*|sve\d*|sme\d*|fphp|bf16|i8mm)$")

STATIC_KEYS = ("device", "cpu_model", "vector_extensions", "threads")  # compared by match_fingerprints
NOTED_KEYS = {"cpu_count": "cores"}  # stored and named where they differ, not compared (module docstring)


def device_name(device=None) -> str:
    """A file-name-safe device label: 'cpu', 'cuda-<gpu name>', 'mps'."""
    dev = torch.device(device) if device is not None else config.pick_device(None)
    if dev.type == "cuda":
        return "cuda-" + torch.cuda.get_device_name(dev).lower().replace(" ", "-")
    return dev.type


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def _cpu_model() -> str:
    for line in _cpuinfo():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def vector_extensions() -> list[str]:
    """The CPU's vector extensions (sorted), read from the first processor's flags in /proc/cpuinfo;
    empty where the OS has no such file."""
    for line in _cpuinfo():
        key = line.split(":", 1)[0].strip()
        if key in ("flags", "Features"):
            return sorted(f for f in line.split(":", 1)[1].split() if _VECTOR_FLAG.match(f))
    return []


def environment(device=None) -> dict:
    """What the numbers were measured on (stored with cost models and benchmark records): software
    versions and the static part of the fingerprint."""
    return {"device": device_name(device), "torch": torch.__version__, "transformers": transformers.__version__,
            "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(), "cpu_model": _cpu_model(),
            "vector_extensions": vector_extensions(), "python": platform.python_version(),
            "machine": platform.machine()}


def fingerprint(env: dict, reference: dict | None = None) -> dict:
    """A fingerprint from an :func:`environment` dict (one stored before vector extensions were recorded
    has them as None: unknown) and ``reference`` ({'target': s, 'drafter': s, 'drafter_name': str}, or
    None: not measured)."""
    return {"device": env.get("device"), "cpu_model": env.get("cpu_model"),
            "vector_extensions": env.get("vector_extensions"), "cpu_count": env.get("cpu_count"),
            "threads": env.get("threads"), "reference": dict(reference) if reference else None}


def run_fingerprint(records) -> dict | None:
    """The fingerprint of a benchmark run (None without a successful engine record): its first
    record's environment, and as reference the median over records of a one-token step, seconds per
    call: the target's in AR, and the smallest drafter's where it only drafted (reviewed no tokens: in
    a cascade it may review a cheaper level's drafts of many tokens a call; then, or in records stored
    before the engine counted reviewed tokens, it is not measured)."""
    recs = [r for r in as_records(records) if r.ok and r.plan is not None and "forward_time" in r.stats]
    if not recs:
        return None

    def per_call(name, rs):
        ts = [r.stats["forward_time"][name] / r.stats["calls"][name] for r in rs
              if r.stats["calls"].get(name) and (r.method == REFERENCE or "nodes" in r.stats)
              and not r.stats.get("nodes", {}).get(name)]
        return float(np.median(ts)) if ts else None
    smallest = max((r.plan.neural for r in recs), key=len)
    drafter = smallest[-1] if smallest else None
    ref = {"target": per_call("target", [r for r in recs if r.method == REFERENCE]), "drafter_name": drafter,
           "drafter": per_call(drafter, recs) if drafter else None}
    return fingerprint(recs[0].env, ref)


def describe_fingerprint(fp: dict | None, steps: bool = True) -> str:
    """A fingerprint in one line: CPU model, vector extensions (by family), cores, threads and (``steps``)
    the reference steps."""
    if not fp or not any(fp.get(k) for k in ("device", "cpu_model", "cpu_count")):  # run_one's records: no environment
        return "machine not recorded"
    ext = fp.get("vector_extensions")
    if ext is None:
        vec = "vector extensions not recorded"
    else:
        fams = [("AVX2", "avx2"), ("AVX-512", "avx512"), ("AMX", "amx"), ("NEON", "neon"), ("ASIMD", "asimd"),
                ("SVE", "sve")]
        vec = "+".join(name for name, pre in fams if any(e.startswith(pre) for e in ext)) or "no AVX2/AVX-512/NEON"
    ref = fp.get("reference") or {}
    ref_words = ", ".join(f"{name} {1e3 * ref[key]:.2f} ms" for key, name in (("target", "target"),
                                                                            ("drafter", ref.get("drafter_name")))
                          if ref.get(key))
    words = (f"{fp.get('device')}: {fp.get('cpu_model')}, {vec}, {fp.get('cpu_count')} cores, "
             f"{fp.get('threads')} torch thread(s)")
    return words + (f"; one-token step: {ref_words or 'not measured'}" if steps else "")


def by_machine(records) -> dict[str, list]:
    """A run's records grouped by machine class ({:func:`machine_key` of their environment: records}, in
    file order): one group unless the run was resumed on another machine."""
    out: dict[str, list] = {}
    for r in records:
        env = r.env if hasattr(r, "env") else r.get("env", {})
        out.setdefault(machine_key(fingerprint(env or {})), []).append(r)
    return out


def machine_key(fp: dict) -> str:
    """A short file-name-safe label of a fingerprint's machine class: the CPU model's first words, the
    threads and 8 hex digits of a hash over the CPU model, vector extensions and threads."""
    slug = re.sub(r"[^a-z0-9]+", "-", str(fp.get("cpu_model") or "unknown").lower()).strip("-")[:24].strip("-")
    text = repr((fp.get("cpu_model"), fp.get("vector_extensions"), fp.get("threads")))
    return f"{slug}-{fp.get('threads')}t-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


@dataclass
class Match:
    """How two fingerprints compare: ``verdict`` 'match', 'mismatch' or 'unknown' (nothing differs, but a
    static field is missing from one: a file stored before fingerprints), the ``differences`` as words,
    ``ratios``: {step: this machine's reference seconds over the other's} where both have one, and
    ``notes``: differences in fields that are not compared (:data:`NOTED_KEYS`)."""
    verdict: str
    differences: list[str] = field(default_factory=list)
    ratios: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        """True unless the fingerprints differ (an unknown one is used, with a warning)."""
        return self.verdict != "mismatch"

    def describe(self) -> str:
        """The verdict in words, with how far the reference steps differ (this machine's over the other's)."""
        steps = ", ".join(f"{k} step {r:.2f}x" for k, r in self.ratios.items())
        words = "; ".join(self.differences) or "same machine class"
        words += "".join(f"; {n}" for n in self.notes)
        return words + (f" (reference steps here over there: {steps})" if steps else " (no reference steps to compare)")


def match_fingerprints(here: dict, stored: dict, tolerance: float = REFERENCE_TOLERANCE) -> Match:
    """Whether a number measured on ``stored`` applies ``here``: same device, CPU model, vector
    extensions and threads, and, where both carry reference steps, each step within ``tolerance``
    (a factor either way; the drafter's only when both name the same drafter). The core count is not
    compared (module docstring); where it differs, ``notes`` says so."""
    diffs, unknown = [], []
    notes = [f"{word} {here[key]} here, {stored[key]} there (not compared: the threads and reference steps are)"
             for key, word in NOTED_KEYS.items()
             if None not in (here.get(key), stored.get(key)) and here[key] != stored[key]]
    for key in STATIC_KEYS:
        a, b = here.get(key), stored.get(key)
        if a is None or b is None:
            unknown.append(key)
        elif a != b:
            if key == "vector_extensions":
                a, b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
                diffs.append(f"vector extensions differ (only here: {', '.join(a) or '-'}; "
                             f"only there: {', '.join(b) or '-'})")
            else:
                diffs.append(f"{key.replace('_', ' ')} {a!r} here, {b!r} there")
    ra, rb = here.get("reference") or {}, stored.get("reference") or {}
    ratios = {}
    steps = ["target"] + (["drafter"] if ra.get("drafter_name") == rb.get("drafter_name") else [])
    for step in steps:
        if ra.get(step) and rb.get(step):
            ratios[step] = ra[step] / rb[step]
            if max(ratios[step], 1 / ratios[step]) > tolerance:
                name = "target" if step == "target" else ra["drafter_name"]
                diffs.append(f"{name}'s one-token step {1e3 * ra[step]:.2f} ms here, {1e3 * rb[step]:.2f} ms there "
                             f"({ratios[step]:.2f}x, beyond the {tolerance}x tolerance)")
    if diffs:
        return Match("mismatch", diffs, ratios, notes)
    if unknown:
        return Match("unknown", [f"not recorded: {', '.join(unknown)} (a file stored before fingerprints)"], ratios,
                     notes)
    return Match("match", [], ratios, notes)
