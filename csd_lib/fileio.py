"""Output paths checked before any work, and files written whole or not at all.

A path that exists and is not a regular file (a folder, a device, a FIFO, a socket) is refused; a
symlink is written through: its target is replaced, the link stays.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


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
