"""The ``neardup`` command line (the console script ``neardup = "neardup.cli:main"``).

Modules: ``entry`` (main: parse, dispatch, exit codes of errors, Ctrl-C, a closed stdout),
``parser`` (the top parser), ``exits`` (the exit codes and the error -> exit code rules),
``signals`` (SIGTERM/SIGHUP as Ctrl-C), ``settings_args`` (flags derived from
neardup.settings.Settings), and one module per command: ``dedup`` (dedup, demo), ``spark``
(dedup --engine spark), ``curve``, ``eval``, ``synth``, ``index`` (index ACTION: parser and
dispatch; ``index_add``, ``index_query``, ``index_admin``, ``index_common``), ``serve``.

Importing it loads neither NumPy, pyarrow, the compiled core, the engines nor the index: each
command imports what it runs when it runs (tests/cli/test_startup.py). No library module
imports this package.
"""

from neardup.cli.entry import main

__all__ = ["main"]
