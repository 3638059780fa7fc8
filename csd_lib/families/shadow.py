"""Shadow checkpoints: the real FLAN-T5 and Vicuna architectures with random weights, offline.

``build_shadows(out_dir)`` writes a Hugging Face hub cache into ``out_dir`` holding, under
the **real repo ids** (``google/flan-t5-large``, ``lmsys/vicuna-7b-v1.3``, ...), models
with the published ``config.json`` of each id (``data/hf_configs``), random weights at the
real width (depth may be cut with ``max_layers``), a tokenizer with the real vocabulary
size and special-token ids, and the real generation config. With ``HF_HUB_CACHE=out_dir``
(or ``HF_HOME`` set to the folder holding ``out_dir`` when it is called ``hub``) every
real preset loads offline through the ordinary ``load_family`` path.

A test bed, nothing more: random weights accept almost no drafted token, so a shadow run
proves that the path works and measures how long each call takes, never what a cascade
gains.

Weights are stored in fp16: half the bytes of fp32, and every load casts them to the
dtype its policy asks for (fp32 on the CPU). The tokenizer is a BPE trained on repo text only
(the bundled task texts in ``data/tasks``, the workbook's prompt templates and the English word
list ``data/shadow_words.txt``) and padded with unreachable filler pieces up to the real
vocabulary size. Like SentencePiece it splits at spaces and punctuation (and Llama's at every
digit), so English costs about as many tokens per word as with the real tokenizers:
``tokens_per_word`` measures it, docs/REFERENCE.md gives the published rates.
"""
from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
from pathlib import Path

import torch

from .. import config
from .archs import build as _build
from .archs import build_on_meta, published_config, read_stored, stored_ids
from .presets import REAL_PRESETS
from .tasks import bundled_path, read_examples
from ..engine import prompts
from ..engine.models import RANDOM_WEIGHTS_KEY

log = logging.getLogger(__name__)

WORDS_FILE = config.DATA_ROOT / "shadow_words.txt"
SHARD_BYTES = 4 * 2**30          # safetensors shard size for full-depth checkpoints
STORE_DTYPE = torch.float16      # see the module docstring
LAYER_KEYS = ("num_layers", "num_decoder_layers", "num_hidden_layers")
DEFAULT_PRESETS = ("flan-t5-colab", "flan-t5", "vicuna")
FORMAT = 2                       # bump when the files written change: old snapshots are then rebuilt


def preset_ids(presets) -> list[str]:
    """The repo ids of the given real presets, target first, each once."""
    ids = []
    for name in presets:
        if name not in REAL_PRESETS:
            raise ValueError(f"unknown real preset {name!r}; use one of {', '.join(REAL_PRESETS)}")
        for rid in (REAL_PRESETS[name]["target"], *REAL_PRESETS[name]["drafters"]):
            if rid not in ids:
                ids.append(rid)
    return ids


def published_generation_config(repo_id: str) -> dict:
    return read_stored(repo_id, "generation_config.json")


def tokenizer_facts(repo_id: str) -> dict:
    """Vocabulary size, special tokens and published parameter count of ``repo_id``."""
    return read_stored(repo_id, "tokenizer_facts.json")


def shadow_config(repo_id: str, max_layers: int | None = None, max_width: int | None = None) -> dict:
    """The published config with its layer counts cut to ``max_layers`` and, with ``max_width``, its width too.

    Nothing else changes. ``max_width`` narrows the model (hidden size at most this, the feed-forward in
    proportion, the head size kept, so fewer heads); the vocabulary, tokenizer, depth cut and architecture
    stay. It is for tests that prove the loading and notebook paths and time nothing.
    """
    cfg = published_config(repo_id)
    if max_layers is not None:
        if max_layers < 1:
            raise ValueError(f"max_layers must be >= 1, got {max_layers}")
        for key in LAYER_KEYS:
            if key in cfg:
                cfg[key] = min(cfg[key], max_layers)
    if max_width is not None:
        cfg.update(_narrowed(cfg, max_width))
    return cfg


