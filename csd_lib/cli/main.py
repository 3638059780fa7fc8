"""The command line's entry point: bad input ends in one line ``error: ...`` on stderr and exit status 2;
``--debug`` shows the traceback instead.
"""
from __future__ import annotations

import sys

from ..families.hub import hide_weight_loading_bars
from .parser import EXIT_BAD_INPUT, parser


def main(argv=None) -> int:
    """Run the CLI; returns the exit status (0, or 2 for bad input)."""
    args = parser().parse_args(argv)
    hide_weight_loading_bars()  # weight-loading bars would bury the output; download bars stay
    try:
        args.func(args)
    except (ValueError, OSError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        if args.debug:
            raise
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def _one_line(e: Exception) -> str:
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or e}; check the path and its permissions"
    return " ".join(str(e).split()) or type(e).__name__
