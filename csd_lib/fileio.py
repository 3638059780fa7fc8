"""Input files read whole and bounded, output paths checked before any work, files written whole or not at all.

An input is read only from a regular file (a device or a FIFO is never opened, so it can neither
block nor fill memory), at most a bounded number of bytes, and a byte that is not UTF-8 is named
with its line (:func:`read_text`, :func:`read_jsonl`: the library's one JSONL reader). An output path
that exists and is not a regular file (a folder, a device, a FIFO, a socket) is refused; a symlink is
written through: its target is replaced, the link stays.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import stat
import tempfile
import zlib
from pathlib import Path

MAX_INPUT_BYTES = 256 * 2 ** 20  # far more than any input file of the workbook holds
PACKED = ".gz"  # a name ending so is read (and must be written) gzip-packed


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_input_path(path, what: str) -> None:
    """An input path that exists must be a regular file or a folder (whose reader says what it wanted): a
    device, a FIFO or a socket is a ValueError, found without opening it (which could block or never end)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # missing or unreadable: its reader names it
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ValueError(f"{what} {path} is {_kind(mode)}, not a regular file; give a file")


def read_input(path, what: str, fix: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of input file ``path`` (``what``: e.g. 'prompts file'; ``fix``: what to give instead),
    gzip-unpacked when its name ends in ``.gz``. A missing path, a folder, anything but a regular file, a
    file over ``limit`` bytes (unpacked) and an unreadable one are each one ValueError naming the path."""
    try:
        mode = os.stat(path).st_mode  # before opening: opening a FIFO would block, a device never ends
    except (FileNotFoundError, NotADirectoryError):
        raise ValueError(f"{what} {path} not found; {fix}") from None
    except OSError as e:
        raise ValueError(f"{what} {path}: {e.strerror}; {fix}") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{what} {path} is a directory, not a file; {fix}")
    if not stat.S_ISREG(mode):
        raise ValueError(f"{what} {path} is {_kind(mode)}, not a regular file; {fix}")
    try:
        with (gzip.open if str(path).endswith(PACKED) else open)(path, "rb") as f:
            data = f.read(limit + 1)
    except PermissionError:
        raise ValueError(f"{what} {path} is not readable (permission denied); fix its permissions") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise ValueError(f"{what} {path} is not a readable gzip file ({e}); {fix}") from None
    if len(data) > limit:
        raise ValueError(f"{what} {path} is larger than {limit // 2 ** 20} MiB, more than a {what} holds; {fix}")
    return data


def read_text(path, what: str, fix: str, limit: int = MAX_INPUT_BYTES) -> str:
    """Input file ``path`` (:func:`read_input`) as UTF-8 text; a byte-order mark is dropped, a byte that is
    not UTF-8 is a ValueError naming its line."""
    data = read_input(path, what, fix, limit)
    try:
        return data.decode("utf-8-sig")  # a byte-order mark (Notepad's "UTF-8 with BOM") is dropped
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line} is not UTF-8 text (byte {data[e.start]:#04x}); save the {what} "
                         f"as UTF-8") from None


def read_jsonl(path, what: str, fix: str, limit: int = MAX_INPUT_BYTES, item: str = "JSON",
               torn_ok: bool = False, file_fix: str | None = None) -> list[tuple[int, object]]:
    """(line number, value) of each non-blank line of JSONL file ``path`` (:func:`read_input`: regular,
    bounded, ``.gz`` unpacked). A line that is not UTF-8 or not JSON (``item``: what a line should be,
    e.g. 'a JSON record') is a ValueError naming ``path:line`` and ``fix``. ``torn_ok``: a last line
    without its newline (a writer stopped mid-line) is dropped instead of read. ``file_fix``: the fix
    when the file as a whole is wrong (default ``fix``)."""
    lines = read_input(path, what, file_fix or fix, limit).split(b"\n")
    last = lines.pop()  # what follows the last newline: nothing, or a line without its newline
    if last and not torn_ok:
        lines.append(last)
    out = []
    for i, raw in enumerate(lines, 1):
        raw = raw.removeprefix(b"\xef\xbb\xbf") if i == 1 else raw  # a byte-order mark
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}:{i} is not UTF-8 text (byte {raw[e.start]:#04x}); {fix}") from None
        if not text.strip():
            continue
        try:
            out.append((i, json.loads(text)))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{i} is not {item} ({e.msg}); {fix}") from None
    return out


def check_output_path(path, what: str = "output") -> Path:
    """The file to write for output path ``path`` (``what``: the argument, e.g. '--out'), checked
    before any work: an existing path must be a regular file (a symlink: its target, which is what is
    written), the nearest existing folder above it a folder you can write. Each mistake is one ValueError."""
    if str(path).strip() == "":
        raise ValueError(f"{what} is empty; give a file path")
    p = Path(path)
    target = p.resolve() if p.is_symlink() else p  # written through: the link's target is replaced
    try:
        mode = target.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # a folder above it that is a file: said below
        mode = None
    except OSError as e:
        raise ValueError(f"{what} {path}: {e.strerror}; give another path") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise ValueError(f"{what} {path} is {_kind(mode)}, not a regular file; give a file path")
    parent = next((a for a in target.absolute().parents if a.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ValueError(f"{what} {path}: {parent} is a file, not a folder; give a path in a folder")
    if mode is not None and not os.access(target, os.W_OK):
        raise ValueError(f"{what} {path} is not writable (permission denied); fix its permissions or give "
                         f"another path")
    if parent is not None and not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {path}: the folder {parent} is not writable (permission denied); give a path "
                         f"in a folder you can write")
    return target


def write_atomic(path, text: str | bytes, what: str = "output") -> None:
    """Write ``text`` (str as UTF-8, or bytes) to ``path`` through a temporary file in the same folder and a rename: a crash
    leaves the old file, and no temporary file stays. ``path`` is checked first
    (:func:`check_output_path`); a failure names ``path``, never the temporary file."""
    target = check_output_path(path, what)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(path)) from None
    try:
        with (os.fdopen(fd, "wb") if isinstance(text, bytes) else os.fdopen(fd, "w", encoding="utf-8")) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.errno is not None:
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise
