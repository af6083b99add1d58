"""A request body's size limit (``neardup serve --max-body``), before anything parses it."""

from __future__ import annotations

from neardup.service.fastpost import replay_once
from neardup.service.problems import err

__all__ = ["BodyLimit"]


class BodyLimit:
    """Pure ASGI middleware: a request body over the limit gets 413 before it is parsed."""

    def __init__(self, app, limit) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        limit = self.limit()
        cl = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if cl is not None:
            try:
                n = int(cl)
            except ValueError:
                return await err(400, "bad_content_length", "the Content-Length header is not a number")(
                    scope, receive, send
                )
            if n > limit:
                return await err(
                    413,
                    "body_too_large",
                    f"the request body has {n:,} bytes, over the limit of {limit:,} (neardup serve --max-body)",
                )(scope, receive, send)
            return await self.app(scope, receive, send)
        # no length given (chunked): read it here, within the limit, then hand it on
        body = b""
        more = True
        while more:
            msg = await receive()
            if msg["type"] != "http.request":
                return
            body += msg.get("body", b"")
            more = msg.get("more_body", False)
            if len(body) > limit:
                return await err(
                    413,
                    "body_too_large",
                    f"the request body is over the limit of {limit:,} bytes (neardup serve --max-body)",
                )(scope, receive, send)
        return await self.app(scope, replay_once(body, receive), send)
