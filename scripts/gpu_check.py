"""The GPU check: the real presets at full depth on shadow checkpoints, everything measured in one JSON.

Run by scripts/gpu_check.sh, which says how to call it through the device tool. The plan
(``--plan``) is a list of items run in order: a preset with an optional dtype (``vicuna``,
``flan-t5-colab:fp16``) or a notebook (``nb:00``). For a preset:

* ``shadows``: its checkpoints built in a temporary hub cache at full depth (random weights drawn
  on the GPU, csd_lib.families.shadow): the lent machine has no network and no hub cache, so no
  real checkpoint can be there. Random weights accept almost nothing: the numbers are costs per
  call and the paths' health, never speedups.
* ``costs``: the family loaded in the dtype asked for (fp16 is the T4 policy: T5's ``wo`` layers
  stay fp32; the record says which dtype each model's layers got), its per-call cost model
  measured on fewer points than ``python -m csd_lib costs``; per model, a call's wall time beside
  the time its kernels keep the GPU busy (``call_times``: how launch-bound it is), and the host
  memory the load took (``HostMemory``).
* ``predict`` (a preset's first item): ``python -m csd_lib predict`` priced from those measured
  costs, beside ``predict --max-layers 2`` for TWO_LAYERS (two layers measured, scaled to full
  depth, in the policy dtype): how good the extrapolation is. Its time limit comes from a
  measured pricing time (PREDICT_CPU_S, then this run's own).
* ``bench``: ``python -m csd_lib bench --n 2`` (ar, sd, csd) priced with the measured costs; its
  mismatches against AR are the item's identity check (fp32 the baseline for bf16 and fp16).

Before any step, the transformers installed must be in the tested range (pyproject.toml), else
the check refuses in one line (``version_gate``; scripts/gpu_wheels.sh carries a tested one).

A notebook item executes ``notebooks/NN_*.ipynb`` headless (nbclient) with CSD_FAMILY set to
``--notebook-family`` (flan-t5-colab) on the same shadows, its prompts and tokens per generation
capped (``--nb-prompts``, ``--nb-new-tokens``). Each step runs as a subprocess with its own time limit;
a step whose estimate (ESTIMATE_S, scaled by how fast the finished steps ran against theirs) no
longer fits the budget is skipped and the JSON says so; a step that fails is recorded and the plan
goes on. ``OUT/gpu_check.json`` is rewritten (atomically) after every step.

    python scripts/gpu_check.py --out results/gpu_check               # on a GPU machine
    python scripts/gpu_check.py --out /tmp/gpu-dry --dry-run           # CPU: the same plan, 1 layer, tiny lengths

The step names (``env``, ``shadows``, ``costs``, ``notebook``) are also this script's worker
commands, which the plan runs as subprocesses; they are not meant to be called by hand.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python scripts/gpu_check.py` puts scripts/ on sys.path, not the repo root
    sys.path.insert(0, str(ROOT))

from csd_lib.engine.methods import REFERENCE  # noqa: E402  (pure: no torch)
from csd_lib.fileio import write_atomic  # noqa: E402  (light: no torch)

PRESETS = ("flan-t5-colab", "flan-t5", "vicuna")
TINY = ("tiny-t5", "tiny-llama")  # embedded families: no shadows needed
DTYPES = ("fp32", "bf16", "fp16")
# The largest first (an overrun skips the cheap items at the end), then flan-t5-colab's identity in each
# dtype (fp32: kernels that differ only by rounding, the baseline for bf16's and fp16's mismatch counts).
DEFAULT_PLAN = "vicuna,flan-t5,flan-t5-colab:bf16,flan-t5-colab:fp16,flan-t5-colab:fp32,nb:00,nb:07"
# Seconds each step is expected to take: the skip rule's estimates (a step may run for up to LIMIT_FACTOR
# times its estimate before it is stopped). On one H100 or H200 at full depth they are not measured (no GPU
# check has run yet) but built up from: a fresh interpreter importing torch, transformers and csd_lib
# (3 s) and starting CUDA (2 s); shadows written in fp16 (13.5 GB for Vicuna-7B, 22.6 GB for
# FLAN-T5-XXL) at an assumed 1 GB/s (the device notes give no disk speed) and loaded back to the GPU
# at about 3 GB/s; forward calls bound by kernel launches, not by the GPU (about 20 ms for Vicuna-7B's
# 32 layers, 12 ms for a 24-layer T5 decoder, 2 ms for vicuna-68m or a 2-layer cut); random weights
# accept no draft, so a drafting method pays its whole draft for every token; the engine-overhead
# generations of a cost measurement (csd_lib.price.costs) on top of its points; notebook 07's exact
# sampling on the CPU (about 25 s). ``predict`` prices on the CPU alone, the same work in a dry run
# (which prices the GPU run's generation length): its estimate is PREDICT_CPU_S, then the slowest
# predict this run has measured. They add up to about 400 s of the 460 s budget.
# A dry run's: about what its steps took on a busy shared 2-core CPU, less a tenth.
ESTIMATE_S = {
    "env": 8, "notebook": {"00": 35, "07": 45},
    "shadows": {"vicuna": 30, "flan-t5-colab": 8, "flan-t5": 45},
    "costs": {"vicuna": 19, "flan-t5-colab": 12, "flan-t5": 24},
    "predict-2-layers": {"vicuna": 25, "flan-t5": 25},   # 2-layer costs measured (15 s), then priced (10 s)
    "bench": {"vicuna": 16, "flan-t5-colab": 12, "flan-t5": 22},
}
DRY_ESTIMATE_S = {
    "env": 5, "notebook": {"00": 50, "07": 50},
    "shadows": {"vicuna": 20, "flan-t5-colab": 15, "flan-t5": 25},
    "costs": {"vicuna": 60, "flan-t5-colab": 30, "flan-t5": 65},
    "predict-2-layers": {"vicuna": 70, "flan-t5": 70},
    "bench": {"vicuna": 30, "flan-t5-colab": 18, "flan-t5": 25},
}
# Measured: the CPU seconds (user + system, as a step's ``cpu_s``) of `predict` with the GPU run's settings
# (--acceptance as ACCEPTANCE, --max-new-tokens 16, one torch thread), imports included: 6.6 s + 0.5 s for
# vicuna, 7.8 s + 0.5 s for flan-t5 and for flan-t5-colab (2026-12-07, AMD EPYC shared with other jobs,
# priced on the embedded families' cost files: the same plans, so the same work), and 8.9 s in a dry run's
# predict of flan-t5-colab on its own measured costs. CPU time, which other jobs do not inflate: an idle
# core of the GPU machine prices in about that wall time. Rounded up.
PREDICT_CPU_S = 10
# The settings of a run on a GPU and of a dry run (each an option's default): few cost points, short
# generations, the notebooks' knobs capped (csd_lib.config: CSD_MAX_PROMPTS, CSD_MAX_NEW_TOKENS); a dry
# run also cuts the prompts the costs are timed on (prompt_tokens; None: the task's prompt, and
# predict's default).
FULL = dict(budget_s=460.0, cost_seconds=2.0, n_grid=(1, 16), min_reps=2, prompt_tokens=None, bench_n=2,
            max_new_tokens=16, nb_prompts=1, nb_new_tokens=16, cell_timeout=120)
DRY = dict(budget_s=1500.0, cost_seconds=0.5, n_grid=(1, 2), min_reps=1, prompt_tokens=8, bench_n=1,
           max_new_tokens=4, nb_prompts=1, nb_new_tokens=4, cell_timeout=300)
# The acceptance profile both predictions price with: the paper's Fig. 2 for FLAN-T5; for Vicuna,
# which no published figure covers, assumed rates (drafter, MaG). The same for both, so their
# ratio measures the depth extrapolation alone.
ACCEPTANCE = {"vicuna": "0.6,0.3"}
# Presets whose prediction from 2 measured layers is set beside the one from full-depth costs (the largest:
# where the extrapolation reaches furthest).
TWO_LAYERS = ("vicuna", "flan-t5")
LIMIT_FACTOR = 3
TAIL_CHARS = 3000


def estimate(kind: str, key: str | None, dry: bool) -> float:
    """The estimate of a step: its kind's, or its preset's or notebook's (``key``)."""
    if kind == "predict":
        return PREDICT_CPU_S
    e = (DRY_ESTIMATE_S if dry else ESTIMATE_S)[kind]
    return e[key] if isinstance(e, dict) else e


