"""The library's notes go through ``logging`` to stderr, never stdout; one call silences them.

Every module logs with ``logging.getLogger(__name__)``. The ``csd_lib`` logger gets one
handler that writes ``message`` to the *current* ``sys.stderr`` (so Jupyter and pytest see
it), at INFO by default. ``set_verbosity("warning")`` keeps only warnings and errors.
Progress bars go to stderr too: :func:`seconds_bar` (tqdm, imported with the first bar so that
``import csd_lib`` stays quick).
"""
from __future__ import annotations

import logging
import sys

ROOT = "csd_lib"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class _StderrHandler(logging.StreamHandler):
    """A StreamHandler bound to whatever ``sys.stderr`` is when a record is written."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


def _install() -> logging.Logger:
    root = logging.getLogger(ROOT)
    if not any(isinstance(h, _StderrHandler) for h in root.handlers):
        h = _StderrHandler()
        h.setFormatter(logging.Formatter("%(message)s"))
        root.addHandler(h)
        root.setLevel(logging.INFO)
        root.propagate = False  # one copy of each note, even when the application configures logging
    return root


def set_verbosity(level: str | int = "info") -> None:
    """Show the library's notes at ``level`` and above: 'debug', 'info' (default), 'warning', 'error'."""
    if isinstance(level, str):
        if level.lower() not in LEVELS:
            raise ValueError(f"unknown verbosity {level!r}; use one of {', '.join(LEVELS)}")
        level = LEVELS[level.lower()]
    _install().setLevel(level)


def seconds_bar(total_s: float, desc: str, disable: bool = False, leave: bool = True):
    """A progress bar (stderr) over ``total_s`` predicted seconds of work: ``update(s)`` as each item of predicted
    ``s`` seconds is done, so the time left that it shows weighs every item by its cost."""
    from tqdm.auto import tqdm  # here, not at the top: importing tqdm costs ~70 ms on every ``import csd_lib``
    return tqdm(total=max(total_s, 1e-9), desc=desc, disable=disable, leave=leave, unit="s",
                bar_format="{l_bar}{bar}| {n:.3g}/{total:.3g} s predicted [{elapsed}<{remaining}]")


_install()