def _narrowed(cfg: dict, width: int) -> dict:
    """The width keys of ``cfg`` cut to hidden size ``width`` (head size kept; feed-forward in proportion)."""
    t5 = cfg["model_type"] == "t5"
    hidden, ff, heads = ("d_model", "d_ff", "num_heads") if t5 else ("hidden_size", "intermediate_size",
                                                                       "num_attention_heads")
    head = cfg["d_kv"] if t5 else cfg[hidden] // cfg[heads]
    if width < head:
        raise ValueError(f"max_width must be at least the head size {head}, got {width}")
    if cfg[hidden] <= width:
        return {}
    n_heads = width // head
    out = {hidden: n_heads * head, heads: n_heads, ff: max(1, cfg[ff] * n_heads * head // cfg[hidden])}
    if not t5 and cfg.get("num_key_value_heads"):
        out["num_key_value_heads"] = max(1, cfg["num_key_value_heads"] * n_heads // cfg[heads])
    return out


def config_params(cfg: dict) -> int:
    """Parameters of the model a config describes, counted on the meta device (nothing allocated)."""
    return sum(p.numel() for p in build_on_meta(cfg).parameters())


def _std(name: str, shape: torch.Size, cfg: dict) -> float | None:
    """The initial standard deviation transformers gives a weight (None: a norm, set to 1)."""
    if len(shape) == 1:
        return None
    if cfg["model_type"] != "t5":
        return cfg.get("initializer_range", 0.02)
    f, d = cfg.get("initializer_factor", 1.0), cfg["d_model"]
    if name.endswith(("shared.weight", "lm_head.weight")):
        return f
    if name.endswith("relative_attention_bias.weight"):
        return f * d ** -0.5
    if name.endswith(".q.weight"):  # T5 folds the attention scale into q
        return f * (d * cfg["d_kv"]) ** -0.5
    return f * shape[1] ** -0.5     # k, v, o, wi_0, wi_1, wo: 1 / sqrt(fan-in)


def shadow_model(cfg: dict, seed: int = 0, device=None, dtype: torch.dtype = STORE_DTYPE,
                 keep_fp32: tuple[str, ...] = ()):
    """A random model of the config at the scales of transformers' own initialisation, in eval mode.

    Built on the meta device and filled in one pass (transformers' init of a full-width
    model takes minutes on a CPU); on a GPU the random numbers are drawn there. ``keep_fp32``: module
    names kept in fp32 whatever ``dtype`` is, as a real load keeps them (``config.Policy.keep_fp32``:
    T5's ``wo`` in fp16).
    """
    dev = torch.device(device or "cpu")
    with torch.device("meta"):
        model = _build(cfg, dtype)
    model = model.to_empty(device=dev)
    gen = torch.Generator(device=dev).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied parameters come once
            std = _std(name, p.shape, cfg)
            if std is None:
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=gen, device=dev).mul_(std))
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1] in keep_fp32:
            module.float()
    return model.eval()


# -- tokenizers --------------------------------------------------------------------------

def _corpus() -> list[str]:
    """The tokenizer's training text: repo files only, so every machine builds the same pieces."""
    texts = []
    for path in sorted(config.TASKS_DIR.glob("*.jsonl")):
        texts += [ex.prompt + " " + ex.reference for ex in read_examples(path)]
    texts += [prompts.GSM8K_PROMPT, prompts.MMLU_PROMPT, prompts.VICUNA_GSM8K_PROMPT, prompts.VICUNA_MMLU_PREFIX,
              prompts.VICUNA_MMLU_SUFFIX, prompts.VICUNA_TEMPLATE]
    words = [w for line in WORDS_FILE.read_text().splitlines() if not line.startswith("#") for w in line.split()]
    texts += [" ".join(words), " ".join(w[:1].upper() + w[1:] for w in words)]  # sentence starts too
    return texts


