"""``neardup serve``'s start-up: the address listened on, the limit on open files and on
connections, the index and its writer (a process of its own, or a thread), then uvicorn."""

from __future__ import annotations

import os

from neardup.errors import InvalidParameterError, ListenError
from neardup.index import Index
from neardup.service.config import FD_WANTED, ServiceConfig
from neardup.service.worker import WriterProcess
from neardup.service.writer import GroupWriter, open_writer, quiet_gc

__all__ = ["FD_MARGIN", "connection_limit", "raise_fd_limit", "serve"]

#: descriptors kept for the server's own files beyond those open when it starts: a SQLite
#: connection (database, WAL, shared memory) per thread of the read pool (40), a new writer
#: process's socket pair and pipes, the segments a fold adds
FD_MARGIN = 256


def serve(directory: str, config: ServiceConfig | None = None, **kwargs) -> int:
    """Serve the index in `directory` as `config` says (:class:`ServiceConfig`; its defaults
    when None) until the server is stopped (SIGTERM, Ctrl-C); 0.

    ``serve(directory, **kwargs)`` (ServiceConfig's fields as keywords, the form the command
    line used) is taken too: the config is made of them. Both together are refused."""
    if kwargs:
        if config is not None:
            raise InvalidParameterError("serve takes a ServiceConfig or its fields as keywords, not both")
        unknown = sorted(set(kwargs) - set(ServiceConfig.names()))
        if unknown:
            raise TypeError(f"serve() got an unexpected keyword argument {unknown[0]!r}")
        config = ServiceConfig(**kwargs)
    return _run(directory, config if config is not None else ServiceConfig())


def _run(directory: str, config: ServiceConfig) -> int:
    """:func:`serve` with its config made: listen, open, serve, close."""
    import uvicorn

    from neardup.service.app import create_app

    c = config
    # (the limits were checked when the config was made, before anything is opened: a mistyped
    # one is said at once.) The address first: one that is taken or not allowed is said before
    # the index is opened (uvicorn's own bind failure exits with its code 3, which is neardup's
    # "bad record")
    sock = _listen(c.host, c.port)
    raise_fd_limit(c.max_open_files)  # (before the writer process starts: it inherits it)
    if c.init and not os.path.exists(os.path.join(directory, "index.sqlite")):
        Index.create(directory).close()
    open_kw = c.open_kw()
    writes: WriterProcess | GroupWriter
    try:
        if c.writer == "process":
            # it takes the writer lock (a clear error if another process holds it) and loads the index
            writes = WriterProcess(directory, open_kw, max_chars=c.max_chars)
            try:
                idx = Index.open(directory, threads=c.threads)  # reads only, here
            except BaseException:
                writes.close()
                raise
        else:
            idx, writes = open_writer(directory, open_kw, max_chars=c.max_chars)
    except BaseException:
        sock.close()
        raise
    try:
        # (counted now: the index's files and the writer's socket are open)
        limit = connection_limit()
        if c.max_connections is not None:
            if c.max_connections > limit:
                raise InvalidParameterError(
                    f"--max-connections {c.max_connections:,} is over what the limit on open files allows here "
                    f"({limit:,}: {_fd_limits()[0]:,} open files, less those in use and {FD_MARGIN} kept for the "
                    "index's own): give at most that, or raise --max-open-files (within the hard limit, "
                    "ulimit -Hn)"
                )
            limit = c.max_connections
        app = create_app(
            idx,
            max_body=c.max_body,
            max_batch=c.max_batch,
            writer=writes,
            write_timeout=c.write_timeout,
            health_timeout=c.health_timeout,
            max_chars=c.max_chars,
        )
    except BaseException:
        sock.close()
        writes.close()
        idx.close()
        raise
    quiet_gc()
    print(f"neardup serve: {directory} on http://{c.host}:{c.port}/ (API docs at /docs)", flush=True)
    try:
        # a request still waiting `shutdown_timeout` s into a shutdown is cut off (503: the index
        # stays consistent); past `limit` open connections a request gets uvicorn's 503 at once
        # (uvicorn annotates timeout_graceful_shutdown as int, but only hands it to
        # asyncio.timeout, which takes fractions of a second: the float is passed as given)
        uv_config = uvicorn.Config(
            app,
            host=c.host,
            port=c.port,
            log_level=c.log_level,
            access_log=False,
            timeout_graceful_shutdown=c.shutdown_timeout,  # type: ignore[arg-type]
            limit_concurrency=limit,
        )
        uvicorn.Server(uv_config).run(sockets=[sock])
    finally:
        sock.close()
        writes.close()
        idx.close()
    return 0


def raise_fd_limit(wanted: int = FD_WANTED) -> None:
    """Raise this process's soft limit on open files up to `wanted`, within the hard limit (a
    systemd service starts at 1,024 soft, for select()'s sake; this server polls with epoll);
    never lowered. The writer process started after it inherits it."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, OSError, ValueError):  # not POSIX, or not allowed: the limit stays
        pass


def connection_limit() -> int:
    """uvicorn's ``limit_concurrency`` for this process: its limit on open files, less the ones
    open now (the index, the writer's socket) and FD_MARGIN. A connection holds a descriptor
    from its accept until it closes: past this many open connections a request is answered 503
    at once (uvicorn's own, plain text), rather than the server running out of descriptors
    for new connections and for the index's own files (docs/service.md, "Connections")."""
    soft = _fd_limits()[0]
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError:  # not Linux
        used = 64
    return max(soft - used - FD_MARGIN, soft // 4, 1)


def _fd_limits() -> tuple[int, int | None]:
    """The soft and hard limits on open files (an unlimited soft one counted as FD_WANTED; hard
    None: unlimited)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except ImportError:  # pragma: no cover - not POSIX
        return FD_WANTED, None
    return (FD_WANTED if soft == resource.RLIM_INFINITY else soft, None if hard == resource.RLIM_INFINITY else hard)


def _listen(host: str, port: int):
    """A socket bound to (host, port), listening; :class:`ListenError` if it cannot be."""
    import socket

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as exc:
        raise ListenError(f"cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock
