"""Atomic output files: written under a temporary name in the same directory, then renamed.

A crash, a full disk or Ctrl-C never leaves a half-written file under the final name: either
the old file (if any) or the complete new one is there.
"""

from __future__ import annotations

import base64
import contextvars
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import IO, Any

from neardup.errors import NeardupError, OutputError, _writable

__all__ = ["atomic_open", "dumps", "json_default", "staged", "writable_tree", "write_jsonl"]

_orjson: ModuleType | None
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None


def json_default(v):
    """JSON for a value JSON has no type for: bytes (a Parquet binary column) as base64, as
    Spark's and Arrow's JSON writers give them (lossless, and the Spark engine's kept.jsonl is
    the local engine's); anything else (Decimal, dates from Parquet, ...) as ``str``."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(v).decode("ascii")
    return str(v)


def dumps(obj) -> str:
    """One compact JSON line (UTF-8 kept as is, not \\u-escaped)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(obj, default=json_default).decode("utf-8")
        except TypeError:
            pass  # e.g. an int over 64 bits: the standard library copes
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=json_default)


def writable_tree(obj):
    """`obj` (a report: dicts, lists, strings, numbers) with every string that holds a lone
    surrogate as its backslash escape (RecordError.as_dict's rule, keys too): a file name that
    is not UTF-8 (os.fsdecode's, or argv's, ``caf\\udce9.jsonl``) failed report.json's UTF-8
    writer after the whole run."""
    if isinstance(obj, str):
        return _writable(obj)
    if isinstance(obj, dict):
        return {writable_tree(k): writable_tree(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [writable_tree(v) for v in obj]
    return obj


def ensure_output_dir(outdir: str) -> None:
    """Create `outdir` if needed and check that it is writable, before any output is written."""
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{outdir}: cannot create the output directory: {exc.strerror or exc}") from exc
    if not os.access(outdir, os.W_OK):
        raise OutputError(f"{outdir}: the output directory is not writable")


#: The output set being written (:func:`staged`): temporary paths renamed together at its end.
_STAGE: contextvars.ContextVar[_Stage | None] = contextvars.ContextVar("neardup_stage", default=None)


@contextmanager
def staged() -> Iterator[None]:
    """Write several outputs as one set: inside, each :func:`atomic_path` (and so
    :func:`atomic_open`) writes its temporary file and leaves it; the set is renamed into place
    when the block ends, or removed when it fails, so that a run that fails while writing
    leaves the previous run's files as they were, not its own first files beside the previous
    run's last ones."""
    pending = _Stage()
    token = _STAGE.set(pending)
    try:
        yield
        for tmp, path in pending:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    except BaseException:
        for tmp, _ in pending:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        pending.remove_strays()
        raise
    finally:
        _STAGE.reset(token)


class _Stage(list):
    """The (temporary, final) paths of a set being written, and a tag in the temporary names
    of this set only: a signal (SIGTERM, Ctrl-C) that lands between mkstemp creating a file
    and the code that would remove it left a ``.clusters.jsonl.*.tmp`` behind; on failure the
    directories written to are searched for this set's tag (never another file)."""

    def __init__(self) -> None:
        super().__init__()
        self.tag = f"nd{os.getpid()}x{os.urandom(4).hex()}"
        self.dirs: set[str] = set()

    def remove_strays(self) -> None:
        for d in self.dirs:
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for name in names:
                if name.startswith(".") and name.endswith(".tmp") and f".{self.tag}." in name:
                    try:
                        os.unlink(os.path.join(d, name))
                    except OSError:
                        pass


@contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """A temporary path next to `path`, renamed over `path` only if the block succeeds (and
    removed if it fails), so a crash never leaves a half-written file under the real name.
    For writers that want a path (Parquet) rather than a file object."""
    directory = os.path.dirname(os.path.abspath(path))
    stage = _STAGE.get()
    prefix = f".{os.path.basename(path)}."
    if stage is not None:  # (registered before the file exists: staged() finds it if we are cut short)
        stage.dirs.add(directory)
        prefix += stage.tag + "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
        # mkstemp makes it readable by its owner only: the file gets the mode a file created
        # with open() would (0666 less the umask), not 0600
        os.fchmod(fd, 0o666 & ~_umask())
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    os.close(fd)
    try:
        yield tmp
        if stage is not None:
            stage.append((tmp, path))  # renamed with the rest of the set (staged)
        else:
            os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, NeardupError):
            # a full disk, a file size limit, a directory where the file goes: said, not a traceback
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
        raise


def _umask() -> int:
    """This process's umask (Linux says it in /proc; elsewhere it is read by setting it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - not Linux
    os.umask(mask)
    return mask


@contextmanager
def atomic_open(path: str, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file next to `path`; rename it over `path` only if the block succeeds."""
    with atomic_path(path) as tmp:
        text: dict[str, Any] = {"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {}
        with open(tmp, mode, **text) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())


def write_jsonl(path: str, rows) -> int:
    """Write an iterable of dicts as JSON lines, atomically. Returns the number of lines."""
    n = 0
    with atomic_open(path) as f:
        for row in rows:
            f.write(dumps(row))
            f.write("\n")
            n += 1
    return n