def tokens_per_word(tokenizer, texts=None) -> float:
    """Tokens (special tokens left out) per whitespace-separated word of ``texts``.

    Default texts: the prompts of the bundled synth-gsm8k test split.
    """
    if texts is None:
        texts = [ex.prompt for ex in read_examples(bundled_path("synth-gsm8k"))]
    n_tokens = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    return n_tokens / sum(len(t.split()) for t in texts)


def _decode_and_mark(tk, facts: dict) -> None:
    """The real tokenizer's decoder and its BOS (Llama) or EOS (T5) added to every input, set on ``tk``."""
    from tokenizers import decoders, processors
    sp = facts["special"]
    if facts["kind"] == "llama":  # the decoder of the real Llama tokenizer.json
        tk.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                        decoders.Strip(" ", 1, 0)])
    else:
        tk.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    bos = sp.get("bos_token")
    eos = sp["eos_token"]
    if facts.get("add_bos"):
        tk.post_processor = processors.TemplateProcessing(single=f"{bos[0]} $A", pair=f"{bos[0]} $A $B",
                                                          special_tokens=[tuple(bos)])
    elif facts.get("add_eos"):
        tk.post_processor = processors.TemplateProcessing(single=f"$A {eos[0]}", pair=f"$A {eos[0]} $B {eos[0]}",
                                                          special_tokens=[tuple(eos)])


def build_tokenizer(facts: dict):
    """A ``PreTrainedTokenizerFast`` with the real vocabulary size and special-token ids.

    T5: ``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2, pieces, then ``<extra_id_99>`` .. ``<extra_id_0>``
    at the top (32000 .. 32099) as in the real tokenizer; ``</s>`` is appended to every input.
    Llama: ``<unk>`` 0, ``<s>`` 1, ``</s>`` 2, the 256 byte pieces ``<0x00>`` .. ``<0xFF>``
    (byte fallback), pieces; ``<s>`` is prepended to every input.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    kind, size, sp = facts["kind"], facts["vocab_size"], facts["special"]
    specials = sorted({tuple(v) for v in sp.values()}, key=lambda t: t[1])
    if [i for _, i in specials] != list(range(len(specials))):
        raise ValueError(f"special tokens must take the first ids, got {specials}")
    head = [tok for tok, _ in specials]
    if kind == "llama":
        head += [f"<0x{b:02X}>" for b in range(256)]
    sentinels = [f"<extra_id_{i}>" for i in reversed(range(facts.get("extra_ids", 0)))]
    n_pieces = size - len(head) - len(sentinels)
    # SentencePiece's splits: at spaces (kept as "\u2581" on the next piece), around punctuation,
    # and for Llama (split_digits) around every digit.
    splits = [pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always" if kind == "t5" else "first"),
              pre_tokenizers.Punctuation("isolated")]
    if kind == "llama":
        splits.append(pre_tokenizers.Digits(individual_digits=True))
    meta = pre_tokenizers.Sequence(splits)
    trainer_tk = Tokenizer(models.BPE(unk_token=None))
    trainer_tk.pre_tokenizer = meta
    trainer = trainers.BpeTrainer(vocab_size=n_pieces, show_progress=False, special_tokens=[])
    trainer_tk.train_from_iterator(_corpus(), trainer)
    trained = json.loads(trainer_tk.to_str())["model"]
    pieces = sorted(trained["vocab"], key=trained["vocab"].get)[:n_pieces]
    vocab = {tok: i for i, tok in enumerate(head)}
    for piece in pieces:
        vocab.setdefault(piece, len(vocab))
    i = 0
    while len(vocab) < size - len(sentinels):  # unreachable fillers up to the real size
        vocab.setdefault(f"\u2581shadow{i}", len(vocab))
        i += 1
    for s in sentinels:
        vocab[s] = len(vocab)
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    tk = Tokenizer(models.BPE(vocab, merges, unk_token=sp["unk_token"][0], byte_fallback=kind == "llama",
                              fuse_unk=kind == "llama"))
    tk.pre_tokenizer = meta
    tk.add_special_tokens(head[:len(specials)] + sentinels)
    _decode_and_mark(tk, facts)
    names = {k: v[0] for k, v in sp.items()}
    extra = {"additional_special_tokens": sentinels} if sentinels else {}
    return PreTrainedTokenizerFast(tokenizer_object=tk, model_max_length=facts.get("model_max_length"),
                                   **names, **extra)


# -- the hub cache -----------------------------------------------------------------------

def _snapshot_hash(repo_id: str, cfg: dict) -> str:
    """A stable 40-hex revision name: the same config and cut give the same snapshot."""
    key = json.dumps({"id": repo_id, "config": cfg, "store": str(STORE_DTYPE), "format": FORMAT}, sort_keys=True)
    return hashlib.sha1(key.encode()).hexdigest()


def _write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def _save_weights(model, folder: Path) -> None:
    """Safetensors shards of the model's tensors, each tensor once (tied aliases dropped)."""
    from safetensors.torch import save_file
    seen, tensors = set(), []
    for name, t in model.state_dict().items():
        if t.data_ptr() in seen:
            continue  # e.g. T5's encoder/decoder embed_tokens alias ``shared``
        seen.add(t.data_ptr())
        tensors.append((name, t))
    shards, cur, size = [], [], 0
    for name, t in tensors:
        nbytes = t.numel() * t.element_size()
        if cur and size + nbytes > SHARD_BYTES:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, t))
        size += nbytes
    shards.append(cur)
    if len(shards) == 1:
        save_file({n: t.detach().cpu().contiguous() for n, t in shards[0]}, str(folder / "model.safetensors"),
                  metadata={"format": "pt"})
        return
    weight_map, total = {}, 0
    for i, shard in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file({n: t.detach().cpu().contiguous() for n, t in shard}, str(folder / fname), metadata={"format": "pt"})
        for n, t in shard:
            weight_map[n] = fname
            total += t.numel() * t.element_size()
    _write_json(folder / "model.safetensors.index.json", {"metadata": {"total_size": total}, "weight_map": weight_map})


def _save_tokenizer(tok, facts: dict, folder: Path) -> None:
    tok.save_pretrained(str(folder))
    sp = {k: v[0] for k, v in facts["special"].items()}
    if facts.get("extra_ids"):
        sp["additional_special_tokens"] = [f"<extra_id_{i}>" for i in range(facts["extra_ids"])]
    _write_json(folder / "special_tokens_map.json", sp)


def build_shadow(out_dir, repo_id: str, max_layers: int | None = None, seed: int = 0, device=None,
                 tokenizer=None, max_width: int | None = None) -> dict:
    """Write one shadow checkpoint of ``repo_id`` into the hub cache ``out_dir``; return its record.

    An existing snapshot of the same config and cut is kept (the build is then nearly free).
    """
    out_dir = Path(out_dir)
    cfg = {**shadow_config(repo_id, max_layers, max_width), RANDOM_WEIGHTS_KEY: True}  # loaded families know it
    facts = tokenizer_facts(repo_id)
    full = config_params(published_config(repo_id))
    rev = _snapshot_hash(repo_id, cfg)
    repo_dir = out_dir / f"models--{repo_id.replace('/', '--')}"
    snap = repo_dir / "snapshots" / rev
    pub = published_config(repo_id)
    cut = {k: f"{pub[k]}->{cfg[k]}" for k in pub if k in cfg and cfg[k] != pub[k]}
    record = dict(id=repo_id, params_full=full, params_built=config_params(cfg), cut=cut, path=str(snap), reused=True)
    if not (snap / "config.json").exists():
        record["reused"] = False
        model = shadow_model(cfg, seed=seed, device=device)
        tmp = Path(tempfile.mkdtemp(prefix=".shadow-", dir=out_dir))
        try:
            _save_weights(model, tmp)
            del model
            _save_tokenizer(tokenizer or build_tokenizer(facts), facts, tmp)
            _write_json(tmp / "generation_config.json", published_generation_config(repo_id))
            _write_json(tmp / "config.json", cfg)  # last: its presence marks a complete snapshot
            snap.parent.mkdir(parents=True, exist_ok=True)
            tmp.replace(snap)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / "main").write_text(rev)
    return record


