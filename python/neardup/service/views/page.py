"""/: the web page for a person (page.py holds it), outside the API's schema."""

from __future__ import annotations

from fastapi.responses import HTMLResponse

from neardup.service.routing import Routes

__all__ = ["routes"]

routes = Routes()


@routes.get("/", response_class=HTMLResponse, include_in_schema=False)
def page() -> str:
    from neardup.service.page import PAGE

    return PAGE
