"""Model families: a target, neural drafters (largest first) and MaG, with default K and lenience."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import torch
from huggingface_hub import constants as hub_constants

from .. import config
from ..engine.mag import MaG, build_bigram, load_bigram
from ..engine.models import LM, check_vocab
from ..engine.plan import check_lenience, validate_k
from ..engine.plan import check_method as check_plan_method
from ..engine.prompts import GSM8K_PROMPT, format_prompt, prompt_ids
from .medusa import load_medusa
from .hub import checkpoint_config, checkpoint_ref, hub_reachable, load_lm, missing_ids, model_arch
from .paper_costs import CostTable, previous_work_costs
from .placement import place_family
from .presets import DEFAULT_K_RULE, DEFAULT_LENIENCE, REAL_PRESETS, STAGED_K, TINY_PRESETS
from .tasks import bigram_corpus, bigram_sources

log = logging.getLogger(__name__)


PROBE_BLOCK = 11  # tokens of the probe's longer call: a MaG block of 10 and the token it follows
PROBE_REPS = 3    # calls of each size per model; the probe keeps their median
PROBE_QUESTION = "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May"


@dataclass(frozen=True)
class CpuProbe:
    """Every model of a family timed on one gsm8k-style prompt (seconds on ``clock``, by model name): ``start`` a
    prompt (encode or prefill, and the first call), one call scoring one token (``step``) and one scoring
    :data:`PROBE_BLOCK` (``block``), each the median of :data:`PROBE_REPS`; ``prompt_tokens`` the prompt's length.
    ``clock`` 'cpu' (this process's CPU time: one torch thread on the CPU, where other jobs' time is not charged)
    or 'wall'; :meth:`wall_per_second` turns it into wall time at the machine's load when it is used."""
    start: dict[str, float]
    step: dict[str, float]
    block: dict[str, float]
    prompt_tokens: int
    clock: str = "wall"

    def wall_per_second(self) -> float:
        """Wall seconds per second of the probe's clock now: 1 for wall time; for CPU time, the 1-minute load
        average per core, at least 1 (a one-thread process on a busy machine gets a share of a core)."""
        if self.clock == "wall" or not hasattr(os, "getloadavg"):
            return 1.0
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))

    @property
    def start_s(self) -> float:
        return self.start["target"] * self.wall_per_second()

    @property
    def step_s(self) -> float:
        return self.step["target"] * self.wall_per_second()

    def ar_seconds(self, n_tokens: int) -> float:
        """About how long (wall) a greedy AR generation of ``n_tokens`` takes here: the start, then a call a token."""
        return self.start_s + (n_tokens - 1) * self.step_s

    def warning(self, name: str) -> str:
        return (f"{name} runs on the CPU: its target took {self.start_s:.2f} s to start a prompt and {self.step_s:.2f} s "
                f"per new token here (a probe), {self.block['target'] / self.step['target']:.1f} times that to score "
                f"{PROBE_BLOCK} drafted tokens, and a cascade pays that for every rejected draft; bench and generate "
                f"estimate their run from these timings before they start. A GPU (Colab: Runtime > Change runtime "
                f"type) or a tiny family (CSD_FAMILY=tiny-t5) runs the notebooks in minutes")


def probe_calls(models: list[LM], prompt: list[int]) -> CpuProbe:
    """Time each model of ``models`` (the target first) on ``prompt`` (token ids): see :class:`CpuProbe`."""
    cpu = torch.get_num_threads() == 1 and all(lm.device.type == "cpu" for lm in models)
    clock = time.process_time if cpu else time.perf_counter
    start, step, block = {}, {}, {}
    for lm in models:
        t0 = clock()
        seq = lm.start(prompt)
        nxt = int(lm.logits(seq, 0)[-1].argmax())
        start[lm.name] = clock() - t0
        times: dict[int, list[float]] = {1: [], PROBE_BLOCK: []}
        for n in (1, PROBE_BLOCK) * PROBE_REPS:
            t0 = clock()
            lm.logits(seq + [nxt] * n, n - 1)  # the cache holds seq: each call scores n tokens after it
            times[n].append(clock() - t0)
        step[lm.name], block[lm.name] = float(np.median(times[1])), float(np.median(times[PROBE_BLOCK]))
        lm.release()
    return CpuProbe(start, step, block, len(prompt), "cpu" if cpu else "wall")