def build_shadows(out_dir, presets=DEFAULT_PRESETS, max_layers: int | None = None,
                  seed: int = 0, device=None, verbose: bool = True, ids=None, max_width: int | None = None) -> list[dict]:
    """Write shadow checkpoints of every model of ``presets`` (or of ``ids``) into the hub cache ``out_dir``.

    Args:
        out_dir: the hub cache to write; use it with ``HF_HUB_CACHE=out_dir``.
        presets: real preset names (``families.REAL_PRESETS``); shared models are written once.
        max_layers: cut every layer count to at most this (width, vocabulary and everything
            else stay as published); None keeps the full depth.
        device: where the random weights are initialised (a GPU makes full-depth builds fast).
        verbose: log one line per model (the ``csd_lib`` logger, stderr).
        ids: repo ids with a stored config (``stored_ids()``), built instead of ``presets``.
        max_width: narrow every model to at most this hidden size (``shadow_config``); None keeps the width.
    Returns one record per id: ``id``, ``params_full``, ``params_built``, ``cut``, ``path``, ``reused``
    and ``tokens_per_word`` (its tokenizer on the synth-gsm8k test prompts, see ``tokens_per_word``).
    """
    out_dir = Path(out_dir)
    ids = preset_ids(presets) if ids is None else list(dict.fromkeys(ids))
    stored = stored_ids()
    unknown = [rid for rid in ids if rid not in stored]
    if unknown:
        raise ValueError(f"no stored published config for {', '.join(map(repr, unknown))}; "
                         f"stored ids: {', '.join(stored)}")
    if not ids:
        raise ValueError("no models to build: give at least one preset or id")
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--out {out_dir} is a file; give a folder for the hub cache")
    out_dir.mkdir(parents=True, exist_ok=True)
    records, toks, rates = [], {}, {}
    for i, rid in enumerate(ids):
        facts = tokenizer_facts(rid)
        key = json.dumps(facts, sort_keys=True)
        snap_exists = (out_dir / f"models--{rid.replace('/', '--')}" / "snapshots" /
                       _snapshot_hash(rid, shadow_config(rid, max_layers, max_width)) / "config.json").exists()
        if key not in toks and not snap_exists:
            toks[key] = build_tokenizer(facts)
        rec = build_shadow(out_dir, rid, max_layers, seed=seed + i, device=device, tokenizer=toks.get(key),
                           max_width=max_width)
        if key not in rates:
            from transformers import AutoTokenizer
            rates[key] = tokens_per_word(toks.get(key) or AutoTokenizer.from_pretrained(rec["path"]))
        rec["tokens_per_word"] = rates[key]
        records.append(rec)
        if verbose:
            log.info(describe(rec))
    return records


def describe(record: dict) -> str:
    """One line on a ``build_shadows`` record: sizes, cut, the tokenizer's tokens per word."""
    cut = ", ".join(f"{k} {v}" for k, v in record["cut"].items()) or "full depth"
    return (f"{record['id']}: {record['params_built'] / 1e6:,.1f}M parameters built "
            f"({record['params_full'] / 1e6:,.1f}M at full depth); cut: {cut}; tokenizer: "
            f"{record['tokens_per_word']:.2f} tokens per word on the synth-gsm8k prompts"
            f"{' (already there)' if record['reused'] else ''}")
