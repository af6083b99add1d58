"""Errors as answers: every error is a JSON body ``{"error": {"status", "code", "message",
"details"}}``. The app's exception handlers (:func:`install`: a request FastAPI could not
validate, Starlette's HTTP errors, a bug's 500), the answers the routes give for a request's
own mistakes (a query parameter it does not take, a body that is not UTF-8 or is compressed, an
article refused), and for a writer's state (:func:`writer_error`)."""

from __future__ import annotations

import json
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import HTTPExceptionHandler

from neardup.errors import (
    IndexCorruptError,
    IndexError_,
    IndexLockedError,
    NeardupError,
    WriterGoneError,
    WriterTimeoutError,
)
from neardup.service.models import CLUSTER_NUMBER

__all__ = ["bad_document", "encoded", "err", "install", "not_utf8", "unknown_params", "writer_error"]


def err(status: int, code: str, message: str, details: Any = None) -> JSONResponse:
    return JSONResponse(
        status_code=status, content={"error": {"status": status, "code": code, "message": message, "details": details}}
    )


def _problem(e: dict) -> str | None:
    """A validation error's message; NOT_BLANK's regular expression is said in words."""
    if e.get("type") == "string_pattern_mismatch":
        if (e.get("ctx") or {}).get("pattern") == CLUSTER_NUMBER:
            return "must be a cluster number (digits only)"
        return "must not be empty or only white space"
    return e.get("msg")


#: The members of a union field as pydantic names them in an error's location (``id`` is a
#: string or an integer, ``published_at`` a string or a number): not the client's business.
_UNION_TAGS = {"constrained-str", "str", "int", "float"}
_UNION_PROBLEMS = {
    "id": "must be a string (not empty or only white space) or an integer",
    "published_at": "must be a string (ISO 8601, RFC 2822, epoch seconds) or a number (epoch seconds)",
}


def _field_loc(loc: tuple) -> tuple:
    """An error's location without a union member's tag at its end."""
    return loc[:-1] if len(loc) > 1 and loc[-1] in _UNION_TAGS and loc[-2] in _UNION_PROBLEMS else loc


def _union_problem(e: dict) -> str | None:
    loc = e.get("loc", ())
    if len(loc) > 1 and loc[-1] in _UNION_TAGS and loc[-2] in _UNION_PROBLEMS:
        if e.get("type") == "string_pattern_mismatch":
            return _problem(e)
        return _UNION_PROBLEMS[loc[-2]]
    return _problem(e)


def unknown_params(request: Request, allowed: tuple[str, ...]) -> JSONResponse | None:
    """422 for a query parameter the route does not take: a misspelt one (``?text=true`` for
    ``texts``, ``dry-run`` for ``dry_run``) was ignored, and the client got what it did not
    ask for without a word."""
    unknown = sorted(k for k in request.query_params.keys() if k not in allowed)
    if not unknown:
        return None
    takes = f"it takes {', '.join(allowed)}" if allowed else "it takes none"
    return err(
        422,
        "invalid_request",
        f"unknown query parameter {unknown[0]!r} ({takes})",
        [{"where": f"query.{k}", "problem": "unknown query parameter"} for k in unknown],
    )


def encoded(request: Request) -> JSONResponse | None:
    """The 415 of a body sent with a Content-Encoding (the service reads bodies uncompressed),
    or None. Said for the header, whatever the body: a gzip header on a plain JSON body was
    inserted (the body parsed), one on a gzipped body refused."""
    enc = request.headers.get("content-encoding", "identity").strip().lower()
    if enc not in ("", "identity"):
        return err(
            415, "unsupported_media_type", f"Content-Encoding {enc!r} is not supported: send the body uncompressed"
        )
    return None


def not_utf8(body: bytes) -> JSONResponse | None:
    """400 invalid_json naming the first byte that is not UTF-8, or a NUL byte (which JSON text
    cannot hold unescaped: UTF-16 or UTF-32 without a byte-order mark, which json.loads reads),
    or None."""
    try:
        body.decode("utf-8")
        at = body.find(b"\x00")
    except UnicodeDecodeError as exc:
        at = exc.start
    if at < 0:
        return None
    return err(400, "invalid_json", f"the body is not UTF-8 text (byte 0x{body[at]:02x} at offset {at})")


async def unreadable_body(request: Request) -> JSONResponse:
    """FastAPI's "There was an error parsing the body" (400), said precisely: a compressed body,
    bytes that are not UTF-8, JSON nested past what the parser can read."""
    refused = encoded(request)
    if refused is not None:
        return refused
    body = await request.body()
    refused = not_utf8(body)
    if refused is not None:
        return refused
    return err(
        400,
        "invalid_json",
        f"the body is not valid JSON: nested too deeply to read, or unreadable ({len(body):,} bytes)",
    )


def bad_document(batch: bool, index: int, field: str | None, reason: str) -> JSONResponse:
    """422 bad_document: the article at `index` of the request (its place in a batch, when the
    request is one) was refused for `field`. Texts go out escaped where they hold a lone
    surrogate (a field's name may be what was wrong)."""
    where = f"documents[{index}]" if batch else "body"
    field = _utf8(field) if field is not None else None
    reason = _utf8(reason)
    return err(
        422,
        "bad_document",
        f"{where}: {field or 'document'}: {reason}",
        {"index": index, "field": field, "reason": reason},
    )


def _utf8(s: str) -> str:
    """`s` with any lone surrogate written as its escape (a JSON answer must be UTF-8)."""
    return s if s.isascii() else s.encode("utf-8", "backslashreplace").decode("utf-8")


def _json_kind(v) -> str:
    """What a JSON value is, for an error message."""
    if isinstance(v, list):
        return f"an array of {len(v)}" if v else "an empty array"
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number", type(None): "null"}.get(
        type(v), type(v).__name__
    )