def probe_cpu(models: list[LM], tokenizer, prompt_style: str) -> CpuProbe:
    """:func:`probe_calls` on one gsm8k-style prompt, worded and wrapped in ``prompt_style``."""
    return probe_calls(models, prompt_ids(tokenizer, GSM8K_PROMPT.format(question=PROBE_QUESTION), prompt_style))


@dataclass
class Family:
    """Everything a generation needs. ``drafters`` are neural, largest first.

    ``prompt_style`` is how prompts are worded and wrapped before tokenizing
    (``prompts.format_prompt``); ``policy`` the device and dtype chosen at load time;
    ``previous_work`` the per-call costs of the "previous work" SWI metric, with their source;
    ``by_task`` {task: {"k": K, "sd_k": k}} the preset's per-task settings (:meth:`k_for`, :meth:`sd_k_for`);
    ``medusa`` the target's Medusa heads where shipped (``data/models/<family>-medusa``).
    """
    name: str
    tokenizer: object
    target: LM
    drafters: list[LM]
    mag: MaG
    default_k: list[list[int]]
    default_lenience: float
    sd_k: int = 5
    staged_k: list[list[int]] = field(default_factory=lambda: [list(r) for r in STAGED_K])
    task: str = "gsm8k"
    prompt_style: str = "plain"
    policy: config.Policy | None = None
    previous_work: CostTable | None = None
    by_task: dict[str, dict] = field(default_factory=dict)
    cpu_probe: CpuProbe | None = None  # a hub family on the CPU: its models timed at load (``probe_cpu``)
    medusa: object | None = None  # Medusa heads on the target (method 'medusa'): (rows, D) -> (H, rows, V), with trees

    @property
    def models(self) -> list[LM]:
        return [self.target, *self.drafters]

    @property
    def random_weights(self) -> bool:
        """True when any model's weights are random (shadows, toys): its acceptance means nothing."""
        return any(m.random_weights for m in self.models)

    def k_for(self, task: str | None) -> list[list[int]]:
        """CSD's K for ``task``: the preset's ``by_task`` K for it, else the family's."""
        return [list(r) for r in self.by_task.get(task, {}).get("k", self.default_k)]

    def sd_k_for(self, task: str | None) -> int:
        """SD's draft length for ``task``: the preset's ``by_task`` sd_k for it, else the family's."""
        return self.by_task.get(task, {}).get("sd_k", self.sd_k)

    def __post_init__(self):
        check_vocab(self.models)
        self.mag.check_vocab(self.target.vocab_size)
        if self.previous_work is None:
            self.previous_work = previous_work_costs(self.name, {m.name: m.n_params for m in self.models})


def roles(n_drafters: int) -> list[str]:
    """Role names of neural drafters, largest first; the target is always "target"."""
    return {0: [], 1: ["small"], 2: ["base", "small"]}.get(n_drafters) or \
        [f"drafter{i + 1}" for i in range(n_drafters)]


