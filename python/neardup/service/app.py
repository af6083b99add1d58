"""``neardup serve``: the index over HTTP (FastAPI on uvicorn), and a web page for a person.

Writes (POST, DELETE) go to one writer: a process of its own (worker.py, the default of
``neardup serve``) or a thread of this one (writer.py; ``create_app`` on an open index). The
writer groups concurrent POSTs into one commit. Reads (GET) run here on their own SQLite
connections (WAL), so they are answered while a batch is being added. Every error is a JSON
body ``{"error": {"status", "code", "message", ...}}``.

The modules: models.py (the requests' and answers' models), problems.py (errors as answers),
views/ (one module per resource: documents, removals, clusters, health and stats, the page),
writes.py (a request's wait for the writer), routing.py and bodylimit.py (URLs, the body's
limit), config.py (:class:`ServiceConfig`), server.py (:func:`serve`: start-up). This one
puts the app together (:func:`create_app`).
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from typing import Union

from fastapi import FastAPI

from neardup.index import Index
from neardup.service import problems, routing
from neardup.service.bodylimit import BodyLimit
from neardup.service.config import (
    DEFAULT_MAX_CHARS,
    PING_TIMEOUT,
    WRITE_TIMEOUT,
    ServiceConfig,
)
from neardup.service.config import (
    health_timeout as checked_health_timeout,
)
from neardup.service.config import (
    write_timeout as checked_write_timeout,
)
from neardup.service.fastpost import FastPost
from neardup.service.models import BatchIn, DocumentIn
from neardup.service.state import ServiceState
from neardup.service.views import ROUTES
from neardup.service.views.documents import add
from neardup.service.views.health import STALL_GRACE  # noqa: F401 - (tests)
from neardup.service.worker import WriterProcess
from neardup.service.writer import FIELDS, GroupWriter
from neardup.service.writes import Deadline

__all__ = ["ServiceConfig", "create_app"]

DESCRIPTION = (
    "Near-duplicate detection for a news feed: post articles, get a verdict for each "
    "(new story or duplicate, its cluster, keeper and alternates); browse the stories at /."
)


def create_app(
    index: Index | str,
    *,
    max_body: int = 10_000_000,
    max_batch: int = 10_000,
    writer: GroupWriter | WriterProcess | None = None,
    write_timeout: float | None = WRITE_TIMEOUT,
    health_timeout: float = PING_TIMEOUT,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> FastAPI:
    """The FastAPI application over `index` (an open :class:`Index` or a directory; a directory is
    opened with background folds of level 0, as ``neardup serve`` does). Writes go to `writer`:
    by default a :class:`GroupWriter` thread on `index` (refusing texts over `max_chars`);
    ``neardup serve`` passes a :class:`WriterProcess` on the same directory (then `index` is
    only read here). `write_timeout`: seconds a write waits for the writer's answer (None: no
    limit); set here, for the app's life (app.state.write_timeout shows it). `health_timeout`:
    seconds GET /v1/health waits for the writer's answer to its ping."""
    write_timeout = checked_write_timeout(write_timeout)
    health_timeout = checked_health_timeout(health_timeout)
    idx = index if isinstance(index, Index) else Index.open(index, background_fold=True)
    writer = writer if writer is not None else GroupWriter(idx, FIELDS, max_chars=max_chars)

    @asynccontextmanager
    async def lifespan(_app):
        yield
        writer.close()
        if not isinstance(index, Index):  # opened here: closed here
            idx.close()

    app = FastAPI(title="neardup", version="1", lifespan=lifespan, description=DESCRIPTION)
    st = ServiceState(
        index=idx,
        writer=writer,
        max_batch=max_batch,
        write_timeout=write_timeout,
        health_timeout=health_timeout,
        started=time.time(),
        deadline=Deadline(write_timeout) if write_timeout is not None else None,
    )
    app.state.service = st
    app.state.index = idx
    app.state.writer = writer
    app.state.max_body = max_body  # (read for each request: tests change it)
    app.state.write_timeout = write_timeout

    app.add_middleware(BodyLimit, limit=lambda: app.state.max_body)
    # added last: in front of BodyLimit (still inside Starlette's ServerErrorMiddleware, so the
    # app's 500 (problems.on_any) answers an unexpected exception here too)
    app.add_middleware(
        FastPost,
        path="/v1/documents",
        model=Union[BatchIn, DocumentIn],  # noqa: UP007 - a runtime value, as the route's body annotation
        limit=lambda: app.state.max_body,
        handle=lambda body, dry_run: add(writer, max_batch, body, dry_run, st.front, st.deadline),
    )
    problems.install(app)
    for routes in ROUTES:
        routes.register(app)
    routing.add_head_routes(app)
    routing.anchor_routes(app)
    return app
