"""Checks of the command line's file and value arguments, and the family its arguments name; each
mistake is one ValueError that names the argument and the fix.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ..engine.plan import check_seed
from ..families.family import Family, check_method, load_family
from ..fileio import PACKED, check_input_path, check_output_path, read_jsonl, read_text
from ..measure.records import ALL_METHODS as BENCH_METHODS
from ..measure.records import base_method
from ..price.batch import parse_batch_sizes

log = logging.getLogger(__name__)
MAX_PROMPTS_BYTES = 64 * 2 ** 20  # a prompts file: thousands of long prompts fit
MAX_K_BYTES = 2 ** 20             # a K file holds one small matrix


def check_args_method(args, methods) -> None:
    """``check_method`` for the family named by CLI arguments (``load_from_args``), for each of ``methods``."""
    for method in methods:
        check_method(None if getattr(args, "target", None) else args.family, method,
                     target=getattr(args, "target", None), drafters=arg_drafters(args))


def arg_drafters(args) -> list[str] | None:
    drafters = getattr(args, "drafters", None)
    if isinstance(drafters, str):
        drafters = [d.strip() for d in drafters.split(",") if d.strip()]
    return drafters


def load_from_args(args) -> Family:
    """The family named by CLI arguments: ``--family``, or ``--target ID --drafters ID,ID``; ``--device``, ``--dtype``."""
    return load_family(args.family, device=args.device, dtype=getattr(args, "dtype", None),
                       target=getattr(args, "target", None),
                       drafters=arg_drafters(args))


def read_prompts(path: str) -> list[str]:
    """Prompts from a JSONL file, one ``{"prompt": "..."}`` per line; blank lines are skipped."""
    fix = 'each line must be {"prompt": "..."}'
    out = []
    for i, row in read_jsonl(path, "prompts file", fix, MAX_PROMPTS_BYTES, file_fix=f"pass a JSONL file where {fix}"):
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
            raise ValueError(f"{path}:{i} has no string 'prompt'; {fix}")
        if not row["prompt"].strip():
            raise ValueError(f"{path}:{i} has an empty prompt; give it some text or delete the line")
        out.append(row["prompt"])
    if not out:
        raise ValueError(f"{path} holds no prompts; {fix}")
    return out


def read_k(value: str | None):
    """``--k``: a JSON matrix, or ``@FILE`` holding one."""
    if value is None:
        return None
    example = "e.g. [[5,14,10],[0,1,10],[0,0,10]]"
    if value.startswith("@"):
        path = value[1:]
        text = read_text(path, "K file", f"pass --k @FILE with an existing JSON file holding a K matrix, {example}",
                         MAX_K_BYTES)
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno} is not valid JSON ({e.msg}); the file must hold one K matrix, "
                             f"{example}") from None
    try:
        return json.loads(value)
    except json.JSONDecodeError as e:
        raise ValueError(f"--k is not valid JSON ({e.msg}); e.g. --k '[[5,14,10],[0,1,10],[0,0,10]]' "
                         f"or --k @k.json") from None


# what a name's ending says a file holds; an output named for another format than the one written is refused
FORMATS = {PACKED: "gzip-packed data", ".bz2": "bzip2-packed data", ".xz": "xz-packed data", ".zip": "a zip archive",
           ".zst": "zstd-packed data", ".json": "JSON", ".jsonl": "JSON lines", ".html": "HTML", ".htm": "HTML",
           ".csv": "CSV", ".png": "an image", ".jpg": "an image", ".jpeg": "an image", ".svg": "an image",
           ".webp": "an image", ".pdf": "a PDF"}


@dataclass(frozen=True)
class FileArg:
    """The ``type`` of a file argument in the argument table: the value as given, and what the file is to its
    command, which :func:`check_file_args` checks before any work. ``role``: 'in' (read), 'out' (written),
    'inout' (read, then written: a results file resumed) or 'folder' (an output folder)."""
    role: str
    suffixes: tuple[str, ...] = ()          # out: name endings of the format written, first the usual one
    path_of: Callable[[str], str | None] | None = None  # in: the file a value names (None: none); default the value

    def __call__(self, text: str) -> str:
        return text

    def path(self, value: str) -> str | None:
        return self.path_of(value) if self.path_of is not None else value


def file_args(parser: argparse.ArgumentParser) -> list[tuple[str, str, FileArg]]:
    """(flag, dest, FileArg) of each file argument of a command's parser."""
    return [(a.option_strings[0], a.dest, a.type) for a in parser._actions if isinstance(a.type, FileArg)]


def check_file_args(args) -> None:
    """Every file argument of a command (``args.file_args``, set from the argument table), before any work:
    each output path can be written (:func:`csd_lib.fileio.check_output_path`) and its name says the format
    written; no input is a device or a FIFO (:func:`csd_lib.fileio.check_input_path`); no two outputs name one
    file, and no output is a file another flag reads (it would be replaced by what is read from it). Each
    mistake is one ValueError."""
    given = [(flag, spec, getattr(args, dest)) for flag, dest, spec in getattr(args, "file_args", ())
             if getattr(args, dest, None) is not None]
    outs = [(flag, spec, value) for flag, spec, value in given if spec.role in ("out", "inout")]
    for flag, spec, value in outs:
        check_output_path(value, flag)
        _check_format(flag, spec, value)
    for i, (flag, spec, value) in enumerate(outs):
        for other, _, prior in outs[:i]:
            if _same_file(value, prior):
                raise ValueError(f"{other} and {flag} both name {value}; give each its own file")
    writes = [(flag, value, False) for flag, _, value in outs]
    writes += [(flag, value, True) for flag, spec, value in given if spec.role == "folder"]
    for flag, value, folder in writes:
        if folder:
            _check_folder(flag, value)
    reads = [(flag, spec.path(value)) for flag, spec, value in given if spec.role in ("in", "inout")]
    for flag, path in reads:
        if path is not None:
            check_input_path(path, flag)
    for flag, value, folder in writes:
        for other, path in reads:
            if other != flag and path is not None and _same_file(value, path, inside=folder):
                raise ValueError(f"{flag} {value} is the {other} file this command reads, which writing it would "
                                 f"replace; give {flag} another path")


def _check_folder(flag: str, value: str) -> None:
    """An output folder: one that exists must be a folder, and the nearest existing folder above one to be
    made must be one (:func:`csd_lib.fileio.check_output_path` checks the files written into it)."""
    p = Path(value)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{flag} {value} is a file, not a folder; give a folder (made if missing)")
    parent = next((a for a in p.absolute().parents if a.exists()), None)
    if not p.exists() and parent is not None and not parent.is_dir():
        raise ValueError(f"{flag} {value}: {parent} is a file, not a folder; give a path in a folder")


def _check_format(flag: str, spec: FileArg, value: str) -> None:
    """An output named for the format written: a ``.gz`` name for plain text (a packed file would be read as
    plain) or ``--plot p.png`` for HTML is refused."""
    suffix = Path(value).suffix.lower()
    if suffix not in FORMATS or not spec.suffixes or suffix in spec.suffixes:
        return
    usual = FORMATS.get(spec.suffixes[0], f"{spec.suffixes[0]} files")
    if suffix != PACKED:
        raise ValueError(f"{flag} {value}: the name says {FORMATS[suffix]}, but {flag} writes {usual}; give a name "
                         f"ending in {' or '.join(spec.suffixes)}")
    resume = (f" (a packed run resumes so: {Path(value).name} is read, and the run goes on in the plain file)"
              if spec.role == "inout" else "")
    raise ValueError(f"{flag} {value}: a .gz name says gzip-packed, but {flag} writes plain {usual}; give {flag} "
                     f"{value[:-len(PACKED)]}{resume}")


def _same_file(a: str, b: str, inside: bool = False) -> bool:
    """Whether paths ``a`` and ``b`` name one file (one real path, or hard links); ``inside``: ``b`` lies
    in folder ``a``."""
    ra, rb = os.path.realpath(a), os.path.realpath(b)
    if ra == rb or inside and rb.startswith(ra.rstrip(os.sep) + os.sep):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def free_path(path: Path) -> Path:
    """``path``, or the first of ``stem-2.ext``, ``stem-3.ext``, ... that does not exist."""
    j = 2
    while path.exists():
        path, j = path.with_name(f"{path.stem.removesuffix(f'-{j - 1}')}-{j}{path.suffix}"), j + 1
    return path


def finite_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return x


def positive_float(text: str) -> float:
    """A finite number > 0 (a time budget)."""
    x = finite_float(text)
    if x <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be > 0 (seconds)")
    return x


def model_id(text: str) -> str:
    """``--target``: a hub id (``org/name``) or a local folder; a path that is no folder is refused here,
    not as the hub's repo-id format error."""
    path_like = text.startswith(("/", ".", "~")) or text.count("/") > 1 or "\\" in text
    if not text.strip():
        raise argparse.ArgumentTypeError("empty; give a hub id like google/flan-t5-small or a local model folder")
    if path_like and not Path(text).expanduser().is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such folder; give a local model folder (holding its "
                                         f"config.json) or a hub id like google/flan-t5-small")
    return str(Path(text).expanduser()) if path_like else text


def model_ids(text: str) -> str:
    """``--drafters``: comma-separated :func:`model_id` values."""
    return ",".join(model_id(t.strip()) for t in text.split(",") if t.strip())


def batch_sizes(text: str) -> list[int]:
    """``predict --batch-size``: :func:`csd_lib.price.batch.parse_batch_sizes`, refused in one line."""
    try:
        return parse_batch_sizes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def saturation_tokens(text: str) -> float:
    """``predict --saturation``: tokens a call feeds at one row's price, a finite number >= 1."""
    x = finite_float(text)
    if x < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1 (tokens a batched call feeds at one row's price; "
                                         f"1: none, the linear model)")
    return x


def positive_int(text: str) -> int:
    try:
        x = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if x < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return x


def seed_int(text: str) -> int:
    try:
        return check_seed(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer in [0, 2**64)") from None


def device_arg(text: str) -> str:
    """``--device``: a torch device this machine has (cpu, cuda, cuda:N, mps)."""
    try:
        dev = torch.device(text)
    except (RuntimeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a torch device; use cpu, cuda, cuda:N or mps") from None
    n_cuda = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if dev.type == "cuda" and (dev.index or 0) >= n_cuda:
        raise argparse.ArgumentTypeError(f"{text!r}: this machine has {n_cuda} CUDA device(s); use "
                                         f"{'cpu' if not n_cuda else f'cuda:0 to cuda:{n_cuda - 1}, or cpu'}")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise argparse.ArgumentTypeError(f"{text!r}: MPS is not available on this machine; use cpu")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise argparse.ArgumentTypeError(f"{text!r}: device type {dev.type!r} is not supported; use cpu, cuda or mps")
    return text


def method_list(text: str) -> str:
    """``bench --methods``: a comma-separated list of known methods, or ``sd@K`` (SD at draft length K beside the
    run's own sd), checked before any model loads."""
    methods = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in methods if base_method(m) not in BENCH_METHODS]
    if bad or not methods:
        raise argparse.ArgumentTypeError(f"unknown method(s) {', '.join(bad) or repr(text)}; use a comma-separated "
                                         f"list of {', '.join(BENCH_METHODS)}, or sd@K (SD at draft length K)")
    return ",".join(methods)
