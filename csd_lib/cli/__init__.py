"""The command line: ``csd generate|demo|bench|costs|shadow|predict`` (``python -m csd_lib ...``).

:mod:`~csd_lib.cli.parser` is the argument table, :mod:`~csd_lib.cli.args` the checks of file
and value arguments, :mod:`~csd_lib.cli.commands` one function per command, and
:func:`~csd_lib.cli.main.main` turns bad input into one line and exit status 2.
"""