def writer_error(exc: NeardupError) -> JSONResponse | None:
    """The answer to an error of the writer's that is not the request's own (those are 404, 409,
    422: the callers answer them), or None for one that is a bug (the app's 500, logged).

    Besides its answers' errors, a request can get the error of a writer process that could not
    be started again after the last one died (worker.py, ``WriterProcess._restart``: the index
    as ``Index.open`` finds it): it is locked by another process (which took the lock while no
    writer held it), damaged, gone, or cannot be written. Each is the service's state, not
    the request's: 503 (the next write tries again), 500 for a damaged index."""
    if isinstance(exc, WriterTimeoutError):
        return err(503, "writer_timeout", str(exc))
    if isinstance(exc, WriterGoneError):
        return err(503, "writer_unavailable", str(exc))
    if isinstance(exc, IndexLockedError):
        return err(
            503,
            "index_locked",
            f"index is locked by another process; the writer cannot start until it "
            f"lets go (reads go on; the next write tries again): {exc}",
        )
    if isinstance(exc, IndexCorruptError):
        return err(500, "index_corrupt", str(exc))
    if isinstance(exc, IndexError_):  # not found (removed), closed, read only, its settings refused
        return err(503, "writer_unavailable", f"the writer cannot write the index ({type(exc).__name__}): {exc}")
    return None


def _jsonable(x):
    return json.loads(json.dumps(x, default=str))


async def on_validation(request: Request, exc: RequestValidationError):
    """A request the models refused: 400 (not JSON), 415 (not sent as JSON), 422 (the errors of
    the shape that was meant: one article or a batch)."""
    errs = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errs):
        e = next(e for e in errs if e.get("type") == "json_invalid")
        # (json.loads reads a body opening with FF FE or FE FF as UTF-16, which JSON over
        # HTTP is not (RFC 8259): such a body failed as "Expecting value", its bytes unnamed)
        refused = not_utf8(await request.body())
        if refused is not None:
            return refused
        return err(400, "invalid_json", f"the body is not valid JSON: {e.get('ctx', {}).get('error', e.get('msg'))}")
    # The body is a document or a batch: report the errors of the shape that was meant.
    body = getattr(exc, "body", None)
    if request.url.path == "/v1/documents" and request.method == "POST" and not isinstance(body, dict):
        if isinstance(body, (bytes, bytearray)):  # FastAPI reads a body of another media type as bytes
            ctype = request.headers.get("content-type", "none")
            return err(
                415,
                "unsupported_media_type",
                f"send the body as JSON, with Content-Type: application/json (got {ctype!r})",
            )
        if body is None and not (await request.body()).strip():
            return err(
                400,
                "invalid_json",
                'the body is empty: expected one article {"id", "text", ...} or a batch {"documents": [...]}',
            )
        problem = (
            f'expected a JSON object, got {_json_kind(body)}: one article {{"id", "text", ...}} '
            f'or a batch {{"documents": [...]}}'
        )
        return err(422, "invalid_request", f"body: {problem}", [{"where": "body", "problem": problem}])
    meant = "BatchIn" if isinstance(body, dict) and "documents" in body else "DocumentIn"
    mine = [e for e in errs if len(e.get("loc", ())) > 1 and e["loc"][1] == meant]
    if mine:
        errs = [{**e, "loc": (e["loc"][0],) + tuple(e["loc"][2:])} for e in mine]
    bad = next((e for e in errs if e.get("type") == "string_unicode"), None)
    if bad is not None:  # a lone surrogate ("\ud800") in the text or the id: what _answer says of one elsewhere
        loc = _field_loc(bad.get("loc", ()))
        batch = len(loc) > 3 and loc[1] == "documents"
        return bad_document(batch, loc[2] if batch else 0, str(loc[-1]), "not valid Unicode (lone surrogate)")
    details, seen = [], set()
    for e in errs:
        d = {"where": ".".join(str(p) for p in _field_loc(e.get("loc", ()))), "problem": _union_problem(e)}
        if d["where"] not in seen:  # (each member of a union field reports the same value: the first says it)
            seen.add(d["where"])
            details.append(d)
    details = details[:20]
    first = details[0] if details else {"where": "", "problem": "invalid request"}
    return err(422, "invalid_request", f"{first['where']}: {first['problem']}", _jsonable(details))


async def on_http(request: Request, exc: StarletteHTTPException):
    """Starlette's HTTP errors (404 no route, 405 with its Allow header, a body it could not
    read) as error bodies."""
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        return await unreadable_body(request)
    r = err(exc.status_code, "http_error", str(exc.detail))
    for k, v in (getattr(exc, "headers", None) or {}).items():
        r.headers[k] = v
    if exc.status_code == 405:  # Allow: every method of every route on this path
        from starlette.routing import Match

        allowed = set()
        for route in request.app.routes:
            match, _ = route.matches({**request.scope, "method": "GET"})
            if match != Match.NONE and getattr(route, "methods", None):
                allowed |= set(route.methods)
        r.headers["Allow"] = ", ".join(sorted(allowed))
    return r


async def on_any(request: Request, exc: Exception):  # pragma: no cover - a bug
    return err(500, "internal_error", f"{type(exc).__name__}: {exc}")


def install(app: FastAPI) -> None:
    """The app's exception handlers: each error answered as an error body."""
    # (Starlette types a handler as taking any Exception; each of these is registered for, and
    # called with, its own exception class only)
    app.add_exception_handler(RequestValidationError, cast(HTTPExceptionHandler, on_validation))
    app.add_exception_handler(StarletteHTTPException, cast(HTTPExceptionHandler, on_http))
    app.add_exception_handler(Exception, on_any)
