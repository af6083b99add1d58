"""What the routes share: one :class:`ServiceState` per app (``app.state.service``), made by
``create_app``; a route reaches it with :func:`service_of`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastapi import Request

from neardup.service.timings import Timings

if TYPE_CHECKING:
    from neardup.index import Index
    from neardup.service.worker import WriterProcess
    from neardup.service.writer import GroupWriter
    from neardup.service.writes import Deadline

__all__ = ["ServiceState", "service_of"]


@dataclass
class ServiceState:
    """The index read here, the writer writes go to, and the limits and counters of the routes.

    `write_timeout`: seconds a write waits for the writer (None: no limit; `deadline` keeps
    it). `health_timeout`: seconds GET /v1/health waits for the writer's ping. `front`: the
    POSTs' time in this process (timings.py; the writer keeps its own)."""

    index: Index
    writer: GroupWriter | WriterProcess
    max_batch: int
    write_timeout: float | None
    health_timeout: float
    deadline: Deadline | None
    started: float
    front: Timings = field(default_factory=Timings)
    #: GET /v1/health's memory between two checks (views/health.py): the writer's ping future
    #: and the asyncio one wrapping it
    waiting_ping: list = field(default_factory=lambda: [None, None])
    #: a silent writer's CPU: (pid, thread id or None) -> [CPU s, time of that sample, time it last grew]
    progress: dict[tuple, list] = field(default_factory=dict)


def service_of(request: Request) -> ServiceState:
    """The :class:`ServiceState` of the app answering `request`."""
    return request.app.state.service
