"""``python -m csd_lib ...``: the command line (:mod:`csd_lib.cli`); Ctrl-C while torch imports is one line too."""
import sys

try:
    from .cli.main import main
except KeyboardInterrupt:
    print("\ninterrupted; nothing was written", file=sys.stderr)
    raise SystemExit(130) from None  # cli.parser.EXIT_INTERRUPTED, not importable before the import is done

raise SystemExit(main())
