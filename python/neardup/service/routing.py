"""The service's URLs: a document id in a path (slashes and newlines included), every route's
pattern anchored at the very end of the path, HEAD wherever GET is."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.convertors import Convertor, register_url_convertor
from starlette.routing import Mount, Route, WebSocketRoute

__all__ = ["Routes", "add_head_routes", "anchor_routes"]


class Routes:
    """A resource's routes, declared at module level as with FastAPI's decorators
    (``@routes.get(path, **kw)``) and put on an app by :meth:`register`: each becomes the
    app's own route (``app.add_api_route``), exactly as ``@app.get`` makes it. (Not an
    APIRouter: FastAPI includes one as a single lazy route, where HEAD routes, the anchoring
    below and the 405's Allow header look for each route's methods and pattern.)"""

    def __init__(self) -> None:
        self.routes: list[tuple[str, Callable, list[str], dict[str, Any]]] = []

    def _route(self, method: str, path: str, kw: dict[str, Any]) -> Callable[[Callable], Callable]:
        def declare(endpoint: Callable) -> Callable:
            self.routes.append((path, endpoint, [method], kw))
            return endpoint

        return declare

    def get(self, path: str, **kw: Any) -> Callable[[Callable], Callable]:
        return self._route("GET", path, kw)

    def post(self, path: str, **kw: Any) -> Callable[[Callable], Callable]:
        return self._route("POST", path, kw)

    def delete(self, path: str, **kw: Any) -> Callable[[Callable], Callable]:
        return self._route("DELETE", path, kw)

    def register(self, app: FastAPI) -> None:
        """Add these routes to `app`, in the order they were declared."""
        for path, endpoint, methods, kw in self.routes:
            app.add_api_route(path, endpoint, methods=methods, **kw)


class _IdPath(Convertor):
    """A document id in a URL: the rest of the path, slashes included, not empty (Starlette's
    "path" matches nothing too, which took "POST /v1/documents/" from its redirect). Every
    character, a newline too: with ".+" (no DOTALL) an id holding a newline matched no route,
    and "x%0A" named the document "x" (the route's "$" matched before the final newline; the
    routes now end at "\\Z": anchor_routes)."""

    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("neardup_id", _IdPath())


def anchor_routes(app: FastAPI) -> None:
    """End every route's pattern at the end of the path ("\\Z"), not at Starlette's "$", which
    also matches before a final newline: "/v1/stats%0A" was /v1/stats, "POST /v1/documents%0A"
    an add, "GET /v1/documents/x%0A" the document "x" (not "x\\n")."""
    for route in app.router.routes:
        # (the routes that match a path: Starlette's Host matches the host, not the path)
        if not isinstance(route, (Route, WebSocketRoute, Mount)):
            continue
        rx = route.path_regex
        if rx.pattern.endswith("$") and not rx.pattern.endswith("\\$"):
            route.path_regex = re.compile(rx.pattern[:-1] + r"\Z", rx.flags)


def add_head_routes(app: FastAPI) -> None:
    """HEAD wherever GET is (monitoring checks use it), outside the schema: the same answer's
    headers (the server sends no body)."""
    for route in list(app.routes):
        # (the routes with methods: Starlette's Route, FastAPI's APIRoute)
        if not isinstance(route, Route):
            continue
        if "GET" in (route.methods or ()) and not route.path.startswith(("/docs", "/redoc", "/openapi")):
            assert isinstance(route, APIRoute)  # (every GET route outside the docs' is the app's own)
            app.add_api_route(
                route.path,
                route.endpoint,
                methods=["HEAD"],
                include_in_schema=False,
                response_model=route.response_model,
                response_class=route.response_class,
            )
