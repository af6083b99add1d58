"""What the ``neardup index`` actions share: the input fields, plain-text files, counts in
words, and the message of an interrupted add or remove."""

from __future__ import annotations

import sys

from neardup.cli.exits import EXIT_INTERRUPTED


def fields(a):
    from neardup.io.records import Fields

    return Fields(
        id=a.id_field, text=a.text_field, title=a.title_field, time=a.time_field or None, source=a.source_field or None
    )


def read_text_file(path: str) -> str:
    """A plain-text file's content (UTF-8), for ``query --text-file`` and ``remove --ids-file``;
    :class:`InputFileError` naming the file otherwise."""
    from neardup.errors import InputFileError
    from neardup.io.records import decode_utf8

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return decode_utf8(data)
    except ValueError as exc:
        raise InputFileError(f"{path}: {exc}") from None


def plural(k: int, one: str, many: str | None = None) -> str:
    """'1 document', '2 documents' (thousands separated)."""
    return f"{k:,} {one if k == 1 else (many or one + 's')}"


def interrupted(what: str, directory: str, before: int | None) -> int:
    """Ctrl-C during an add or a remove: whether it went in, from the index itself (a commit
    is all or nothing; "interrupted" alone left a user thinking nothing had happened when the
    batch was in)."""
    from neardup.index import Index

    done = None
    if before is not None:
        try:
            with Index.open(directory) as idx:
                done = idx.stats()["batches"] > before
        except Exception:  # noqa: BLE001 - the message then says it does not know
            done = None
    if done is None:
        state = "whether it was committed is not known: look with `neardup index stats`"
    elif not done:
        state = "nothing was " + ("added" if what == "add" else "removed")
    elif what == "add":
        state = "the batch had been committed: its documents are in the index"
    else:
        state = (
            "the removal had been committed; removed texts not yet overwritten in the text log are "
            "overwritten when the index is next opened for writing (an add, a remove, a compact)"
        )
    print(f"neardup index {what}: interrupted; {state}", file=sys.stderr)
    return EXIT_INTERRUPTED