def parse_plan(text: str) -> list[tuple[str, str, str | None]]:
    """('preset', name, dtype or None) and ('notebook', 'NN', None) items; a bad item raises ValueError."""
    items = []
    for raw in (t.strip() for t in text.split(",")):
        if not raw:
            continue
        if raw.startswith("nb:"):
            nb = raw[3:]
            if len(list((ROOT / "notebooks").glob(f"{nb}_*.ipynb"))) != 1:
                raise ValueError(f"--plan item {raw!r}: no single notebooks/{nb}_*.ipynb")
            items.append(("notebook", nb, None))
            continue
        preset, _, dtype = raw.partition(":")
        if preset not in PRESETS:
            raise ValueError(f"--plan item {raw!r}: unknown preset {preset!r}; use one of {', '.join(PRESETS)} "
                             f"or nb:NN")
        if dtype and dtype not in DTYPES:
            raise ValueError(f"--plan item {raw!r}: unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
        items.append(("preset", preset, dtype or None))
    if not items:
        raise ValueError("--plan is empty")
    return items


def int_list(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return vals


# -- the transformers gate: the check runs only on a transformers the tests run ---------------------

def tested_transformers() -> str:
    """The transformers versions the tests run: pyproject.toml's specifier for it (e.g. ``>=5.17,<=5.24``)."""
    import tomllib
    from packaging.requirements import Requirement
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next(str(r.specifier) for r in map(Requirement, deps) if r.name == "transformers")


def transformers_here() -> tuple[str | None, str | None]:
    """(version, folder) of the transformers this interpreter would import, read without importing it."""
    import importlib.metadata as md
    import importlib.util
    spec = importlib.util.find_spec("transformers")
    if spec is None or spec.origin is None:
        return None, None
    origin = Path(spec.origin).resolve()
    dists = [d for d in md.distributions() if (d.metadata["Name"] or "").lower() == "transformers"]
    mine = [d for d in dists if Path(d.locate_file("transformers/__init__.py")).resolve() == origin]
    dist = (mine or dists or [None])[0]
    return (dist.version if dist else None), str(origin.parent.parent)


def version_gate(version: str | None = None) -> str | None:
    """Why the check must not start on this transformers (``version``, else the one installed), in one line; or None.

    The check's numbers mean something only on a transformers the tests run (an untested one can
    drop the KV cache without an error); scripts/gpu_wheels.sh carries a tested one when the lent
    machine's is outside the range, and scripts/gpu_check.sh unpacks it first on the path.
    """
    from packaging.specifiers import SpecifierSet
    tested, where = SpecifierSet(tested_transformers()), None
    if version is None:
        version, where = transformers_here()
    if version is None:
        return "transformers is not installed here; install a tested one (pyproject.toml: transformers" \
               f"{tested}) or carry it: bash scripts/gpu_wheels.sh"
    if tested.contains(version, prereleases=True):
        return None
    carried = os.environ.get("GPU_CHECK_UNPACKED")
    return (f"transformers {version}{f' ({where})' if where else ''} is outside the tested range {tested} "
            f"(pyproject.toml) and " + (f"{carried} holds no tested one; rebuild it" if carried else
                                        "no wheel of a tested one was carried; build one") +
            f" with MACHINE_TRANSFORMERS={version} bash scripts/gpu_wheels.sh and carry .gpu-wheels/site.tar.xz")


# -- workers: each runs in its own subprocess and prints its result as one line "RESULT {json}" ----

def _result(obj) -> None:
    print("RESULT " + json.dumps(obj, default=str), flush=True)


def _use_hub(hub: str) -> None:
    """This process reads the shadow hub, offline."""
    from huggingface_hub import constants
    from csd_lib import config
    constants.HF_HUB_CACHE = hub
    constants.HF_HUB_OFFLINE = True
    config.HF_OFFLINE = True


def worker_env(args) -> None:
    """The machine: torch, CUDA, the packages the check needs, and whether any real checkpoint is cached."""
    import importlib.metadata as md
    import torch
    from csd_lib.families.presets import REAL_PRESETS
    from csd_lib.measure.machine import environment
    version, folder = transformers_here()
    out = dict(env=environment(), torch=torch.__version__, cuda=torch.cuda.is_available(),
               python=sys.version.split()[0],
               transformers=dict(version=version, folder=folder, tested=tested_transformers(),
                                 carried=os.environ.get("GPU_CHECK_UNPACKED")))
    if torch.cuda.is_available():
        free, total = torch.cuda.mem_get_info()
        out.update(gpu=torch.cuda.get_device_name(), capability=list(torch.cuda.get_device_capability()),
                   gpu_mem_gib=round(total / 2 ** 30, 1), gpu_free_gib=round(free / 2 ** 30, 1))
    pkgs = {}
    for name in ("transformers", "huggingface_hub", "tokenizers", "plotly", "ipywidgets", "ipython", "nbclient",
                 "nbformat", "ipykernel", "jupyter_client", "pyzmq", "pandas", "datasets", "accelerate"):
        try:
            pkgs[name] = md.version(name)
        except md.PackageNotFoundError:
            pkgs[name] = None
    out["packages"] = pkgs
    from huggingface_hub import constants
    real = Path(os.environ.get("GPU_CHECK_REAL_HUB") or constants.HF_HUB_CACHE)  # the machine's own cache
    ids = {rid for p in REAL_PRESETS.values() for rid in (p["target"], *p["drafters"])}
    out["real_checkpoints_cached"] = sorted(r for r in ids if (real / f"models--{r.replace('/', '--')}").is_dir())
    out["disk_free_gib"] = round(shutil.disk_usage(tempfile.gettempdir()).free / 2 ** 30, 1)
    _result(out)


def worker_shadows(args) -> None:
    import torch
    from csd_lib.families.shadow import build_shadows
    dev = args.device or ("cuda" if torch.cuda.is_available() else None)
    t0 = time.perf_counter()
    recs = build_shadows(args.hub, [args.preset], max_layers=args.max_layers, device=dev, verbose=False)
    _result(dict(seconds=time.perf_counter() - t0, built_on=dev or "cpu",
                 models=[{k: r[k] for k in ("id", "params_full", "params_built", "cut", "reused", "tokens_per_word")}
                         for r in recs]))


class HostMemory:
    """Growth of this process's host memory over a ``with`` block, in bytes: ``peak`` (VmHWM, reset first
    where the kernel allows it, else an upper bound), which counts a checkpoint's pages mapped while it is
    read, and ``anon_peak`` (RssAnon sampled every 20 ms), memory the process itself holds."""

    def __enter__(self):
        try:
            Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
        except OSError:
            pass
        self.rss0, self.anon0 = self._read("VmRSS"), self._read("RssAnon")
        self.anon_max, self._stop = self.anon0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = self._read("VmHWM") - self.rss0
        self.anon_peak = max(self.anon_max, self._read("RssAnon")) - self.anon0

    def _sample(self):
        while not self._stop.wait(0.02):
            self.anon_max = max(self.anon_max, self._read("RssAnon"))

    @staticmethod
    def _read(key: str) -> int:
        for ln in Path("/proc/self/status").read_text().splitlines():
            if ln.startswith(key + ":"):
                return int(ln.split()[1]) * 1024
        return 0


def call_times(lm, prompt_ids: list[int], n: int, reps: int = 5) -> dict:
    """One model's call scoring ``n`` tokens after the prompt (``LM.logits``, as the engine calls it): the median
    wall time and, on a GPU, the median time its kernels keep the GPU busy, in ms.

    GPU-busy: CUDA events around the call, with the GPU first held by a sleep kernel longer than the call's
    wall time, so that every kernel is queued before the first runs and no launch gap falls between the
    events. ``busy / wall`` near 1: the GPU bounds the call; near 0: kernel launches (the CPU) do.
    None on the CPU, where there is no such split.
    """
    import torch
    seq = lm.start(list(prompt_ids))
    seq = seq + [seq[-1]] * n  # n tokens scored after the prompt: the engine re-feeds them each call
    cuda = lm.device.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(lm.device)) if cuda else (lambda: None)
    lm.logits(seq, n)  # warm-up
    walls, busy = [], []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        lm.logits(seq, n)
        sync()
        walls.append(time.perf_counter() - t0)
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        cycles = _sleep_cycles(lm.device, 2 * max(walls) + 0.005)
        for _ in range(reps):
            sync()
            torch.cuda._sleep(cycles)  # holds the GPU while the call's kernels are queued
            start.record()
            lm.logits(seq, n)
            end.record()
            end.synchronize()
            busy.append(start.elapsed_time(end) / 1e3)
    lm.release()
    wall = sorted(walls)[len(walls) // 2]
    gpu = sorted(busy)[len(busy) // 2] if busy else None
    return dict(wall_ms=round(wall * 1e3, 3), gpu_busy_ms=None if gpu is None else round(gpu * 1e3, 3),
                busy_fraction=None if gpu is None else round(gpu / wall, 3))


def _sleep_cycles(device, seconds: float) -> int:
    """GPU clock cycles of ``torch.cuda._sleep`` that last about ``seconds`` (measured once with CUDA events)."""
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    probe = 10 ** 7
    torch.cuda.synchronize(device)
    start.record()
    torch.cuda._sleep(probe)
    end.record()
    end.synchronize()
    return int(probe * seconds / max(start.elapsed_time(end) / 1e3, 1e-6))


def worker_costs(args) -> None:
    """Load the family in the dtype asked for, record where and how each model's weights are held, time its calls."""
    _use_hub(args.hub)
    import torch
    from csd_lib.engine.cascade import encode_prompt
    from csd_lib.families.family import load_family
    from csd_lib.families.tasks import load_task
    from csd_lib.price.costs import measure_costs, save_costs
    t0 = time.perf_counter()
    with HostMemory() as host:  # each weight read straight onto the device: the host holds no model
        fam = load_family(args.preset, device=args.device, dtype=args.dtype)
        if fam.target.device.type == "cuda":
            torch.cuda.synchronize()
    load_s = time.perf_counter() - t0
    keep = fam.policy.keep_fp32 if fam.policy else ()
    models = {}
    for lm in fam.models:
        dts = {}
        for name, p in lm.model.named_parameters():
            key = "kept_fp32" if any(part in keep for part in name.split(".")) else "other"
            dts.setdefault(key, set()).add(str(p.dtype).removeprefix("torch."))
        models[lm.name] = dict(id=lm.model_id, params=lm.n_params, dtype=str(lm.dtype).removeprefix("torch."),
                               device=str(lm.device), weights={k: sorted(v) for k, v in dts.items()})
    prompt = load_task(fam.task, "val", 1)[0].prompt  # one prompt for the engine-overhead runs, not three
    ids = encode_prompt(fam, prompt)[:args.prompt_tokens]  # None: all of it
    t0 = time.perf_counter()
    cm = measure_costs(fam, ids, seconds=args.seconds, n_grid=args.n_grid, warmup=1, min_reps=args.min_reps)
    measure_s = time.perf_counter() - t0
    save_costs(cm, Path(args.costs_out))
    calls = {lm.name: {str(n): call_times(lm, ids, n) for n in sorted({1, max(args.n_grid)})} for lm in fam.models}
    peak = torch.cuda.max_memory_allocated() / 2 ** 30 if fam.target.device.type == "cuda" else None
    weights = sum(p.numel() * p.element_size() for lm in fam.models for p in lm.model.parameters())
    _result(dict(load_s=load_s, measure_s=measure_s, n_grid=list(args.n_grid), prompt_tokens=len(ids),
                 weights_gib=round(weights / 2 ** 30, 2), host_peak_gib=round(host.peak / 2 ** 30, 2),
                 host_anon_peak_gib=round(host.anon_peak / 2 ** 30, 2),
                 calls=calls, keep_fp32=list(keep),
                 policy_notes=list(fam.policy.notes) if fam.policy else [], models=models,
                 wo_fp32=all("kept_fp32" not in m["weights"] or m["weights"]["kept_fp32"] == ["float32"]
                             for m in models.values()) if keep else None,
                 cost_rows=cm.summary_rows(), peak_gpu_gib=peak))


def worker_notebook(args) -> None:
    """Execute one notebook headless; per-cell seconds, and the failing cell with its error."""
    import nbformat
    from nbclient import NotebookClient
    path = next((ROOT / "notebooks").glob(f"{args.notebook}_*.ipynb"))
    caps = dict(CSD_MAX_PROMPTS=str(args.nb_prompts), CSD_MAX_NEW_TOKENS=str(args.nb_new_tokens))
    os.environ.update(CSD_FAMILY=args.family, HF_HUB_CACHE=args.hub, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                      CSD_PLOTLY_RENDERER="plotly_mimetype", **caps)  # plotly.js is not carried (scripts/gpu_wheels.sh)
    nb = nbformat.read(path, as_version=4)
    cells, start = [], {}

    def done(cell, cell_index, execute_reply):
        cells.append([cell_index, round(time.time() - start["t"], 2)])
        print(f"cell {cell_index}: {cells[-1][1]} s", flush=True)  # what a step stopped at its limit still shows

    client = NotebookClient(nb, timeout=int(args.cell_timeout), kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}, on_cell_executed=done,
                            on_cell_execute=lambda cell, cell_index: start.update(i=cell_index, t=time.time()))

    t0, error = time.time(), None
    try:
        client.execute()
    except Exception as e:  # the failing cell is the record, not a crash of the check
        lines = [ln for ln in re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip().splitlines() if ln.strip()]  # no colours
        error = f"cell {start.get('i')}: {type(e).__name__}: {lines[-1][:300] if lines else ''}"
    n_code = sum(c.cell_type == "code" for c in nb.cells)
    _result(dict(notebook=path.name, family=args.family, caps=caps, seconds=round(time.time() - t0, 1),
                 code_cells=n_code, cells_run=len(cells), cell_seconds=cells, error=error))
    if error:
        sys.exit(1)


WORKERS = {"env": worker_env, "shadows": worker_shadows, "costs": worker_costs, "notebook": worker_notebook}


def worker_main(argv) -> int:
    ap = argparse.ArgumentParser(prog=f"gpu_check.py {argv[0]}")
    ap.add_argument("--hub")
    ap.add_argument("--preset", choices=PRESETS)
    ap.add_argument("--dtype", choices=DTYPES)
    ap.add_argument("--device")
    ap.add_argument("--max-layers", type=int)
    ap.add_argument("--seconds", type=float, default=FULL["cost_seconds"])
    ap.add_argument("--n-grid", type=int_list, default=FULL["n_grid"])
    ap.add_argument("--min-reps", type=int, default=FULL["min_reps"])
    ap.add_argument("--prompt-tokens", type=int, default=None)
    ap.add_argument("--costs-out")
    ap.add_argument("--family")
    ap.add_argument("--notebook")
    ap.add_argument("--cell-timeout", type=float, default=FULL["cell_timeout"])
    ap.add_argument("--nb-prompts", type=int, default=FULL["nb_prompts"])
    ap.add_argument("--nb-new-tokens", type=int, default=FULL["nb_new_tokens"])
    WORKERS[argv[0]](ap.parse_args(argv[1:]))
    return 0


# -- the plan ------------------------------------------------------------------------------------

class Check:
    """Runs steps as subprocesses within a budget and keeps the one JSON up to date."""

    def __init__(self, args, out: Path, work: Path, hub: Path):
        self.args, self.out, self.work, self.hub = args, out, work, hub
        self.t0 = time.monotonic()
        self.env = {**os.environ, "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                    "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1", "CSD_CACHE_DIR": str(work / "cache"),
                    "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
        self.env.pop("CSD_FAMILY", None)
        self.env["GPU_CHECK_REAL_HUB"] = os.environ.get("HF_HUB_CACHE") or str(
            Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub")
        self.record = dict(
            check="gpu_check", started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            dry_run=args.dry_run, budget_s=args.budget_s, plan=args.plan,
            checkpoints=("shadow checkpoints (csd_lib.families.shadow): the published configs and vocabularies "
                         f"with random weights, {'1 layer' if args.dry_run else 'full depth'}, built in a temporary "
                         "hub cache; the lent machine has no network and no hub cache, so no real checkpoint "
                         "can be there. Random weights accept almost nothing: these are costs per call and the "
                         "paths' health, never speedups"),
            steps=[], elapsed_s=0.0)

    def pace(self) -> float:
        """Seconds the finished steps took per second estimated (1 before any; within 1/4 and 4): this
        machine's speed against the estimates, applied to the steps still to come."""
        done = [r for r in self.record["steps"] if r["status"] == "ok" and r.get("paced", True)]
        est, took = sum(r["est_s"] / r["pace"] for r in done), sum(r["seconds"] for r in done)
        return min(4.0, max(0.25, took / est)) if est else 1.0

    def left(self) -> float:
        return self.args.budget_s - (time.monotonic() - self.t0)

    def save(self) -> None:
        self.record["elapsed_s"] = round(time.monotonic() - self.t0, 1)
        write_atomic(self.out / "gpu_check.json", json.dumps(self.record, indent=1, default=str) + "\n")

    def step(self, name: str, cmd: list[str], est: float, **meta) -> dict:
        """Run one step unless its estimate overruns the budget; record status, seconds, CPU seconds, tail, RESULT.

        ``paced=False``: work on the CPU alone (predict), whose estimate this machine's GPU pace does not scale.
        """
        paced = meta.pop("paced", True)
        pace, raw = (self.pace() if paced else 1.0), est
        est = round(raw * pace, 1)
        rec = dict(name=name, **meta, est_s=est, pace=round(pace, 3), **({} if paced else {"paced": False}))
        self.record["steps"].append(rec)
        left = self.left()
        if meta.get("needs"):
            rec.update(status="skipped", why=meta["needs"])
        elif est > left:
            rec.update(status="skipped", why=f"would overrun: about {est:.0f} s needed, {max(left, 0):.0f} s "
                                             f"left of the {self.args.budget_s:.0f} s budget")
        else:
            busy = busy_factor()
            limit = max(1.0, min(left, LIMIT_FACTOR * max(raw, est) * busy))
            if busy > 1:
                rec["busy"] = round(busy, 2)
            rec["cmd"] = " ".join(cmd)
            print(f"[{time.monotonic() - self.t0:5.0f} s] {name}: {rec['cmd']} (limit {limit:.0f} s)", file=sys.stderr,
                  flush=True)
            t0, cpu0 = time.monotonic(), _children_cpu()
            # its own process group, so that a step stopped at its limit takes its children (a kernel) along
            p = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True)
            try:
                out, err = p.communicate(timeout=limit)
                rc = p.returncode
                status = "ok" if rc == 0 else "failed"
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, err = p.communicate()
                rc, status = None, "timeout"
            rec.update(status=status, rc=rc, seconds=round(time.monotonic() - t0, 1),
                       cpu_s=round(_children_cpu() - cpu0, 1))
            results = [ln[7:] for ln in out.splitlines() if ln.startswith("RESULT ")]
            if meta.get("json_stdout") and status == "ok":  # a csd_lib command's --json line
                results = [ln for ln in out.splitlines() if ln.startswith("{")]
            if results:
                try:
                    rec["result"] = json.loads(results[-1])
                except ValueError as e:
                    rec["result_error"] = f"its output was not JSON: {e}"
            rec["tail"] = (out if meta.get("json_stdout") is None else "")[-TAIL_CHARS // 3:] + err[-TAIL_CHARS:]
        rec.pop("needs", None)
        rec.pop("json_stdout", None)
        print(f"[{time.monotonic() - self.t0:5.0f} s] {name}: {rec['status']}"
              + (f" in {rec['seconds']} s" if "seconds" in rec else f" ({rec['why']})"), file=sys.stderr,
              flush=True)
        if rec["status"] in ("failed", "timeout"):
            print("  " + rec["tail"][-600:].replace("\n", "\n  "), file=sys.stderr, flush=True)
        self.save()
        return rec


def predict_steps(check: Check, name: str, tag: str, costs: Path, have_costs: bool, dry: bool, priced: list,
                  extra: list[str]) -> None:
    """``predict`` from the measured costs and, for TWO_LAYERS presets, beside ``predict --max-layers 2``.

    ``priced``: the seconds of the predict steps so far (the estimate of the next; this one's is added).
    """
    py = sys.executable
    # the GPU run's generation length in a dry run too: the same pricing work, so its time is measured there
    pr = ["--acceptance", ACCEPTANCE.get(name, "paper"), "--max-new-tokens", str(FULL["max_new_tokens"]), "--json"]
    m = check.step(f"predict:{tag}", [py, "-m", "csd_lib", "predict", "--family", name, "--costs", str(costs), *pr],
                   max(priced or [estimate("predict", None, dry)]), preset=name, dtype=tag.rsplit("-", 1)[1],
                   needs=None if have_costs else "no measured costs", json_stdout=True, paced=False)
    if m["status"] == "ok":
        priced.append(m["seconds"])
    if name not in TWO_LAYERS:
        return
    two = check.step(f"predict-2-layers:{name}", [py, "-m", "csd_lib", "predict", "--family", name, "--max-layers",
                                                  "1" if dry else "2", "--seconds", str(check.args.cost_seconds),
                                                  *extra, *pr],
                     estimate("predict-2-layers", name, dry), preset=name, dtype="policy", json_stdout=True)
    if m.get("result") and two.get("result"):
        m["compare_2_layers"] = compare_predictions(m["result"], two["result"])
        if dry:
            m["compare_note"] = ("dry run: the measured costs are of 1-layer shadows, the other prediction "
                                 "scales 1 layer to full depth, so the ratio checks nothing here")
        check.save()


def busy_factor() -> float:
    """How many runnable jobs share each core (the 1-minute load average over the cores), at least 1: a step's
    time limit grows by it, so that other jobs on a shared machine do not stop a step that is not stuck."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: a step's own work, whatever else runs."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def compare_predictions(measured: dict, two: dict) -> list[dict]:
    """Tokens/s predicted from the measured costs beside the 2-layer extrapolation, per (method, K) both price."""
    def rows(res):
        return {(r["method"], r.get("drafter"), json.dumps(r.get("k"))): r for r in res.get("rows", [])}
    a, b = rows(measured), rows(two)
    out = []
    for key in sorted(a.keys() & b.keys(), key=str):
        ta, tb = a[key].get("tokens_per_s"), b[key].get("tokens_per_s")
        if ta and tb:
            out.append(dict(method=key[0], drafter=key[1], k=json.loads(key[2]), tokens_per_s_measured=ta,
                            tokens_per_s_2_layers=tb, ratio=tb / ta))
    return out


def run_plan(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu-check-", dir=args.work))
    hub = work / "hub"
    check = Check(args, out, work, hub)
    py, me = sys.executable, str(Path(__file__).resolve())
    dry = args.dry_run
    dev = ["--device", "cpu"] if dry else []
    layers = ["--max-layers", "1"] if dry else []
    cut = ["--prompt-tokens", str(args.prompt_tokens)] if args.prompt_tokens else []
    plan = parse_plan(args.plan)
    last_use = {}
    for i, (kind, name, _) in enumerate(plan):
        last_use[args.notebook_family if kind == "notebook" else name] = i
    try:
        env = check.step("env", [py, me, "env"], estimate("env", None, dry))
        check.record["machine"] = env.get("result")
        built, predicted, priced = {}, set(), []  # priced: seconds of the predict steps so far
        for i, (kind, name, dtype) in enumerate(plan):
            preset = args.notebook_family if kind == "notebook" else name
            if preset in TINY:
                built[preset] = True
            if preset not in built:
                built[preset] = check.step(f"shadows:{preset}", [py, me, "shadows", "--hub", str(hub), "--preset",
                                                                 preset, *dev, *layers],
                                           estimate("shadows", preset, dry), preset=preset)["status"] == "ok"
            needs = None if built[preset] else f"the shadows of {preset} were not built"
            if kind == "notebook":
                check.step(f"notebook:{name}", [py, me, "notebook", "--hub", str(hub), "--family", preset,
                                                "--notebook", name, "--cell-timeout", str(args.cell_timeout),
                                                "--nb-prompts", str(args.nb_prompts), "--nb-new-tokens",
                                                str(args.nb_new_tokens)],
                           estimate("notebook", name, dry), notebook=name, family=preset, needs=needs)
                continue
            tag = f"{name}-{dtype or 'policy'}"
            dt = ["--dtype", dtype] if dtype else []
            costs = work / f"costs-{tag}.json"
            c = check.step(f"costs:{tag}", [py, me, "costs", "--hub", str(hub), "--preset", name, *dt, *dev,
                                            "--seconds", str(args.cost_seconds), "--n-grid",
                                            ",".join(map(str, args.n_grid)), "--min-reps", str(args.min_reps),
                                            *cut, "--costs-out", str(costs)],
                           estimate("costs", name, dry), preset=name, dtype=dtype, needs=needs)
            have_costs = c["status"] == "ok"
            if name not in predicted:  # a preset's first item: priced; a later one (another dtype) checks identity
                predict_steps(check, name, tag, costs, have_costs, dry, priced, [*dev, *cut])
                predicted.add(name)
            summary = work / f"bench-{tag}.json"
            b = check.step(f"bench:{tag}", [py, "-m", "csd_lib", "bench", "--family", name, *dt, *dev, "--n",
                                            str(args.bench_n), "--methods", "sd,csd", "--max-new-tokens",
                                            str(args.max_new_tokens), "--costs", str(costs) if have_costs else "none",
                                            "--out", str(work / f"bench-{tag}.jsonl"), "--summary-json", str(summary)],
                           estimate("bench", name, dry), preset=name, dtype=dtype, needs=needs)
            if b["status"] == "ok" and summary.is_file():
                b["result"] = json.loads(summary.read_text())
                check.save()
            if args.free_disk and last_use.get(name) == i:
                for rid in _ids(name):  # drafters shared with a later preset are rebuilt by its shadows step
                    shutil.rmtree(hub / f"models--{rid.replace('/', '--')}", ignore_errors=True)
                built.pop(name, None)
    finally:
        check.save()
        shutil.rmtree(work, ignore_errors=True)
    steps = check.record["steps"]
    for line in summary_lines(steps):
        print(line)
    counts = {s: sum(r["status"] == s for r in steps) for s in ("ok", "failed", "timeout", "skipped")}
    print(f"gpu_check: {len(steps)} steps: " + ", ".join(f"{n} {s}" for s, n in counts.items())
          + f"; {check.record['elapsed_s']:.0f} s; wrote {out / 'gpu_check.json'}", flush=True)
    return 0 if counts["failed"] + counts["timeout"] == 0 else 1


def summary_lines(steps: list[dict]) -> list[str]:
    """A short table of what the steps measured: one line per costs, predict, bench and notebook step that ran."""
    lines = []
    for s in steps:
        r, kind = s.get("result"), s["name"].split(":")[0]
        head = f"{s['name']:<34}{s['status']:<8}{s.get('seconds', 0):>7.1f} s  "
        if not r or kind in ("env", "shadows", "predict-2-layers"):
            lines.append(head + (s.get("why", "") if s["status"] == "skipped" else ""))
        elif kind == "costs":
            busy = {m: c["1"]["busy_fraction"] for m, c in r.get("calls", {}).items()}
            lines.append(head + ", ".join(f"{row['model']} {row['ms_1']:.2f} ms/call" for row in r["cost_rows"])
                         + (f"; wo in fp32: {r['wo_fp32']}" if r["wo_fp32"] is not None else "")
                         + ("; GPU busy / wall, 1 token: " + ", ".join(f"{m} {b:.2f}" for m, b in busy.items())
                            if busy and None not in busy.values() else ""))
        elif kind == "predict":
            ar = next((c for c in s.get("compare_2_layers", []) if c["method"] == REFERENCE), None)
            best = r["best"]
            lines.append(head + f"ar {best['ar']['tokens_per_s']:.1f} tok/s, csd {best['csd']['tokens_per_s']:.1f}"
                         + (f"; 2-layer extrapolation / measured: {ar['ratio']:.2f}" if ar else ""))
        elif kind == "bench":
            lines.append(head + ", ".join(f"{m} {v['tokens_per_s']:.1f} tok/s ({v['mismatches']} mismatches)"
                                          for m, v in r.items()))
        elif kind == "notebook":
            lines.append(head + f"{r['cells_run']}/{r['code_cells']} code cells"
                         + (f"; {r['error']}" if r["error"] else ""))
    return lines


def _ids(preset: str) -> list[str]:
    from csd_lib.families.presets import REAL_PRESETS
    return [REAL_PRESETS[preset]["target"], *REAL_PRESETS[preset]["drafters"]]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in WORKERS:
        return worker_main(argv)
    if argv and argv[0] == "gate":  # gate [VERSION]: exit 0 when it (else the installed one) is tested, 1 if not
        why = version_gate(argv[1] if len(argv) > 1 else None)
        print(why or f"transformers {argv[1] if len(argv) > 1 else transformers_here()[0]}: tested "
                     f"({tested_transformers()})", file=sys.stderr)
        return 1 if why else 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for gpu_check.json")
    ap.add_argument("--dry-run", action="store_true", help="CPU, 1 layer, tiny lengths: exercises every step")
    ap.add_argument("--plan", default=DEFAULT_PLAN,
                    help="items in order: PRESET[:DTYPE] or nb:NN (default: %(default)s)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help=f"seconds for the whole plan, later steps are skipped (default: {FULL['budget_s']:.0f}; "
                         f"a dry run {DRY['budget_s']:.0f})")
    ap.add_argument("--notebook-family", choices=PRESETS + TINY, default="flan-t5-colab",
                    help="CSD_FAMILY of the notebooks (default: %(default)s)")
    ap.add_argument("--cost-seconds", type=float, default=None, help="cost measurement budget per family")
    ap.add_argument("--n-grid", type=int_list, default=None, help="tokens per call timed by costs")
    ap.add_argument("--min-reps", type=int, default=None, help="timed repetitions per cost point at least")
    ap.add_argument("--prompt-tokens", type=int, default=None,
                    help="prompt tokens the costs are timed on (default: the task's prompt; a dry run 8)")
    ap.add_argument("--bench-n", type=int, default=None, help="bench examples")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="tokens per generation in bench and predict")
    ap.add_argument("--nb-prompts", type=int, default=None, help="the notebooks' prompts at most (CSD_MAX_PROMPTS)")
    ap.add_argument("--nb-new-tokens", type=int, default=None,
                    help="the notebooks' tokens per generation at most (CSD_MAX_NEW_TOKENS)")
    ap.add_argument("--cell-timeout", type=float, default=None, help="seconds one notebook cell may take")
    ap.add_argument("--free-disk", action="store_true", help="delete a preset's shadows after its last plan item")
    ap.add_argument("--work", default=None, help="folder for the temporary hub and files (default: the temp dir)")
    args = ap.parse_args(argv)
    for k, v in (DRY if args.dry_run else FULL).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    try:
        parse_plan(args.plan)
        if args.budget_s <= 0 or args.cost_seconds <= 0 or args.cell_timeout <= 0 or min(
                args.bench_n, args.max_new_tokens, args.min_reps, args.nb_prompts, args.nb_new_tokens,
                1 if args.prompt_tokens is None else args.prompt_tokens) < 1:
            raise ValueError("--budget-s, --cost-seconds, --cell-timeout must be positive, --bench-n, "
                             "--max-new-tokens, --min-reps, --nb-prompts, --nb-new-tokens and --prompt-tokens "
                             "at least 1")
        if Path(args.out).exists() and not Path(args.out).is_dir():
            raise ValueError(f"--out {args.out} is a file; give a folder")
    except ValueError as e:
        print(f"gpu_check: error: {e}", file=sys.stderr)
        return 2
    why = version_gate()  # before any step: a few imports' time, not a wasted run
    if why:
        print(f"gpu_check: refused: {why}", file=sys.stderr)
        return 3
    return run_plan(args)


if __name__ == "__main__":
    sys.exit(main())
