"""The ``neardup`` command's exit codes, and the mapping of errors to them.

Exit codes (docs/dedup.md, docs/index.md):
  0  success
  1  internal error (a bug: please report it)
  2  usage error: unknown option, bad option value
  3  bad input record (with --on-error stop, the default): the message names file, line, field
  4  an input file cannot be opened or read
  5  the output directory or a file in it cannot be written
  6  the index is locked by another writer (``neardup index``, ``serve``)
  7  the index is corrupt
  8  the index's settings differ from those asked for
  9  no index there, an index already there, or no such document
  10 ``serve`` cannot listen on its address
  130 interrupted (Ctrl-C); no output file is left half-written
  141 the reader of stdout went away (``neardup demo | head -1``), as a tool killed by SIGPIPE
  143 dedup stopped by SIGTERM (129: SIGHUP), cleaned up as after Ctrl-C

One mechanism, :func:`exit_for`, turns an error into its message and code for every command:
:func:`batch_rules` for dedup, demo, curve, eval and synth, :func:`index_rules` for
``neardup index ...`` and ``serve``.
"""

from __future__ import annotations

import sys

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_RECORD, EXIT_INPUT, EXIT_OUTPUT, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 5, 130
EXIT_LOCKED, EXIT_CORRUPT, EXIT_CONFIG, EXIT_NOT_FOUND, EXIT_LISTEN = 6, 7, 8, 9, 10
#: The exit code of a command whose output's reader went away (``neardup demo | head -1``): a
#: tool killed by SIGPIPE reports 128 + 13.
EXIT_BROKEN_PIPE = 141

#: A rule: (exception type(s), exit code or None for the exception's own ``code``, message
#: template with ``{prog}`` and ``{exc}``).
Rule = tuple


def exit_for(exc: BaseException, prog: str, rules: list[Rule]) -> int:
    """Print the message of the first rule ``(exception types, exit code, template)`` that
    matches `exc` and return its code; an error no rule names is raised again. One mechanism
    for every subcommand (``neardup index`` and ``serve`` pass their own rules)."""
    if isinstance(exc, BrokenPipeError) and prog != "serve":
        raise exc  # the reader of stdout went away: main's quiet 141, not an OS error's 4 or 5
    for types, code, template in rules:
        if isinstance(exc, types):
            print(template.format(prog=prog, exc=exc), file=sys.stderr)
            return code if code is not None else exc.code  # (None: the exception's own, Terminated's)
    raise exc


def batch_rules(command: str) -> list[Rule]:
    """The rules of dedup, demo, curve, eval and synth (and what ``index`` and ``serve`` raise
    again)."""
    from neardup.cli.signals import Terminated
    from neardup.errors import (
        InputFileError,
        InvalidInputError,
        InvalidParameterError,
        NeardupError,
        OutputError,
        RecordError,
    )

    return [
        (Terminated, None, "neardup: terminated ({exc})"),
        (KeyboardInterrupt, EXIT_INTERRUPTED, "neardup: interrupted"),
        (
            RecordError,
            EXIT_RECORD,
            "neardup {prog}: bad record: {exc}\n"
            + (
                "(eval reads the corpus as the run did, with its --on-error: is it the corpus the run read?)"
                if command == "eval"
                else "(use --on-error skip to skip bad records and list them in report.json)"
            ),
        ),
        (InputFileError, EXIT_INPUT, "neardup {prog}: cannot read input: {exc}"),
        (OutputError, EXIT_OUTPUT, "neardup {prog}: cannot write output: {exc}"),
        (InvalidParameterError, EXIT_USAGE, "neardup {prog}: {exc}"),
        (InvalidInputError, EXIT_INPUT, "neardup {prog}: {exc}"),
        (FileNotFoundError, EXIT_INPUT, "neardup {prog}: {exc}"),
        (NeardupError, EXIT_INTERNAL, "neardup {prog}: {exc}"),
    ]


def index_rules(name: str) -> list[Rule]:
    """The rules of ``neardup index ACTION`` and ``neardup serve`` (`name`: "index add", "serve")."""
    from neardup.errors import (
        BackupBusyError,
        DocumentNotFoundError,
        DuplicateIdError,
        IndexConfigError,
        IndexCorruptError,
        IndexExistsError,
        IndexLockedError,
        IndexNotFoundError,
        InputFileError,
        InvalidParameterError,
        ListenError,
        NeardupError,
        OutputError,
        RecordError,
        ScrubIncompleteError,
    )

    nothing = "; nothing was added" if name == "index add" else ""  # (a query adds nothing anyway)
    return [
        (KeyboardInterrupt, EXIT_INTERRUPTED, "neardup {prog}: interrupted"),
        ((IndexLockedError, BackupBusyError), EXIT_LOCKED, "neardup {prog}: {exc}"),
        (ListenError, EXIT_LISTEN, "neardup {prog}: {exc}"),
        (IndexCorruptError, EXIT_CORRUPT, "neardup {prog}: the index is damaged: {exc}"),
        (
            _SqliteDamage,
            EXIT_CORRUPT,
            ("neardup {prog}: the index is damaged: index.sqlite: {exc} (neardup index check says more)"),
        ),
        (ScrubIncompleteError, EXIT_OUTPUT, "neardup {prog}: {exc}"),
        (IndexConfigError, EXIT_CONFIG, "neardup {prog}: {exc}"),
        ((IndexNotFoundError, IndexExistsError, DocumentNotFoundError), EXIT_NOT_FOUND, "neardup {prog}: {exc}"),
        (DuplicateIdError, EXIT_RECORD, "neardup {prog}: {exc}" + nothing),
        (RecordError, EXIT_RECORD, "neardup {prog}: bad record: {exc}" + nothing),
        (InputFileError, EXIT_INPUT, "neardup {prog}: cannot read input: {exc}"),
        (OutputError, EXIT_OUTPUT, "neardup {prog}: cannot write output: {exc}"),
        (
            _DiskFull,
            EXIT_OUTPUT,
            ("neardup {prog}: cannot write: the disk is full ({exc}); the index is as it was before this command"),
        ),
        # an operating system's error no rule above names (a file where a directory goes, a
        # directory where a file goes, ...): said, not a traceback
        (
            OSError,
            EXIT_OUTPUT if name in ("index init", "index export", "index compact", "index backup") else EXIT_INPUT,
            "neardup {prog}: {exc}",
        ),
        ((InvalidParameterError, ValueError), EXIT_USAGE, "neardup {prog}: {exc}"),
        (NeardupError, EXIT_INTERNAL, "neardup {prog}: {exc}"),
    ]


class _DiskFullMeta(type):
    """isinstance(exc, _DiskFull): SQLite's "database or disk is full" (SQLITE_FULL), or an
    operating system's ENOSPC."""

    def __instancecheck__(cls, exc) -> bool:
        import errno
        import sqlite3

        if isinstance(exc, sqlite3.OperationalError):
            return "disk is full" in str(exc) or getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL"
        return isinstance(exc, OSError) and exc.errno == errno.ENOSPC


class _DiskFull(metaclass=_DiskFullMeta):
    pass


class _SqliteDamageMeta(type):
    """isinstance(exc, _SqliteDamage): SQLite found its database file damaged (SQLITE_CORRUPT,
    SQLITE_NOTADB) in the middle of a command (a damaged page it meets only when it reads it)."""

    def __instancecheck__(cls, exc) -> bool:
        import sqlite3

        if not isinstance(exc, sqlite3.DatabaseError):
            return False
        name = getattr(exc, "sqlite_errorname", "") or ""
        return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in str(exc)


class _SqliteDamage(metaclass=_SqliteDamageMeta):
    pass
