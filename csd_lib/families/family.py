"""Model families: a target, neural drafters (largest first) and MaG, with default K and lenience."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import torch
from huggingface_hub import constants as hub_constants

from . import config
from .archs import published_config
from .mag import MaG, build_bigram, load_bigram
from .models import LM, check_vocab, checkpoint_config, count_params, load_lm, model_arch
from .plan import METHODS, check_lenience, validate_k
from .presets import DEFAULT_K_RULE, DEFAULT_LENIENCE, REAL_PRESETS, STAGED_K, TINY_PRESETS
from .tasks import bigram_corpus, format_prompt
from .trace import CostTable, previous_work_costs

log = logging.getLogger(__name__)


@dataclass
class Family:
    """Everything a generation needs. ``drafters`` are neural, largest first.

    ``prompt_style`` is how prompts are worded and wrapped before tokenizing
    (``tasks.format_prompt``); ``policy`` the device and dtype chosen at load time;
    ``previous_work`` the per-call costs of the "previous work" SWI metric, with their source;
    ``by_task`` {task: {"k": K, "sd_k": k}} the preset's per-task settings (:meth:`k_for`, :meth:`sd_k_for`).
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

    @property
    def models(self) -> list[LM]:
        return [self.target, *self.drafters]

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


# a hub id: ORG/NAME (or NAME alone)
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def _checkpoint(rid) -> str:
    """A hub id or an existing folder (``~`` expanded); a path-like id that names no folder is a ValueError."""
    rid = str(rid)
    path = os.path.expanduser(rid)
    if Path(path).is_dir():
        return path
    if rid.startswith(("/", "./", "../", "~")) or not _HUB_ID.match(rid):
        raise ValueError(f"no such folder: {rid!r}; give an existing local checkpoint folder or a hub id "
                         f"such as ORG/NAME")
    return rid


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
    return None, _checkpoint(target), [_checkpoint(d) for d in ds]


