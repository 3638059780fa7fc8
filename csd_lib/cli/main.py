"""The command line's entry point: bad input ends in one line ``error: ...`` on stderr and exit status 2,
Ctrl-C in one line ``interrupted ...`` and exit status 130; ``--debug`` shows the traceback instead.
"""
from __future__ import annotations

import re
import sys
import warnings

from ..families.hub import hide_weight_loading_bars
from ..measure.bench import BenchInterrupted
from .args import check_file_args
from .parser import EXIT_BAD_INPUT, EXIT_INTERRUPTED, parser

RESUMES = ("bench",)  # commands that continue where they stopped when run again


def main(argv=None) -> int:
    """Run the CLI; returns the exit status (0; 2 for bad input; 130 for Ctrl-C)."""
    try:
        args = parser().parse_args(_joined(sys.argv[1:] if argv is None else list(argv)))
    except KeyboardInterrupt:  # the choices' checks may import and probe (--device: CUDA)
        print("\ninterrupted; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    with warnings.catch_warnings():
        warnings.showwarning = _note  # a library's warning is one note line, without its source line
        try:
            hide_weight_loading_bars()  # weight-loading bars would bury the output; download bars stay
            check_file_args(args)  # every output path, and none that is an input, before any work
            args.func(args)
        except (ValueError, OSError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            if args.debug:
                raise
            print(f"error: {_one_line(e)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except KeyboardInterrupt as e:
            if args.debug:
                raise
            print(f"\n{interrupted_line(args.command, e)}", file=sys.stderr)
            return EXIT_INTERRUPTED
    return 0


def interrupted_line(command: str, e: KeyboardInterrupt) -> str:
    """The one line that Ctrl-C leaves: how far a bench got and how to resume."""
    done = f" after {e.args[0]} of {e.args[1]} results" if isinstance(e, BenchInterrupted) else ""
    if command in RESUMES:
        return f"interrupted{done}; run the same command again to resume"
    return "interrupted; nothing was written" if command in ("predict", "costs") else "interrupted"


def _joined(argv: list[str]) -> list[str]:
    """``--acceptance -0.1,0.5`` as ``--acceptance=-0.1,0.5``: argparse takes a value starting with '-'
    for a flag, so a negative rate would get 'expected one argument' instead of its own message."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--acceptance" and i + 1 < len(argv) and re.match(r"-[\d.]", argv[i + 1]):
            out.append(f"--acceptance={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _note(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"note: {' '.join(str(message).split())}", file=sys.stderr)


def _one_line(e: Exception) -> str:
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or e}; check the path and its permissions"
    return " ".join(str(e).split()) or type(e).__name__