def default_k(n_drafters: int) -> list[list[int]]:
    """The default K for ``n_drafters`` neural drafters plus MaG, shaped like the paper's settings.

    Rule (``presets.DEFAULT_K_RULE``): MaG's column is MaG's block everywhere (the official
    code's size, 10); the largest drafter's own budget K[0][0] is 8 and every further entry of
    the target's row is 13 (paper Table 5, GSM8K: k11=8, k12=13); inside a drafter's own review
    every entry is 1 (Table 5: k22=1). A single drafter takes the official LLaMA setting
    instead, K[0][0] = 13.
    Entries below the diagonal are unused and 0.
    """
    if isinstance(n_drafters, bool) or not isinstance(n_drafters, int) or n_drafters < 0:
        raise ValueError(f"the number of drafters must be an integer >= 0, got {n_drafters!r}")
    n = n_drafters + 1  # drafters and MaG
    r = DEFAULT_K_RULE
    k = [[0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            k[i][j] = r["mag"] if j == n - 1 else (r["inner"] if i > 0 else (r["first"] if j == 0 else r["further"]))
    if n_drafters == 1:
        k[0][0] = r["single"]
    return k


FAMILIES = (*TINY_PRESETS, *REAL_PRESETS)


class ModelUnavailableError(ValueError):
    """A real checkpoint is neither in the local HF cache nor downloadable."""


def load_family(name: str | None = None, device=None, dtype=None, *, target: str | None = None,
                drafters: list[str] | None = None, k=None, lenience: float | None = None,
                prompt_style: str | None = None) -> Family:
    """Load a preset family by name, or build one from your own checkpoints.

    Args:
        name: tiny-t5 (default), tiny-llama, flan-t5, flan-t5-colab or vicuna.
        device, dtype: override the device and dtype policy (``config.policy``).
        target, drafters: hub ids or local directories of a causal or seq2seq target and
            its drafters (largest first) that share one tokenizer; MaG is added at the bottom.
            Give these instead of ``name``.
        k, lenience: override the family's default K and lenience (for your own models the
            defaults follow ``default_k`` and ``DEFAULT_LENIENCE``).
        prompt_style: "plain" or "vicuna-v1.1"; for your own models the default is
            "vicuna-v1.1" when the target's id contains "vicuna", else "plain".

    A preset's per-task K and SD's k (``by_task``) are the family's :meth:`Family.k_for` and
    :meth:`Family.sd_k_for`; a ``k`` given here replaces every task's K.
    """
    name, target, ds = _resolve(name, target, drafters)
    # check the overrides before any weights load
    n_drafters = len(ds) if target is not None else len((TINY_PRESETS.get(name) or REAL_PRESETS[name])["k"]) - 1
    k = validate_k(k, n_drafters + 1) if k is not None else None
    lenience = check_lenience(lenience) if lenience is not None else None
    if prompt_style is not None:
        format_prompt("", prompt_style)  # raises on an unknown style
    if target is not None:
        style = prompt_style or ("vicuna-v1.1" if "vicuna" in target.lower() else "plain")
        fam = _load_hub(custom_name(target), target, ds, default_k(len(ds)),
                        DEFAULT_LENIENCE, device, dtype, style, advice="check the ids or paths")
    elif name in TINY_PRESETS:
        fam = _load_tiny(name, device, dtype)
    else:
        spec = REAL_PRESETS[name]
        fam = _load_hub(name, spec["target"], spec["drafters"], spec["k"], spec["lenience"], device, dtype,
                        spec.get("prompt_style", "plain"), advice=_OFFLINE_ADVICE)
    fam.prompt_style = prompt_style or fam.prompt_style
    if target is None:
        spec = TINY_PRESETS.get(name) or REAL_PRESETS[name]
        # an explicit K wins over every task's
        fam.by_task = {t: {s: v for s, v in over.items() if k is None or s != "k"}
                       for t, over in spec.get("by_task", {}).items()}
    fam.default_k = k or fam.default_k
    fam.default_lenience = lenience or fam.default_lenience
    return fam


def _resolve(name, target, drafters) -> tuple[str | None, str | None, list[str]]:
    """(preset name or None, target, drafters) from ``load_family``'s arguments, checked; nothing loads."""
    ds = [drafters] if isinstance(drafters, str) else list(drafters or [])
    if target is not None and name is not None:
        raise ValueError(f"give a preset name ({name!r}) or target=..., not both")
    if target is None and drafters is not None:
        raise ValueError("drafters=... needs target=...: the checkpoint they draft for")
    name = None if target is not None else (name or config.FAMILY)
    if name is not None and name not in FAMILIES:
        raise ValueError(f"unknown family {name!r}; use one of {', '.join(FAMILIES)}, or "
                         f"target=ID, drafters=[ID, ...] for your own checkpoints")
    if target is None:
        return name, None, []
    return None, checkpoint_ref(target), [checkpoint_ref(d) for d in ds]


def check_method(name: str | None, method: str, *, target: str | None = None, drafters=None) -> None:
    """Raise ValueError if the family (a preset ``name``, or ``target`` with ``drafters``) cannot run ``method``.

    Checked from the preset (or the ids given) alone, before anything loads: ``sd`` needs a
    neural drafter, ``staged`` two.
    """
    check_plan_method(method)
    name, target, ds = _resolve(name, target, drafters)
    n = len(ds) if target is not None else len((TINY_PRESETS.get(name) or REAL_PRESETS[name])["k"]) - 1
    need = {"sd": 1, "tree-sd": 1, "staged": 2}.get(method, 0)
    if n < need:
        instead = "'sd' or 'csd'" if n else "'mag' or 'csd' (MaG drafts)"
        raise ValueError(f"method {method!r} needs {'a neural drafter' if need == 1 else 'two neural drafters'}; "
                         f"family '{name or custom_name(target)}' has {n}; use {instead}")


def custom_name(target: str) -> str:
    """A file-safe family name for your own target: ``custom-`` + its folder name or hub id."""
    base = Path(target).name if Path(target).is_dir() else target.replace("/", "--")
    return "custom-" + re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-")


_OFFLINE_ADVICE = ("use family='tiny-t5' (the embedded default, works offline), or go online, or set "
                   "HF_HUB_CACHE to a hub cache that holds them")


def _say(notes) -> None:
    for note in notes:
        if note:
            log.info(f"load_family: {note}")


def _load_tiny(name: str, device, dtype) -> Family:
    from transformers import AutoConfig, AutoTokenizer
    manifest = config.MODELS_DIR / f"{name}.json"
    if not manifest.exists():
        raise ValueError(f"the embedded family '{name}' is missing ({manifest} not found); "
                         f"train it with `python -m csd_lib.zoo train --family {name}`")
    spec = json.loads(manifest.read_text())
    preset = TINY_PRESETS[name]
    path = lambda m: str(config.MODELS_DIR / m)  # noqa: E731
    tok = AutoTokenizer.from_pretrained(path(spec["target"]))
    # weights ship in fp16 to stay small; the policy computes in fp32 on the CPU by default
    pol = config.policy("tiny", model_arch(AutoConfig.from_pretrained(path(spec["target"]))),
                        config.describe_device(device), dtype, device)
    _say(pol.notes)
    target = load_lm("target", path(spec["target"]), policy=pol)
    drafters = [load_lm(r, path(m), policy=pol) for r, m in zip(roles(len(spec["drafters"])), spec["drafters"])]
    mag = MaG(load_bigram(config.MODELS_DIR / f"{name}-bigram.npy"))
    heads = config.MODELS_DIR / f"{name}-medusa"  # shipped for decoder-only targets only
    medusa = load_medusa(heads, device=target.device, target=target) if (heads / "config.json").is_file() else None
    return Family(name, tok, target, drafters, mag, preset["k"], preset["lenience"], preset["sd_k"],
                  preset["staged_k"] or STAGED_K, task="synth-gsm8k", policy=pol, medusa=medusa)


def _offline(name: str, ids: list[str], missing: list[str], advice: str) -> bool:
    """Whether the family loads offline: HF_HUB_OFFLINE, or a hub that one quick probe cannot reach (then
    for the rest of this process); a checkpoint missing from the cache then is a ModelUnavailableError."""
    offline = config.HF_OFFLINE
    if not offline and any(not Path(rid).is_dir() for rid in ids) and not hub_reachable():
        host = urlsplit(hub_constants.ENDPOINT).netloc
        if missing:
            raise ModelUnavailableError(
                f"family '{name}' needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not in "
                f"the local Hugging Face cache, and the hub ({host}) cannot be reached (to work offline, set "
                f"HF_HUB_CACHE to a hub cache that holds them and HF_HUB_OFFLINE=1); {advice}")
        log.info(f"load_family: the hub ({host}) cannot be reached; working offline from the local cache "
                 f"(set HF_HUB_OFFLINE=1 to skip this check)")
        offline = config.HF_OFFLINE = True  # the rest of this process (e.g. the datasets for MaG) too
    if missing and offline:
        raise ModelUnavailableError(f"family '{name}' needs {', '.join(missing)}, which "
                                    f"{'is' if len(missing) == 1 else 'are'} not in the local Hugging Face "
                                    f"cache and the network is off (HF_HUB_OFFLINE=1); {advice}")
    return offline


def _load_hub(name: str, target_id: str, drafter_ids: list[str], k, lenience: float, device, dtype,
              prompt_style: str, advice: str) -> Family:
    """A family from hub ids or local directories, checked before any download, placed by the policy.

    Order: memory (from the configs at hand: local, cached or stored in ``data/hf_configs``),
    the cache and the network (an unreachable hub is found by one quick probe; a full cache
    then loads offline), the tokenizers, and only then the weights; MaG is built last.
    """
    from transformers import AutoTokenizer, PretrainedConfig
    from transformers.tokenization_utils_base import VERY_LARGE_INTEGER
    ids = [target_id, *drafter_ids]
    if len(set(ids)) != len(ids):
        raise ValueError(f"family '{name}' names a checkpoint twice ({', '.join(ids)}); give each level its own")
    cfgs = {rid: checkpoint_config(rid) for rid in ids}  # None: a hub id neither cached nor stored
    at_hand = all(c is not None for c in cfgs.values())
    if at_hand:  # memory first: a family that cannot fit is refused before any download
        pol, plan = place_family(name, cfgs, device, dtype)
    missing = missing_ids(ids)
    offline = _offline(name, ids, missing, advice)
    local = dict(local_files_only=True) if offline else {}
    if not at_hand:  # a hub id neither cached nor stored: its config.json alone is fetched first
        try:
            cfgs = {rid: c or PretrainedConfig.get_config_dict(rid, **local)[0] for rid, c in cfgs.items()}
        except OSError as e:
            raise ModelUnavailableError(f"could not read the configs of family '{name}' ({', '.join(ids)}): {e}; "
                                        f"{advice}") from None
        pol, plan = place_family(name, cfgs, device, dtype)
    extra, notes = dict(local), list(pol.notes)
    if plan.target_device_map:
        extra.update(device_map=plan.target_device_map, max_memory=plan.max_memory)
        notes.append(plan.message)
    try:
        toks = {rid: AutoTokenizer.from_pretrained(rid, **local) for rid in ids}
    except OSError as e:
        raise ModelUnavailableError(f"could not load family '{name}' ({', '.join(missing or ids)}): {e}; "
                                    f"{advice}") from None
    check_vocab([], toks)  # before any weights are loaded
    _say([f"{name} on {pol.device} in {str(pol.dtype).removeprefix('torch.')}", *notes])
    if plan.host_note:  # before any weight loads
        log.warning(f"load_family: {name}: {plan.host_note}")
    try:
        target = load_lm("target", target_id, policy=pol, **extra)
        drafters = [load_lm(r, m, policy=pol, **local) for r, m in zip(roles(len(drafter_ids)), drafter_ids)]
    except OSError as e:
        raise ModelUnavailableError(f"could not load family '{name}' ({', '.join(missing or ids)}): {e}; "
                                    f"{advice}") from None
    tok = toks[target_id]
    if target.max_length is None:  # relative positions (T5): no length limit, whatever the tokenizer says (512)
        tok.model_max_length = VERY_LARGE_INTEGER
    probe = probe_cpu([target, *drafters], tok, prompt_style) if target.device.type == "cpu" else None
    if probe is not None:  # before any heavy work: what a CPU run of this family costs
        log.warning(f"load_family: {probe.warning(name)}")
    mag = MaG(real_bigram(name, tok, target.vocab_size))
    return Family(name, tok, target, drafters, mag, k, lenience, prompt_style=prompt_style, policy=pol, cpu_probe=probe)


def real_bigram(name: str, tokenizer, vocab_size: int, task: str = "gsm8k") -> np.ndarray:
    """MaG's bigram table for a hub family, built from a task's train split on first use and cached.

    The cache file names the family, the corpus source and split (``tasks.bigram_corpus``), the
    vocabulary size and a hash of the tokenizer, so a new source or tokenizer never reuses an old
    table: ``{family}-bigram-{source}-{vocab}-{hash}.npy``. It is looked up by that name before any
    corpus loads (``tasks.bigram_sources``), so a cached family loads without touching a dataset; a
    source's corpus is taken as fixed (a dataset's train split, the seeded synthetic one): delete the
    file after changing a local copy.
    """
    safe = re.sub(r"[^A-Za-z0-9._-]+", "--", name).strip("-")
    stem = f"{vocab_size}-{_tokenizer_hash(tokenizer)}.npy"
    for source in bigram_sources(task):
        path = config.cache_dir() / f"{safe}-bigram-{source}-{stem}"
        if path.exists() and len(table := load_bigram(path)) == vocab_size:
            return table
    texts, source = bigram_corpus(task)
    seqs = [tokenizer(t).input_ids for t in texts]
    path = config.cache_dir() / f"{safe}-bigram-{source}-{stem}"
    table = build_bigram(seqs, vocab_size)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, table)
    tmp.replace(path)
    log.info(f"real_bigram: MaG's bigram table for {name} built from {source} ({len(texts)} texts), cached in {path}")
    return table


def _tokenizer_hash(tokenizer) -> str:
    """10 hex digits of a hash of the tokenizer: its full serialization (fast tokenizers), else its vocabulary."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    text = backend.to_str() if backend is not None else json.dumps(sorted(tokenizer.get_vocab().items()))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


# -- tiny random families for correctness tests ------------------------------------------