def check_method(name: str | None, method: str, *, target: str | None = None, drafters=None) -> None:
    """Raise ValueError if the family (a preset ``name``, or ``target`` with ``drafters``) cannot run ``method``.

    Checked from the preset (or the ids given) alone, before anything loads: ``sd`` needs a
    neural drafter, ``staged`` two.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    name, target, ds = _resolve(name, target, drafters)
    n = len(ds) if target is not None else len((TINY_PRESETS.get(name) or REAL_PRESETS[name])["k"]) - 1
    need = {"sd": 1, "staged": 2}.get(method, 0)
    if n < need:
        instead = "'sd' or 'csd'" if n else "'mag' or 'csd' (MaG drafts)"
        raise ValueError(f"method {method!r} needs {'a neural drafter' if need == 1 else 'two neural drafters'}; "
                         f"family '{name or custom_name(target)}' has {n}; use {instead}")


def check_args_method(args, methods) -> None:
    """``check_method`` for the family named by CLI arguments (``load_from_args``), for each of ``methods``."""
    for method in methods:
        check_method(None if getattr(args, "target", None) else args.family, method,
                     target=getattr(args, "target", None), drafters=_arg_drafters(args))


def _arg_drafters(args) -> list[str] | None:
    drafters = getattr(args, "drafters", None)
    if isinstance(drafters, str):
        drafters = [d.strip() for d in drafters.split(",") if d.strip()]
    return drafters


def custom_name(target: str) -> str:
    """A file-safe family name for your own target: ``custom-`` + its folder name or hub id."""
    base = Path(target).name if Path(target).is_dir() else target.replace("/", "--")
    return "custom-" + re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-")


def load_from_args(args) -> Family:
    """The family named by CLI arguments: ``--family``, or ``--target ID --drafters ID,ID``; ``--device``, ``--dtype``."""
    return load_family(args.family, device=args.device, dtype=args.dtype, target=getattr(args, "target", None),
                       drafters=_arg_drafters(args))


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
    return Family(name, tok, target, drafters, mag, preset["k"], preset["lenience"], preset["sd_k"],
                  preset["staged_k"] or STAGED_K, task="synth-gsm8k", policy=pol)


def _missing_ids(ids: list[str]) -> list[str]:
    from huggingface_hub import try_to_load_from_cache
    missing = []
    for rid in ids:
        if Path(rid).is_dir():
            continue
        hit = try_to_load_from_cache(rid, "config.json")
        if not isinstance(hit, str):
            missing.append(rid)
    return missing


PROBE_TIMEOUT = 3.0  # seconds the hub's host gets to accept a connection


def _hub_reachable(timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether the hub's host (``HF_ENDPOINT``, else huggingface.co) accepts a TCP connection within ``timeout``."""
    url = urlsplit(hub_constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def _plan(cfgs: dict[str, dict], dtype: torch.dtype, keep_fp32: tuple[str, ...], info: config.DeviceInfo):
    """The memory plan of models described by ``cfgs`` (id -> config dict, target first) in ``dtype``."""
    sizes = [config.param_bytes(*count_params(cfg, keep_fp32), dtype) for cfg in cfgs.values()]
    cache = sum(config.kv_cache_bytes(cfg, dtype) for cfg in cfgs.values())
    return config.plan_memory(sizes, info, cache)


def _fitting_presets(info: config.DeviceInfo, dtype: torch.dtype, arch: str = "") -> list[str]:
    """Real presets that fit ``info`` whole (no offload) in ``dtype``, from their stored configs.

    Presets of architecture ``arch`` come first, then the largest first.
    """
    fits = []
    for n, s in REAL_PRESETS.items():
        cfgs = {rid: published_config(rid) for rid in (s["target"], *s["drafters"])}
        a = model_arch(cfgs[s["target"]])
        plan = _plan(cfgs, dtype, ("wo",) if dtype == torch.float16 and a == "t5" else (), info)
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


def _place(name: str, cfgs: dict[str, dict], device, dtype) -> tuple[config.Policy, config.MemoryPlan]:
    """The policy and memory plan of a family from its configs (target first); ValueError when it cannot fit.

    The refusal names what fits instead: a smaller preset, or a 16-bit dtype.
    """
    archs = [model_arch(c) for c in cfgs.values()]
    arch = "t5" if "t5" in archs else archs[0]
    info = config.describe_device(device)
    pol = config.policy("real", arch, info, dtype, device)
    plan = _plan(cfgs, pol.dtype, pol.keep_fp32, info)
    if not plan.fits:
        alt = [f"family={p!r}" for p in _fitting_presets(info, pol.dtype, arch) if p != name][:1]
        alt += [f"dtype='{str(dt).removeprefix('torch.')}'" for dt in _smaller_dtypes(info, pol.dtype)
                if _plan(cfgs, dt, ("wo",) if dt == torch.float16 and arch == "t5" else (), info).fits]
        where = {"cpu": "this machine's RAM", "mps": "this Mac's memory"}.get(info.type, info.name)
        raise ValueError(f"family '{name}' cannot fit {where}: {plan.message}; use "
                         f"{' or '.join(alt) + ' (fits), or ' if alt else ''}a machine with more memory"
                         f"{'' if info.type == 'cpu' else ', or device=' + repr('cpu')}")
    return pol, plan


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
        pol, plan = _place(name, cfgs, device, dtype)
    missing = _missing_ids(ids)
    offline = config.HF_OFFLINE
    if not offline and any(not Path(rid).is_dir() for rid in ids) and not _hub_reachable():
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
    local = dict(local_files_only=True) if offline else {}
    if not at_hand:  # a hub id neither cached nor stored: its config.json alone is fetched first
        try:
            cfgs = {rid: c or PretrainedConfig.get_config_dict(rid, **local)[0] for rid, c in cfgs.items()}
        except OSError as e:
            raise ModelUnavailableError(f"could not read the configs of family '{name}' ({', '.join(ids)}): {e}; "
                                        f"{advice}") from None
        pol, plan = _place(name, cfgs, device, dtype)
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
    try:
        target = load_lm("target", target_id, policy=pol, **extra)
        drafters = [load_lm(r, m, policy=pol, **local) for r, m in zip(roles(len(drafter_ids)), drafter_ids)]
    except OSError as e:
        raise ModelUnavailableError(f"could not load family '{name}' ({', '.join(missing or ids)}): {e}; "
                                    f"{advice}") from None
    tok = toks[target_id]
    if target.max_length is None:  # relative positions (T5): no length limit, whatever the tokenizer says (512)
        tok.model_max_length = VERY_LARGE_INTEGER
    mag = MaG(real_bigram(name, tok, target.vocab_size))
    return Family(name, tok, target, drafters, mag, k, lenience, prompt_style=prompt_style, policy=pol)


def real_bigram(name: str, tokenizer, vocab_size: int, task: str = "gsm8k") -> np.ndarray:
    """MaG's bigram table for a hub family, built from a task's train split on first use and cached.

    The cache file names the family, the corpus source and split (``tasks.bigram_corpus``), the
    vocabulary size and a hash of the tokenized corpus, so a new source or tokenizer never
    reuses an old table: ``{family}-bigram-{source}-{vocab}-{hash}.npy``.
    """
    texts, source = bigram_corpus(task)
    seqs = [tokenizer(t).input_ids for t in texts]
    digest = hashlib.sha1()
    for s in seqs:
        digest.update(np.asarray(s, dtype=np.int64).tobytes() + b"|")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "--", name).strip("-")
    path = config.cache_dir() / f"{safe}-bigram-{source}-{vocab_size}-{digest.hexdigest()[:10]}.npy"
    if path.exists():
        table = load_bigram(path)
        if len(table) == vocab_size:
            return table
    table = build_bigram(seqs, vocab_size)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, table)
    tmp.replace(path)
    log.info(f"real_bigram: MaG's bigram table for {name} built from {source} ({len(texts)} texts), cached in {path}")
    return table


