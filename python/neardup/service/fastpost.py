"""The hot request, ``POST /v1/documents`` with a valid JSON body, answered without FastAPI's
request machinery.

Why: at 200 single-article POSTs a second most of the front process's CPU (~1.1 ms a request)
went to FastAPI and Starlette (routing, dependency solving, Request objects, telemetry checks),
not to neardup. `FastPost` is a pure ASGI middleware in front of the app that parses and
validates such a request itself, with the same pydantic models, and hands it to the same
function the FastAPI route calls (views/documents.py, `add`): the answer is the same Response object, sent
the same way. Anything it is not sure about (another path, method or query, another content
type or a Content-Encoding, no Content-Length or one over the limit, a body that orjson or the models refuse, or one
that json.loads could read otherwise: see `_parse`) goes to the app untouched, or with the body
it read replayed, and FastAPI answers it as before (its 400 and 422 bodies included). It sits
inside Starlette's ServerErrorMiddleware, so an unexpected exception gets the app's own 500
answer either way.

Measured: 0.367 ms -> 0.158 ms CPU per request in-process (2.3x; benchmarks/bench_fastpost.py:
5,000 single-article requests through the whole ASGI app, a stub writer whose answer is ready).
Being inside FastAPI.__call__ and ServerErrorMiddleware costs ~0.03 ms of that (FastAPI's
telemetry check reads the environment per request); kept, so that telemetry and the 500 of an
unexpected exception stay the app's own. The rest is shared with the route: the event loop's
hand-over of the writer's answer (asyncio.wrap_future), the records, orjson, the Response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from pydantic import TypeAdapter

__all__ = ["FastPost"]

# Nested deeper than this: left to FastAPI. The standard library's json.loads (FastAPI's parser)
# fails near Python's recursion limit, at a depth that depends on the stack it is called from;
# a body nested this deep is not a feed's article anyway.
_DEPTH = 64
# orjson reads an integer beyond 64 bits as a float, json.loads as an int: a float this large
# may have been such an integer, and is left to FastAPI.
_BIG = 2.0**63


class FastPost:
    """Pure ASGI middleware: a valid JSON POST to `path` is validated with `model` and answered by
    ``await handle(body, dry_run)`` (a Response); every other request goes to `app`.
    `limit()` is the body limit in bytes, read per request (BodyLimit in bodylimit.py gives the 413)."""

    def __init__(
        self, app, *, path: str, model: Any, limit: Callable[[], int], handle: Callable[[Any, bool], Awaitable[Any]]
    ) -> None:
        self.app = app
        self.path = path
        self.adapter = TypeAdapter(model)
        self.limit = limit
        self.handle = handle
        self.taken = 0  # requests answered here (tests: the fast path was taken)

    async def __call__(self, scope, receive, send):
        dry_run = self._dry_run(scope)
        if dry_run is None:
            return await self.app(scope, receive, send)
        chunks = []
        more = True
        while more:
            msg = await receive()
            if msg["type"] != "http.request":  # the client went away: nobody to answer
                return
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        body = b"".join(chunks)
        doc = self._parse(body)
        if doc is None:
            return await self.app(scope, replay_once(body, receive), send)
        self.taken += 1
        response = await self.handle(doc, dry_run)
        await response(scope, receive, send)

    def _dry_run(self, scope) -> bool | None:
        """The request's dry_run if it is one to answer here, else None."""
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path or scope.get("root_path"):
            return None
        q = scope["query_string"]
        if q and q != b"dry_run=true" and q != b"dry_run=false":
            return None
        ctype = length = None
        for k, v in scope["headers"]:  # the first of each, as Starlette's Headers.get
            if k == b"content-type" and ctype is None:
                ctype = v
            elif k == b"content-length" and length is None:
                length = v
            elif k == b"content-encoding" and v.strip().lower() not in (b"", b"identity"):
                return None  # the app's 415
        # FastAPI reads the body as JSON for a media type application/json (any parameters:
        # json.loads ignores the charset); bytes.strip() strips less than email's str.strip()
        if ctype is None or ctype.split(b";", 1)[0].strip().lower() != b"application/json":
            return None
        if length is None or not length.isdigit() or int(length) > self.limit():
            return None  # chunked, or BodyLimit's 400 / 413
        return q == b"dry_run=true"

    def _parse(self, body: bytes):
        """The validated body, or None where FastAPI's answer could differ from ours (it then
        parses with json.loads: NaN, Infinity, lone surrogates, a UTF-8 BOM, 1e400 are orjson's
        errors but json's values) or is an error (422: the same models refuse it)."""
        try:
            obj = orjson.loads(body)
            if type(obj) is not dict or not _plain(obj, _DEPTH):
                return None
            # as FastAPI's ModelField.validate calls it
            return self.adapter.validate_python(obj, from_attributes=True)
        except Exception:
            return None


def _plain(x, room: int) -> bool:
    """No container deeper than `room` below `x` and no float of 2**63 or more (see _BIG)."""
    for v in x.values() if type(x) is dict else x:
        t = type(v)
        if t is dict or t is list:
            if room == 0 or not _plain(v, room - 1):
                return False
        elif t is float and not -_BIG < v < _BIG:
            return False
    return True


def replay_once(body: bytes, receive):
    """A receive that gives `body` once (it was read here), then the connection's own."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
