"""The service's settings: :class:`ServiceConfig`, one frozen object for ``neardup serve``
(``serve(directory, config)``), checked in one place (its ``__post_init__``): a mistyped limit
is said before anything is opened, naming the command-line flag that sets it."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from neardup.errors import InvalidParameterError
from neardup.settings import DEFAULT_MAX_CHARS

__all__ = [
    "FD_WANTED",
    "GRACEFUL_SHUTDOWN",
    "PING_TIMEOUT",
    "ServiceConfig",
    "WRITE_TIMEOUT",
    "health_timeout",
    "positive",
    "seconds",
    "write_timeout",
]

#: seconds a write (POST, DELETE) waits for the writer's answer before it is answered 503
#: writer_timeout, its outcome unknown (``neardup serve --write-timeout``; None: no limit).
#: Without a limit a POST to a stopped or hung writer process waited forever, holding its
#: connection and its client. A batch of 10,000 articles takes seconds, not a minute.
WRITE_TIMEOUT = 60.0
#: seconds GET /v1/health waits for the writer's answer to its ping (``neardup serve
#: --health-timeout``); then it answers 503, unless the writer (process or thread) is busy
#: (views/health.py: BUSY_STEP, STALL_GRACE)
PING_TIMEOUT = 2.0
#: seconds a shutdown (SIGTERM, Ctrl-C) waits for the requests under way before it cuts them off
#: (a POST then gets 503 writer_unavailable; a request whose body never came, uvicorn's 500);
#: ``neardup serve --shutdown-timeout``
GRACEFUL_SHUTDOWN = 10
#: the soft limit on open files is raised up to this (within the hard limit) at the start;
#: ``neardup serve --max-open-files``
FD_WANTED = 65536


@dataclass(frozen=True)
class ServiceConfig:
    """What ``neardup serve`` runs with (one field per flag), checked and normalised when made.

    `writer`: "process" (default) adds, dry runs and removes in a process of its own
    (worker.py: its own GIL and core); "thread": in a thread of this process.
    `fold`: "background" (default) folds level 0 into a segment in a thread of its own, off the
    requests' path (index/fold.py); "inline" folds it inside the add that fills it, as the CLI's
    adds do (a ~400 ms request every 50,000 articles). `l0_max` / `l0_fold_at` / `merge_max`
    override the index's stored tuning for this process.
    `max_chars`: the longest text an article may have (longer: 422 bad_document).
    `shutdown_timeout`: seconds a shutdown waits for the requests under way (uvicorn's
    timeout_graceful_shutdown). `write_timeout`: seconds a write waits for the writer (None or
    0, "none", "off": no limit; normalised to None). `health_timeout`: seconds GET /v1/health
    waits for the writer's answer. `max_connections`: open connections past which a request
    gets uvicorn's 503 at once (None: as many as the limit on open files allows,
    server.connection_limit; more than that is refused when the server starts).
    `max_open_files`: the soft limit on open files is raised up to it, within the hard limit
    (server.raise_fd_limit)."""

    host: str = "127.0.0.1"
    port: int = 8000
    max_body: int = 10_000_000
    max_batch: int = 10_000
    max_chars: int = DEFAULT_MAX_CHARS
    init: bool = False
    threads: int | None = None
    log_level: str = "warning"
    sync: str = "full"
    fold: str = "background"
    l0_max: int | None = None
    l0_fold_at: int | None = None
    merge_max: int | None = None
    writer: str = "process"
    shutdown_timeout: float = GRACEFUL_SHUTDOWN
    write_timeout: float | None = WRITE_TIMEOUT
    health_timeout: float = PING_TIMEOUT
    max_connections: int | None = None
    max_open_files: int = FD_WANTED

    def __post_init__(self) -> None:
        if self.fold not in ("background", "inline"):
            raise InvalidParameterError(f"fold must be 'background' or 'inline', got {self.fold!r}")
        if self.writer not in ("process", "thread"):
            raise InvalidParameterError(f"writer must be 'process' or 'thread', got {self.writer!r}")
        put = object.__setattr__  # (frozen: the checked values replace the given ones here only)
        put(self, "shutdown_timeout", seconds("--shutdown-timeout", self.shutdown_timeout))
        put(self, "write_timeout", write_timeout(self.write_timeout))
        put(self, "health_timeout", health_timeout(self.health_timeout))
        put(self, "max_open_files", positive("--max-open-files", self.max_open_files))
        if self.max_connections is not None:
            put(self, "max_connections", positive("--max-connections", self.max_connections))
        put(self, "max_chars", positive("--max-chars", self.max_chars))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The fields' names (serve's keyword arguments)."""
        return tuple(f.name for f in fields(cls))

    def open_kw(self) -> dict:
        """:meth:`Index.open`'s keyword arguments for the writer. ``--sync full``: each answer
        waits for the WAL's fsync, done for every group since the last one by a thread of its
        own while the writer goes on (sync="group", writer.Acks)."""
        return dict(
            threads=self.threads,
            sync="group" if self.sync == "full" else self.sync,
            background_fold=self.fold == "background",
            l0_max=self.l0_max,
            l0_fold_at=self.l0_fold_at,
            merge_max=self.merge_max,
        )


def seconds(flag: str, v) -> float:
    """A number of seconds, finite and not negative (InvalidParameterError naming `flag`)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise InvalidParameterError(f"{flag} must be a number of seconds, 0 or more, got {v!r}")
    return float(v)


def health_timeout(v) -> float:
    """The health timeout: seconds, more than 0."""
    v = seconds("--health-timeout", v)
    if v == 0:
        raise InvalidParameterError("--health-timeout must be more than 0 seconds")
    return v


def write_timeout(v) -> float | None:
    """The write timeout: None for no limit (None, 0, "none" as the flag gives it), else seconds."""
    if v is None or (isinstance(v, str) and v.strip().lower() in ("none", "off")):
        return None
    v = seconds("--write-timeout", v)
    return v if v > 0 else None


def positive(flag: str, v) -> int:
    """A whole number, 1 or more (InvalidParameterError naming `flag`)."""
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise InvalidParameterError(f"{flag} must be a whole number, 1 or more, got {v!r}")
    return v