# -- tiny random families for correctness tests ------------------------------------------

def toy_tokenizer(vocab_size: int, seq2seq: bool):
    """A whitespace word-level tokenizer over tokens w3..w{V-1}; 0 pad, 1 eos, 2 unk."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2, **{f"w{i}": i for i in range(3, vocab_size)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if seq2seq:
        tk.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")


def random_model(arch: str, vocab_size: int, size: str, seed: int, dtype=torch.float64, eos: int | None = 1):
    """A randomly initialised tiny T5 or Llama; ``size`` is 'target', 'base' or 'small'."""
    from transformers import LlamaConfig, LlamaForCausalLM, T5Config, T5ForConditionalGeneration
    d, layers = {"target": (32, 2), "base": (16, 1), "small": (8, 1)}[size]
    torch.manual_seed(seed)
    if arch == "t5":
        cfg = T5Config(vocab_size=vocab_size, d_model=d, d_kv=8, d_ff=2 * d, num_layers=layers,
                       num_decoder_layers=layers, num_heads=2, decoder_start_token_id=0, pad_token_id=0,
                       eos_token_id=eos, tie_word_embeddings=False, initializer_factor=10.0)
        model = T5ForConditionalGeneration(cfg)  # a large init keeps random T5 outputs from collapsing
    elif arch == "llama":
        cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=d, intermediate_size=2 * d, num_hidden_layers=layers,
                          num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                          eos_token_id=eos, pad_token_id=0, bos_token_id=None, tie_word_embeddings=False)
        model = LlamaForCausalLM(cfg)
    else:
        raise ValueError(f"unknown arch {arch!r}; use 't5' or 'llama'")
    with torch.no_grad():  # sharper random distributions; never predict pad
        w = model.get_output_embeddings().weight
        w.mul_(4.0)
        w[0].fill_(0.0)
        w[0, 0] = -1.0
    return model.to(dtype).eval()


def random_family(arch: str = "t5", vocab_size: int = 64, n_drafters: int = 2, seed: int = 0,
                  dtype=torch.float64, drafter_is_target: bool = False, k=None, lenience: float = 2.0,
                  eos: int | None = 1, bigram: np.ndarray | None = None) -> Family:
    """A family of random tiny models (for tests only: random weights teach nothing)."""
    target_model = random_model(arch, vocab_size, "target", seed, dtype, eos)
    drafters = []
    for i, role in enumerate(roles(n_drafters)):
        m = target_model if drafter_is_target else random_model(arch, vocab_size, role, seed + 1 + i, dtype, eos)
        drafters.append(LM(role, m))
    n = n_drafters + 1
    k = k or [[3 if i == j else (4 if j == n - 1 else 2) for j in range(n)] for i in range(n)]
    if bigram is None:
        rng = np.random.default_rng(seed)
        bigram = rng.integers(3, vocab_size, size=vocab_size).astype(np.int32)
    return Family(f"random-{arch}", toy_tokenizer(vocab_size, arch == "t5"), LM("target", target_model),
                  drafters, MaG(bigram), k, lenience, sd_k=4, staged_k=[[3, 1], [0, 2]], task="synthetic")
