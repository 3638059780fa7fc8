"""``python -m csd_lib ...``: the command line (:mod:`csd_lib.cli`)."""
from .cli.main import main

raise SystemExit(main())
