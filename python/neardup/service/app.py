"""``neardup serve``: the index over HTTP (FastAPI on uvicorn), and a web page for a person.

Writes (POST, DELETE) go to one writer: a process of its own (worker.py, the default of
``neardup serve``) or a thread of this one (writer.py; ``create_app`` on an open index). The
writer groups concurrent POSTs into one commit. Reads (GET) run here on their own SQLite
connections (WAL), so they are answered while a batch is being added. Every error is a JSON
body ``{"error": {"status", "code", "message", ...}}``.
"""
from __future__ import annotations

import asyncio
import math

import orjson
from contextlib import asynccontextmanager
import os
import time
from typing import Annotated, Any, Union

from fastapi import FastAPI, Query, Request
from fastapi import Path as FPath
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, field_validator
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException as StarletteHTTPException

from neardup.errors import InvalidParameterError, ListenError, NeardupError
from neardup.index import Index
from neardup.errors import (
    DocumentNotFoundError,
    DuplicateIdError,
    IndexCorruptError,
    IndexError_,
    IndexLockedError,
    ScrubIncompleteError,
)
from neardup.errors import RecordError
from neardup.io.records import parse_time
from neardup.index.removal import older_than_seconds
from neardup.service.fastpost import FastPost, replay_once
from neardup.service.hostcpu import host_cpu, process_cpu, process_state
from neardup.service.page import SNIPPET_CUT
from neardup.service.timings import Timings
from neardup.errors import WriterGoneError, WriterTimeoutError
from neardup.service.worker import WriterProcess
from neardup.service.writer import FIELDS, GroupWriter, open_writer, quiet_gc

__all__ = ["create_app", "serve"]


# ---------------------------------------------------------------------------- models
# "Has a character that is not white space" as Python's str.strip() sees white space, which is
# how the pipeline's record check decides that a text or an id is empty.
NOT_BLANK = "[^\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
#: A cluster number in a URL: digits only (int() would read "1_0" as 10, " 1" and "+1" as 1).
CLUSTER_NUMBER = "^[0-9]{1,18}$"


class DocumentIn(BaseModel):
    """One article."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "example": {"id": "site-a-417", "text": "heavy rain is likely over coastal karnataka ...",
                    "published_at": "2026-10-27T09:30:00+05:30", "source": "site-a"}})
    id: Union[Annotated[StrictStr, Field(pattern=NOT_BLANK)], StrictInt] = Field(
        description="unique id (a string with a non-space character, or an integer)")
    text: StrictStr = Field(min_length=1, pattern=NOT_BLANK, description="the article body (not blank)")
    title: StrictStr | None = Field(default=None, description="optional headline, kept but not compared")
    published_at: Union[StrictStr, StrictInt, StrictFloat, None] = Field(
        default=None, description="publish time for the keeper rule: ISO 8601, RFC 2822 or seconds since the epoch; "
                                  "one that cannot be read is refused (422 bad_document)")
    source: StrictStr | None = Field(default=None, description="publisher (keeper rule: preferred sources)")
    fields: dict[str, Any] | None = Field(default=None, description="anything else to keep with the article")

    @field_validator("id", mode="before")
    @classmethod
    def _integral_number(cls, v):
        """JSON Schema's "integer" is any number with no fraction (600.0 included): such an id is
        the integer 600, as the schema promises. A fraction (600.5) stays a float and is refused."""
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v


class BatchIn(BaseModel):
    """A batch of articles, added all or nothing."""

    model_config = ConfigDict(extra="forbid")
    documents: list[DocumentIn] = Field(min_length=1)


class RemovalIn(BaseModel):
    """Documents to remove: by id (all or nothing), and/or the first `limit` of those published
    (or, without a time, added) before `older_than`."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "example": {"older_than": "30d", "limit": 10000},
        # ids, older_than, or both: a request naming neither is refused (422), and says so here
        "anyOf": [{"required": ["ids"], "properties": {"ids": {"minItems": 1}}},
                  {"required": ["older_than"], "properties": {"older_than": {"not": {"type": "null"}}}}]})
    ids: list[Union[Annotated[StrictStr, Field(pattern=NOT_BLANK)], StrictInt]] = Field(
        default_factory=list, description="ids to remove; one not in the index: 404, nothing removed")
    older_than: Union[StrictStr, StrictInt, StrictFloat, None] = Field(
        default=None, description="an age ('30d', '12h') or a time (ISO 8601 date or time, seconds since the epoch)")
    limit: StrictInt = Field(default=10_000, ge=1, le=100_000,
                             description="at most this many of the older documents in this request, the first "
                                         "added first; 'more' in the answer says whether others remain")
    scrub: StrictBool = Field(default=True, description="overwrite the removed texts now (else compact does)")

    @field_validator("limit", mode="before")
    @classmethod
    def _integral_limit(cls, v):
        return DocumentIn._integral_number(v)  # (600.0 is the integer 600, as the schema says)

    @field_validator("ids", mode="before")
    @classmethod
    def _integral_ids(cls, v):
        return [DocumentIn._integral_number(x) for x in v] if isinstance(v, list) else v


class RemovalOut(BaseModel):
    removed: int
    more: bool = Field(description="documents older than older_than remain (call again)")


class VerdictOut(BaseModel):
    id: Union[str, int]
    status: str = Field(description="'new' (a story of its own) or 'duplicate' (matched an earlier article)")
    cluster: int | None
    keeper: Union[str, int, None]
    is_keeper: bool
    alternates: list[Union[str, int]]
    closest: Union[str, int, None] = Field(description="the closest earlier article, if any")
    similarity: float | None = Field(description="similarity to the closest earlier article")
    match: str | None = Field(description="'exact' (same normalised text) or 'near'")
    inserted: bool


class AddOut(BaseModel):
    dry_run: bool
    inserted: int
    results: list[VerdictOut]


class ErrorBody(BaseModel):
    status: int
    code: str
    message: str
    details: Any = None


class ErrorOut(BaseModel):
    error: ErrorBody


class MemberOut(BaseModel):
    id: Union[str, int]
    published_at: float | None
    source: str | None
    similarity: float | None
    match: str | None
    is_keeper: bool
    fields: dict[str, Any]
    text: str | None = None


class ClusterOut(BaseModel):
    cluster: int
    keeper: Union[str, int, None]
    size: int
    created_at: float | None = None
    updated_at: float | None = None
    merged_into: int | None = None
    members: list[MemberOut]


class ClusterCard(BaseModel):
    cluster: int
    size: int
    updated_at: float
    keeper: Union[str, int]
    keeper_source: str | None
    keeper_published_at: float | None
    snippet: str | None = None


class DocumentOut(BaseModel):
    id: Union[str, int]
    published_at: float | None
    source: str | None
    added_at: float
    cluster: int
    keeper: Union[str, int, None]
    is_keeper: bool
    similarity_to_keeper: float | None
    match: str | None
    closest: Union[str, int, None] = Field(description="the closest earlier article when it was added (its id as "
                                                       "it was given, while it is in the index)")
    closest_similarity: float | None
    fields: dict[str, Any]
    title: str | None = None
    text: str | None = None


ERR = {s: {"model": ErrorOut} for s in (400, 404, 409, 413, 422, 500, 503)}


def _err(status: int, code: str, message: str, details: Any = None) -> JSONResponse:
    return JSONResponse(status_code=status,
                        content={"error": {"status": status, "code": code, "message": message, "details": details}})


def _problem(e: dict) -> str:
    """A validation error's message; NOT_BLANK's regular expression is said in words."""
    if e.get("type") == "string_pattern_mismatch":
        if (e.get("ctx") or {}).get("pattern") == CLUSTER_NUMBER:
            return "must be a cluster number (digits only)"
        return "must not be empty or only white space"
    return e.get("msg")


#: The members of a union field as pydantic names them in an error's location (``id`` is a
#: string or an integer, ``published_at`` a string or a number): not the client's business.
_UNION_TAGS = {"constrained-str", "str", "int", "float"}
_UNION_PROBLEMS = {"id": "must be a string (not empty or only white space) or an integer",
                   "published_at": "must be a string (ISO 8601, RFC 2822, epoch seconds) or a number (epoch seconds)"}


def _field_loc(loc: tuple) -> tuple:
    """An error's location without a union member's tag at its end."""
    return loc[:-1] if len(loc) > 1 and loc[-1] in _UNION_TAGS and loc[-2] in _UNION_PROBLEMS else loc


def _union_problem(e: dict) -> str:
    loc = e.get("loc", ())
    if len(loc) > 1 and loc[-1] in _UNION_TAGS and loc[-2] in _UNION_PROBLEMS:
        if e.get("type") == "string_pattern_mismatch":
            return _problem(e)
        return _UNION_PROBLEMS[loc[-2]]
    return _problem(e)


def _unknown_params(request: Request, allowed: tuple[str, ...]) -> JSONResponse | None:
    """422 for a query parameter the route does not take: a misspelt one (``?text=true`` for
    ``texts``, ``dry-run`` for ``dry_run``) was ignored, and the client got what it did not
    ask for without a word."""
    unknown = sorted(k for k in request.query_params.keys() if k not in allowed)
    if not unknown:
        return None
    takes = f"it takes {', '.join(allowed)}" if allowed else "it takes none"
    return _err(422, "invalid_request", f"unknown query parameter {unknown[0]!r} ({takes})",
                [{"where": f"query.{k}", "problem": "unknown query parameter"} for k in unknown])


def _encoded(request: Request) -> JSONResponse | None:
    """The 415 of a body sent with a Content-Encoding (the service reads bodies uncompressed),
    or None. Said for the header, whatever the body: a gzip header on a plain JSON body was
    inserted (the body parsed), one on a gzipped body refused."""
    enc = request.headers.get("content-encoding", "identity").strip().lower()
    if enc not in ("", "identity"):
        return _err(415, "unsupported_media_type", f"Content-Encoding {enc!r} is not supported: send the body "
                    "uncompressed")
    return None


def _not_utf8(body: bytes) -> JSONResponse | None:
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
    return _err(400, "invalid_json", f"the body is not UTF-8 text (byte 0x{body[at]:02x} at offset {at})")


async def _unreadable_body(request: Request) -> JSONResponse:
    """FastAPI's "There was an error parsing the body" (400), said precisely: a compressed body,
    bytes that are not UTF-8, JSON nested past what the parser can read."""
    refused = _encoded(request)
    if refused is not None:
        return refused
    body = await request.body()
    not_utf8 = _not_utf8(body)
    if not_utf8 is not None:
        return not_utf8
    return _err(400, "invalid_json", f"the body is not valid JSON: nested too deeply to read, or unreadable "
                f"({len(body):,} bytes)")


def _bad_document(batch: bool, index: int, field: str | None, reason: str) -> JSONResponse:
    """422 bad_document: the article at `index` of the request (its place in a batch, when the
    request is one) was refused for `field`. Texts go out escaped where they hold a lone
    surrogate (a field's name may be what was wrong)."""
    where = f"documents[{index}]" if batch else "body"
    field = _utf8(field) if field is not None else None
    reason = _utf8(reason)
    return _err(422, "bad_document", f"{where}: {field or 'document'}: {reason}",
                {"index": index, "field": field, "reason": reason})


def _utf8(s: str) -> str:
    """`s` with any lone surrogate written as its escape (a JSON answer must be UTF-8)."""
    return s if s.isascii() else s.encode("utf-8", "backslashreplace").decode("utf-8")


def _json_kind(v) -> str:
    """What a JSON value is, for an error message."""
    if isinstance(v, list):
        return f"an array of {len(v)}" if v else "an empty array"
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number", type(None): "null"}.get(
        type(v), type(v).__name__)


def _finite(x):
    return None if isinstance(x, float) and not math.isfinite(x) else x


#: An id's bytes (UTF-8) at most: GET and DELETE name it in the URL, percent-encoded (up to three
#: times longer), and the HTTP parser refuses a request line past a few tens of KB.
MAX_ID_BYTES = 4096
#: `fields` nested at most this deep (objects and arrays): a value is kept as JSON, read back by
#: GET and the page; a deeper one failed there (and past ~480 levels on its way to the writer).
MAX_FIELDS_DEPTH = 64
#: What `fields` must not name: the article's own fields, given at the top level (a `source` in
#: `fields` was taken as the source, a `published_at` there escaped the time check, an `id` or
#: a `text` there was dropped without a word).
RESERVED_FIELDS = ("id", "text", "title", "published_at", "source")


def _depth(v, room: int) -> bool:
    """`v` has no container more than `room` levels below it."""
    if isinstance(v, dict):
        v = v.values()
    elif not isinstance(v, list):
        return True
    return room > 0 and all(_depth(x, room - 1) for x in v)


def _document_problem(d: "DocumentIn") -> tuple[str, str] | None:
    """(field, reason) for what the models cannot say of an article, or None."""
    if len(d.id.encode("utf-8", "surrogatepass") if isinstance(d.id, str) else b"") > MAX_ID_BYTES:
        return "id", f"an id of more than {MAX_ID_BYTES:,} bytes (UTF-8) cannot be named in a URL (GET, DELETE)"
    if d.fields:
        for k in RESERVED_FIELDS:
            if k in d.fields:
                return f"fields.{k}", f"'{k}' is a field of the article itself: give it at the top level, not in fields"
        if not _depth(d.fields, MAX_FIELDS_DEPTH):
            return "fields", f"nested deeper than {MAX_FIELDS_DEPTH} levels"
    return None


class _IdPath(Convertor):
    """A document id in a URL: the rest of the path, slashes included, not empty (Starlette's
    "path" matches nothing too, which took "POST /v1/documents/" from its redirect). Every
    character, a newline too: with ".+" (no DOTALL) an id holding a newline matched no route,
    and "x%0A" named the document "x" (the route's "$" matched before the final newline; the
    routes now end at "\\Z": _anchor_routes)."""

    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("neardup_id", _IdPath())


def _anchor_routes(app: FastAPI) -> None:
    """End every route's pattern at the end of the path ("\\Z"), not at Starlette's "$", which
    also matches before a final newline: "/v1/stats%0A" was /v1/stats, "POST /v1/documents%0A"
    an add, "GET /v1/documents/x%0A" the document "x" (not "x\\n")."""
    import re

    for route in app.router.routes:
        rx = getattr(route, "path_regex", None)
        if rx is not None and rx.pattern.endswith("$") and not rx.pattern.endswith("\\$"):
            route.path_regex = re.compile(rx.pattern[:-1] + r"\Z", rx.flags)


# ---------------------------------------------------------------------------- app
#: seconds a write (POST, DELETE) waits for the writer's answer before it is answered 503
#: writer_timeout, its outcome unknown (``neardup serve --write-timeout``; None: no limit).
#: Without a limit a POST to a stopped or hung writer process waited forever, holding its
#: connection and its client. A batch of 10,000 articles takes seconds, not a minute.
WRITE_TIMEOUT = 60.0
#: seconds GET /v1/health waits for the writer's answer to its ping (``neardup serve
#: --health-timeout``); then it answers 503, unless the writer (process or thread) is busy (BUSY_STEP, STALL_GRACE)
PING_TIMEOUT = 2.0
#: a writer process that has not answered the ping is busy (a long group: a batch of 10,000
#: articles on a loaded host), not stopped or hung, while its CPU time goes on growing: by
#: BUSY_STEP s of CPU within STALL_GRACE s. Health then answers 200 (the writer "busy") until it
#: has not answered for --write-timeout seconds. A stopped or deadlocked writer uses no CPU; a
#: working one under I/O pressure can sleep in the kernel's dirty-page throttling for a moment
#: (measured: 0.5 s with 0.7% of a core, mid-group, four other processes writing): a grace of
#: seconds, not one window, tells the two apart.
BUSY_STEP = 0.02
STALL_GRACE = 5.0
#: the first look at a silent writer's CPU waits this long for a second sample (the CPU time
#: is counted in clock ticks of 10 ms)
BUSY_WINDOW = 0.5


def create_app(index: Index | str, *, max_body: int = 10_000_000, max_batch: int = 10_000,
               writer: GroupWriter | WriterProcess | None = None,
               write_timeout: float | None = WRITE_TIMEOUT, health_timeout: float = PING_TIMEOUT) -> FastAPI:
    """The FastAPI application over `index` (an open :class:`Index` or a directory; a directory is
    opened with background folds of level 0, as ``neardup serve`` does). Writes go to `writer`:
    by default a :class:`GroupWriter` thread on `index`; ``neardup serve`` passes a
    :class:`WriterProcess` on the same directory (then `index` is only read here).
    `write_timeout`: seconds a write waits for the writer's answer (None: no limit); set here,
    for the app's life (app.state.write_timeout shows it). `health_timeout`: seconds GET
    /v1/health waits for the writer's answer to its ping."""
    write_timeout = _write_timeout(write_timeout)
    health_timeout = _health_timeout(health_timeout)
    idx = index if isinstance(index, Index) else Index.open(index, background_fold=True)
    writer = writer if writer is not None else GroupWriter(idx, FIELDS)
    started = time.time()
    front = Timings()  # the POSTs' time in this process (timings.py); the writer keeps its own
    @asynccontextmanager
    async def lifespan(_app):
        yield
        writer.close()
        if not isinstance(index, Index):  # opened here: closed here
            idx.close()

    app = FastAPI(title="neardup", version="1", lifespan=lifespan, description=(
        "Near-duplicate detection for a news feed: post articles, get a verdict for each "
        "(new story or duplicate, its cluster, keeper and alternates); browse the stories at /."))
    app.state.index = idx
    app.state.writer = writer
    app.state.max_body = max_body
    app.state.write_timeout = write_timeout
    deadline = _Deadline(write_timeout) if write_timeout is not None else None  # (_written)

    app.add_middleware(BodyLimit, limit=lambda: app.state.max_body)
    # added last: in front of BodyLimit (still inside Starlette's ServerErrorMiddleware, so the
    # 500 of on_any below answers an unexpected exception here too)
    app.add_middleware(FastPost, path="/v1/documents", model=Union[BatchIn, DocumentIn],
                       limit=lambda: app.state.max_body,
                       handle=lambda body, dry_run: _add(writer, max_batch, body, dry_run, front, deadline))

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError):
        errs = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errs):
            e = next(e for e in errs if e.get("type") == "json_invalid")
            # (json.loads reads a body opening with FF FE or FE FF as UTF-16, which JSON over
            # HTTP is not (RFC 8259): such a body failed as "Expecting value", its bytes unnamed)
            not_utf8 = _not_utf8(await request.body())
            if not_utf8 is not None:
                return not_utf8
            return _err(400, "invalid_json", f"the body is not valid JSON: {e.get('ctx', {}).get('error', e.get('msg'))}")
        # The body is a document or a batch: report the errors of the shape that was meant.
        body = getattr(exc, "body", None)
        if request.url.path == "/v1/documents" and request.method == "POST" and not isinstance(body, dict):
            if isinstance(body, (bytes, bytearray)):  # FastAPI reads a body of another media type as bytes
                ctype = request.headers.get("content-type", "none")
                return _err(415, "unsupported_media_type", f"send the body as JSON, with Content-Type: "
                            f"application/json (got {ctype!r})")
            if body is None and not (await request.body()).strip():
                return _err(400, "invalid_json", "the body is empty: expected one article {\"id\", \"text\", ...} "
                            "or a batch {\"documents\": [...]}")
            problem = (f"expected a JSON object, got {_json_kind(body)}: one article {{\"id\", \"text\", ...}} "
                       f"or a batch {{\"documents\": [...]}}")
            return _err(422, "invalid_request", f"body: {problem}", [{"where": "body", "problem": problem}])
        meant = "BatchIn" if isinstance(body, dict) and "documents" in body else "DocumentIn"
        mine = [e for e in errs if len(e.get("loc", ())) > 1 and e["loc"][1] == meant]
        if mine:
            errs = [{**e, "loc": (e["loc"][0],) + tuple(e["loc"][2:])} for e in mine]
        bad = next((e for e in errs if e.get("type") == "string_unicode"), None)
        if bad is not None:  # a lone surrogate ("\ud800") in the text or the id: what _answer says of one elsewhere
            loc = _field_loc(bad.get("loc", ()))
            batch = len(loc) > 3 and loc[1] == "documents"
            return _bad_document(batch, loc[2] if batch else 0, str(loc[-1]), "not valid Unicode (lone surrogate)")
        details, seen = [], set()
        for e in errs:
            d = {"where": ".".join(str(p) for p in _field_loc(e.get("loc", ()))), "problem": _union_problem(e)}
            if d["where"] not in seen:  # (each member of a union field reports the same value: the first says it)
                seen.add(d["where"])
                details.append(d)
        details = details[:20]
        first = details[0] if details else {"where": "", "problem": "invalid request"}
        return _err(422, "invalid_request", f"{first['where']}: {first['problem']}", _jsonable(details))

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            return await _unreadable_body(request)
        r = _err(exc.status_code, "http_error", str(exc.detail))
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

    @app.exception_handler(Exception)
    async def on_any(request: Request, exc: Exception):  # pragma: no cover - a bug
        return _err(500, "internal_error", f"{type(exc).__name__}: {exc}")

    @app.post("/v1/documents", response_model=AddOut, responses=ERR,
              summary="Check one article or a batch against the index, and add them")
    async def post_documents(request: Request, body: Union[BatchIn, DocumentIn],
                             dry_run: bool = Query(False, description="only check; insert nothing")):
        # a misspelt dry_run (dry-run, dryrun, DRY_RUN) or two of them would insert for real
        # where the client meant a check: refused, not ignored
        refused = _encoded(request)
        if refused is not None:
            return refused
        # (here only bodies the fast path left to FastAPI: json.loads takes UTF-16 and UTF-32
        # with their byte-order marks, which JSON over HTTP is not; such a body was added)
        refused = _not_utf8(await request.body())
        if refused is not None:
            return refused
        params = request.query_params
        refused = _unknown_params(request, ("dry_run",))
        if refused is not None:
            return refused
        if len(params.getlist("dry_run")) > 1:
            return _err(422, "invalid_request", "dry_run is given more than once",
                        [{"where": "query.dry_run", "problem": "given more than once"}])
        return await _add(writer, max_batch, body, dry_run, front, deadline)

    # an id may hold a slash ("site/a/1"), sent percent-encoded or not (_IdPath)
    @app.get("/v1/documents/{doc_id:neardup_id}", response_model=DocumentOut, responses=ERR, summary="One article")
    def get_document(request: Request, doc_id: str):
        refused = _unknown_params(request, ())
        if refused is not None:
            return refused
        try:
            d = idx.get_document(doc_id)
        except DocumentNotFoundError as exc:
            return _err(404, "not_found", str(exc))
        d["published_at"] = _finite(d["published_at"])
        if d.get("title") is None and isinstance(d["fields"].get("title"), str):
            d["title"] = d["fields"]["title"]
        if d["closest"] is not None:  # as the POST's verdict gave it: an integer id as a number
            d["closest"] = idx.typed_ids([d["closest"]]).get(d["closest"], d["closest"])
        if d["closest_similarity"] is not None:
            d["closest_similarity"] = round(d["closest_similarity"], 6)
        return d

    @app.delete("/v1/documents/{doc_id:neardup_id}", responses=ERR, summary="Remove an article (its cluster may split)")
    async def delete_document(request: Request, doc_id: str) -> dict:
        refused = _unknown_params(request, ())
        if refused is not None:
            return refused
        typed = idx.typed_ids([doc_id]).get(doc_id, doc_id)  # (the id as it was given, for the answer)
        n = await _removed(writer.remove(doc_id), deadline)
        return n if isinstance(n, JSONResponse) else {"removed": n, "id": typed}

    @app.post("/v1/removals", response_model=RemovalOut, responses=ERR,
              summary="Remove articles by id and/or by age (eviction in bounded steps)")
    async def post_removals(request: Request, body: RemovalIn):
        refused = _unknown_params(request, ())
        if refused is not None:
            return refused
        if not body.ids and body.older_than is None:
            return _err(422, "invalid_request", "give ids, older_than, or both",
                        [{"where": "body", "problem": "neither ids nor older_than"}])
        if len(body.ids) > max_batch:
            return _err(413, "batch_too_large", f"{len(body.ids):,} ids in one request, over the limit of "
                        f"{max_batch:,} (neardup serve --max-batch)")
        try:
            older_than_seconds(body.older_than)  # refused here, before the writer sees it
        except InvalidParameterError as exc:
            return _err(422, "invalid_request", str(exc), [{"where": "body.older_than", "problem": str(exc)}])
        return await _removed(writer.remove_many(list(body.ids), body.older_than, body.limit, body.scrub),
                              deadline, "; nothing was removed")

    @app.get("/v1/clusters", response_model=list[ClusterCard], responses=ERR, summary="Recent stories with copies")
    def recent(request: Request, limit: int = Query(24, ge=1, le=500), snippets: bool = True):
        refused = _unknown_params(request, ("limit", "snippets"))
        if refused is not None:
            return refused
        cards = idx.recent_clusters(limit=limit)
        if snippets and idx.config.store_text:
            for c in cards:
                try:
                    t = idx.get_document(c["keeper"])
                    # the service keeps a POST's title among the article's fields (FIELDS:
                    # not compared), where get_document finds it too
                    title = t.get("title") or (t.get("fields") or {}).get("title")
                    txt = (title + " — " if isinstance(title, str) and title else "") + t.get("text", "")
                    c["snippet"] = txt[:SNIPPET_CUT]  # (the page cuts again on a grapheme: page.py)
                except (DocumentNotFoundError, IndexCorruptError):
                    c["snippet"] = None
        return cards

    @app.get("/v1/clusters/{cluster_id}", response_model=ClusterOut, responses=ERR, summary="One story: its members")
    def get_cluster(request: Request, cluster_id: str = FPath(pattern=CLUSTER_NUMBER, description="a cluster number (digits only)"),
                    texts: bool = False):
        refused = _unknown_params(request, ("texts",))
        if refused is not None:
            return refused
        try:
            return idx.get_cluster(int(cluster_id), texts=texts)
        except DocumentNotFoundError as exc:
            return _err(404, "not_found", str(exc))

    @app.get("/v1/stats", responses=ERR, summary="Counts, sizes and settings")
    def stats() -> dict:
        out = idx.stats()
        out["service"] = _service_stats(writer, front, started)
        return out

    waiting_ping: list = [None, None]  # the writer's ping future and the asyncio one wrapping it
    #: a silent writer's CPU: (pid, thread id or None) -> [CPU s, time of that sample, time it last grew]
    progress: dict[tuple, list] = {}

    async def _working(pid: int, tid: int | None = None) -> tuple[float, float] | None:
        """(share of one core since the last sample, seconds since its CPU time last grew by
        BUSY_STEP) of the writer process `pid` (or of its thread `tid`: the writer thread's,
        whose process is the server's own), which has not answered its ping; None where /proc
        cannot say. The first call of a silence takes two samples BUSY_WINDOW apart."""
        now = time.monotonic()
        p = progress.get((pid, tid))
        if p is None:
            cpu = process_cpu(pid, tid)
            if cpu is None:
                return None
            progress.clear()
            p = progress[(pid, tid)] = [cpu, now, now - 2 * STALL_GRACE]
            await asyncio.sleep(BUSY_WINDOW)
            now = time.monotonic()
        cpu = process_cpu(pid, tid)
        if cpu is None:
            return None
        share = max(0.0, cpu - p[0]) / max(now - p[1], 1e-3)
        if cpu - p[0] >= BUSY_STEP:  # it grew: the next step is counted from here
            p[:] = [cpu, now, now]
        return share, now - p[2]

    @app.get("/v1/health", summary="Liveness", responses={503: {
        "description": "the writer does not answer within the health timeout and is not working (stopped, "
                       "hung), or has been busy with one group for over the write timeout: writes wait "
                       "for it, up to the write timeout"}})
    async def health():
        # a writer process that died (killed, out of memory) is started again by the next write:
        # the service still answers, but says so ("degraded") until then
        proc = isinstance(writer, WriterProcess)
        alive = writer.alive() if proc else True
        w = {"kind": "process" if proc else "thread", "pid": writer.pid if proc else os.getpid(), "alive": alive}
        out = {"status": "ok" if alive else "degraded", "uptime_seconds": round(time.time() - started, 3), "writer": w}
        # alive is not enough: a writer process stopped (kill -STOP) or hung is alive, and every
        # write waited for it. Its main loop answers a ping between two groups; no answer within
        # PING_TIMEOUT is a 503 (the ping's wait is not a write's: it is never cancelled, a
        # late answer is still counted, and one ping waits at a time: worker.py)
        ping = writer.ping() if alive and hasattr(writer, "ping") else None
        if ping is None:
            return out
        fut, since = ping
        if waiting_ping[0] is not fut or waiting_ping[1].get_loop() is not asyncio.get_running_loop():
            # one asyncio future per ping (each health check while it waits awaits the same one,
            # rather than adding a callback of its own to the writer's future)
            waiting_ping[:] = [fut, asyncio.wrap_future(fut)]
        done, _ = await asyncio.wait([waiting_ping[1]], timeout=health_timeout)
        if done and not fut.cancelled() and fut.exception() is None:
            w["answering"] = True
            progress.clear()
            return out
        now = time.time()
        out["uptime_seconds"] = round(now - started, 3)
        w.update(answering=False, not_answering_since=round(since, 3),
                 not_answering_seconds=round(now - since, 3), **writer.backlog())
        state = process_state(writer.pid) if proc else None
        if state is not None:
            w["process_state"] = state
        working = None
        if proc and state not in (None, "stopped", "zombie", "dead"):
            working = await _working(writer.pid)
        elif not proc and writer.lock_holder is not None:
            # the writer thread (or a remove's) holds the lock: its own CPU time, not the
            # process's, which the front's requests make grow too
            working = await _working(os.getpid(), writer.lock_holder)
        if working is not None:
            w["cpu_share"], w["seconds_since_cpu"] = round(working[0], 3), round(min(working[1], 1e9), 3)
        busy = working is not None and working[1] <= STALL_GRACE
        if busy and (write_timeout is None or now - since < write_timeout):
            # working through a long group (its loop answers the ping after it): writes wait
            # for it as usual, so the service is up
            w["busy"] = True
            return out
        out["status"] = "unavailable"
        if state == "stopped":
            how = " (its process is stopped: kill -CONT it)"
        elif working is None:
            how = " (stopped, hung, or busy with one group for that long)"
        elif busy:
            how = f" (busy with one group for over the write timeout; it uses {working[0]:.0%} of a core)"
        else:
            how = f" (hung, or waiting on the disk: its CPU time has not grown for {working[1]:.1f} s)"
        out["error"] = {"status": 503, "code": "writer_not_answering", "details": None, "message": (
            f"the writer {'process' if proc else 'thread'} has not answered for {now - since:.1f} s{how}: "
            f"{w['requests_waiting']} request(s) wait for it; a write waits up to "
            + (f"{write_timeout:g} s (--write-timeout), then answers 503 writer_timeout"
               if write_timeout is not None else "no limit (--write-timeout 0)")
            + "; reads go on")}
        return JSONResponse(status_code=503, content=out)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        from neardup.service.page import PAGE

        return PAGE

    # HEAD wherever GET is (monitoring checks use it), outside the schema: the same answer's
    # headers (the server sends no body)
    for route in list(app.routes):
        if "GET" in (getattr(route, "methods", None) or ()) and not route.path.startswith(("/docs", "/redoc",
                                                                                          "/openapi")):
            app.add_api_route(route.path, route.endpoint, methods=["HEAD"], include_in_schema=False,
                              response_model=route.response_model, response_class=route.response_class)
    _anchor_routes(app)
    return app


async def _add(writer: GroupWriter | WriterProcess, max_batch: int, body: Union[BatchIn, DocumentIn],
               dry_run: bool, timings: Timings, deadline: _Deadline | None = None) -> Response:
    """POST /v1/documents once its body is validated: the FastAPI route and the fast path
    (fastpost.py) both answer with this; its time goes to `timings` ("post", "post_dry_run").
    `deadline`: the write timeout (_written)."""
    with timings.timed("post_dry_run" if dry_run else "post"):
        return await _answer(writer, max_batch, body, dry_run, deadline)


def _service_stats(writer: GroupWriter | WriterProcess, front: Timings, started: float) -> dict:
    """The service's part of GET /v1/stats: the writer's kind, the durability its answers wait
    for, how long the stages took (timings.py): the front's POSTs, and the writer's groups,
    WAL fsyncs and checkpoint rounds (asked of the writer process; absent while none runs), and
    the machine's CPU time by kind (hostcpu.py: the host's steal)."""
    proc = isinstance(writer, WriterProcess)
    sync = writer.open_kw.get("sync", "full") if proc else writer.index.sync
    out = {"uptime_seconds": round(time.time() - started, 3), "writer": "process" if proc else "thread",
           "sync": "full" if sync == "group" else sync, "timings": front.as_dict(), "host_cpu": host_cpu()}
    try:
        # the writer process answers between two groups: during a large batch's add its
        # stages are left out rather than holding this request for seconds
        out["timings"].update(writer.stage_timings().result(timeout=1))
    except Exception:  # noqa: BLE001 - a busy or restarting writer: its stages are left out
        pass
    return out


async def _answer(writer: GroupWriter | WriterProcess, max_batch: int, body: Union[BatchIn, DocumentIn],
                  dry_run: bool, deadline: _Deadline | None = None) -> Response:
    batch = isinstance(body, BatchIn)
    docs = body.documents if batch else [body]
    if len(docs) > max_batch:
        return _err(413, "batch_too_large", f"{len(docs):,} documents in one request, over the limit of "
                    f"{max_batch:,} (neardup serve --max-batch)")
    recs = []
    for i, d in enumerate(docs):
        problem = _document_problem(d)
        if problem is not None:
            return _bad_document(batch, i, *problem)
        r = {"id": d.id, "text": d.text}
        if d.title is not None:
            r["title"] = d.title
        if d.published_at is not None:
            try:
                # a time the keeper rule cannot read is the client's mistake: said now, not kept
                # as a missing time (an add from files keeps the record and warns: docs/index.md)
                parse_time(d.published_at)
            except ValueError as exc:
                return _bad_document(batch, i, "published_at", str(exc))
            r["published_at"] = d.published_at
        if d.source is not None:
            r["source"] = d.source
        if d.fields:
            r.update(d.fields)  # (none of them names a field above: _document_problem)
        recs.append(r)
    try:
        if dry_run:
            vs = await _written(writer.dry_run(recs), deadline, "dry_run")
        else:
            vs = await _written(writer.submit(recs), deadline)  # group commit with the others waiting
    except DuplicateIdError as exc:
        return _err(409, "duplicate_id", str(exc), {"ids": [str(i) for i in exc.ids[:100]]})
    except RecordError as exc:
        return _bad_document(batch, exc.line - 1, exc.field, exc.reason)
    except NeardupError as exc:
        refused = _writer_error(exc)
        if refused is None:
            raise
        return refused
    # the writer process sends dicts already (worker.py); a GroupWriter thread, Verdicts
    results = [v if isinstance(v, dict) else v.as_dict() for v in vs]
    out = {"dry_run": dry_run, "inserted": 0 if dry_run else len(vs), "results": results}
    return _json(out)


#: what a request still waiting for the writer when the server's graceful shutdown ends is told
CUT_OFF = ("the server is shutting down and this request was still waiting for the writer: whether its write "
           "went in is unknown (an add that did answers 409 when retried)")


#: what a write the writer did not answer in time is told, by kind (the 503 writer_timeout)
LATE = {"add": "whether this request's add went in is unknown (the writer may still do it, all or nothing; "
               "an add that went in answers 409 when retried)",
        "dry_run": "a dry run writes nothing: retry it later",
        "remove": "whether the removal went in is unknown (the writer may still do it; a removal that went in "
                  "answers 404 when retried)"}


async def _removed(fut, deadline: _Deadline | None, not_found: str = ""):
    """A removal's answer (DELETE /v1/documents/{id}, POST /v1/removals), durable (--sync full
    too) before it is given; or the error response: 404 for an id not in the index, 507 for
    a removal committed whose texts were not yet overwritten, the writer's 503s."""
    try:
        return await _written(fut, deadline, "remove")
    except DocumentNotFoundError as exc:
        return _err(404, "not_found", str(exc) + not_found)
    except ScrubIncompleteError as exc:  # removed (committed, durable), its text not yet overwritten
        return _err(507, "scrub_incomplete", str(exc))
    except NeardupError as exc:
        refused = _writer_error(exc)
        if refused is None:
            raise
        return refused


async def _written(fut, deadline: _Deadline | None = None, what: str = "add"):
    """The writer's answer to a request (`fut`, a concurrent future), awaited on the event loop,
    until `deadline` (the write timeout: None, no limit), then WriterTimeoutError (_Deadline).

    uvicorn cancels the requests still running when its graceful shutdown times out (a writer
    that is hung or stopped): such a request is answered 503 writer_unavailable here
    (WriterGoneError), not uvicorn's bare 500. Nothing else cancels a request's task."""
    try:
        if deadline is None:
            return await asyncio.wrap_future(fut)
        return await deadline.wait(asyncio.wrap_future(fut), what)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # answered: the cancellation is handled
        raise WriterGoneError(CUT_OFF) from None


class _Deadline:
    """The write timeout of every request waiting for the writer (``--write-timeout``), kept
    by one timer.

    Past it a request is answered 503 writer_timeout (WriterTimeoutError): its wait (the
    asyncio future wrapping the writer's) is cancelled, and asyncio.wrap_future passes that on
    to the writer's future. A writer thread then skips the request if it has not started it; a
    writer process may still do it, whole (a group is one transaction), and its late answer
    finds the future done and is dropped (worker._settle). Nothing is ever half written.

    Why one timer, not asyncio.timeout around each wait: its timer handle cost ~15 us of CPU per
    request (benchmarks/bench_fastpost.py's loop: 0.123 -> 0.146 ms per single-article POST).
    Every wait has the same limit, so the waits in the order they began are in the order of
    their deadlines: a dict (insertion-ordered) of them, and one timer at the oldest one's
    deadline, which cancels what is due and is set again for the next. A request adds and
    removes one dict entry."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.loop = None
        self.waiting: dict = {}  # wrapping future -> its deadline (loop time), oldest first
        self.timer = None

    async def wait(self, af: asyncio.Future, what: str):
        loop = af.get_loop()
        if loop is not self.loop:  # (an app served again on another loop: tests)
            self.loop, self.waiting, self.timer = loop, {}, None
        self.waiting[af] = when = loop.time() + self.timeout
        if self.timer is None:
            self.timer = loop.call_at(when, self._due)
        try:
            return await af
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if af in self.waiting or (task is not None and task.cancelling()):
                raise  # the task's own cancellation (a shutdown's cut-off): _written's
            raise WriterTimeoutError(f"the writer did not answer within {self.timeout:g} s (neardup serve "
                                     f"--write-timeout): {LATE[what]}") from None
        finally:
            self.waiting.pop(af, None)

    def _due(self) -> None:
        self.timer = None
        now = self.loop.time()
        while self.waiting:
            af, when = next(iter(self.waiting.items()))
            if when > now:
                self.timer = self.loop.call_at(when, self._due)
                return
            del self.waiting[af]  # (wait() tells a timeout from a cancellation by this)
            af.cancel()


def _writer_error(exc: NeardupError) -> JSONResponse | None:
    """The answer to an error of the writer's that is not the request's own (those are 404, 409,
    422: the callers answer them), or None for one that is a bug (the app's 500, logged).

    Besides its answers' errors, a request can get the error of a writer process that could not
    be started again after the last one died (worker.py, ``WriterProcess._restart``: the index
    as ``Index.open`` finds it): it is locked by another process (which took the lock while no
    writer held it), damaged, gone, or cannot be written. Each is the service's state, not
    the request's: 503 (the next write tries again), 500 for a damaged index."""
    if isinstance(exc, WriterTimeoutError):
        return _err(503, "writer_timeout", str(exc))
    if isinstance(exc, WriterGoneError):
        return _err(503, "writer_unavailable", str(exc))
    if isinstance(exc, IndexLockedError):
        return _err(503, "index_locked", f"index is locked by another process; the writer cannot start until it "
                    f"lets go (reads go on; the next write tries again): {exc}")
    if isinstance(exc, IndexCorruptError):
        return _err(500, "index_corrupt", str(exc))
    if isinstance(exc, IndexError_):  # not found (removed), closed, read only, its settings refused
        return _err(503, "writer_unavailable", f"the writer cannot write the index ({type(exc).__name__}): {exc}")
    return None


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
                return await _err(400, "bad_content_length", "the Content-Length header is not a number")(scope, receive, send)
            if n > limit:
                return await _err(413, "body_too_large", f"the request body has {n:,} bytes, over the limit of "
                                  f"{limit:,} (neardup serve --max-body)")(scope, receive, send)
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
                return await _err(413, "body_too_large", f"the request body is over the limit of {limit:,} bytes "
                                  "(neardup serve --max-body)")(scope, receive, send)
        return await self.app(scope, replay_once(body, receive), send)


def _json(out: dict) -> Response:
    """The index builds verdicts of AddOut's shape itself: serialised directly (orjson), not
    validated again field by field by FastAPI on the hot path (a measurable share of a
    single-article POST's CPU on this machine)."""
    try:
        body = orjson.dumps(out)
    except TypeError:  # an integer id beyond 64 bits: the standard library handles it
        import json

        body = json.dumps(out).encode()
    return Response(body, media_type="application/json")


def _jsonable(x):
    import json

    return json.loads(json.dumps(x, default=str))


#: seconds a shutdown (SIGTERM, Ctrl-C) waits for the requests under way before it cuts them off
#: (a POST then gets 503 writer_unavailable; a request whose body never came, uvicorn's 500);
#: ``neardup serve --shutdown-timeout``
GRACEFUL_SHUTDOWN = 10
#: descriptors kept for the server's own files beyond those open when it starts: a SQLite
#: connection (database, WAL, shared memory) per thread of the read pool (40), a new writer
#: process's socket pair and pipes, the segments a fold adds
FD_MARGIN = 256
#: the soft limit on open files is raised up to this (within the hard limit) at the start;
#: ``neardup serve --max-open-files``
FD_WANTED = 65536


def serve(directory: str, *, host: str = "127.0.0.1", port: int = 8000, max_body: int = 10_000_000,
          max_batch: int = 10_000, init: bool = False, threads: int | None = None, log_level: str = "warning",
          sync: str = "full", fold: str = "background", l0_max: int | None = None,
          l0_fold_at: int | None = None, merge_max: int | None = None, writer: str = "process",
          shutdown_timeout: float = GRACEFUL_SHUTDOWN, write_timeout: float | None = WRITE_TIMEOUT,
          health_timeout: float = PING_TIMEOUT, max_connections: int | None = None,
          max_open_files: int = FD_WANTED) -> int:
    """`writer`: "process" (default) adds, dry runs and removes in a process of its own
    (worker.py: its own GIL and core); "thread": in a thread of this process.
    `fold`: "background" (default) folds level 0 into a segment in a thread of its own, off the
    requests' path (index/fold.py); "inline" folds it inside the add that fills it, as the CLI's
    adds do (a ~400 ms request every 50,000 articles). `l0_max` / `l0_fold_at` / `merge_max` override the
    index's stored tuning for this process.
    `shutdown_timeout`: seconds a shutdown waits for the requests under way (uvicorn's
    timeout_graceful_shutdown). `write_timeout`: seconds a write waits for the writer (None or
    0: no limit; create_app). `health_timeout`: seconds GET /v1/health waits for the writer's
    answer (create_app). `max_connections`: open connections past which a request gets
    uvicorn's 503 at once (None: as many as the limit on open files allows, connection_limit;
    more than that is refused). `max_open_files`: the soft limit on open files is raised up to
    it, within the hard limit (raise_fd_limit)."""
    import uvicorn

    if fold not in ("background", "inline"):
        raise InvalidParameterError(f"fold must be 'background' or 'inline', got {fold!r}")
    if writer not in ("process", "thread"):
        raise InvalidParameterError(f"writer must be 'process' or 'thread', got {writer!r}")
    # the limits are checked before anything is opened: a mistyped one is said at once
    shutdown_timeout = _seconds("--shutdown-timeout", shutdown_timeout)
    write_timeout = _write_timeout(write_timeout)
    health_timeout = _health_timeout(health_timeout)
    max_open_files = _positive("--max-open-files", max_open_files)
    if max_connections is not None:
        max_connections = _positive("--max-connections", max_connections)
    # the address first: one that is taken or not allowed is said before the index is opened
    # (uvicorn's own bind failure exits with its code 3, which is neardup's "bad record")
    sock = _listen(host, port)
    raise_fd_limit(max_open_files)  # (before the writer process starts: it inherits it)
    if init and not os.path.exists(os.path.join(directory, "index.sqlite")):
        Index.create(directory).close()
    # --sync full: each answer waits for the WAL's fsync, done for every group since the last one
    # by a thread of its own while the writer goes on (sync="group", writer.Acks)
    open_kw = dict(threads=threads, sync="group" if sync == "full" else sync,
                   background_fold=fold == "background", l0_max=l0_max, l0_fold_at=l0_fold_at,
                   merge_max=merge_max)
    try:
        if writer == "process":
            # it takes the writer lock (a clear error if another process holds it) and loads the index
            writes = WriterProcess(directory, open_kw)
            try:
                idx = Index.open(directory, threads=threads)  # reads only, here
            except BaseException:
                writes.close()
                raise
        else:
            idx, writes = open_writer(directory, open_kw)
    except BaseException:
        sock.close()
        raise
    try:
        # (counted now: the index's files and the writer's socket are open)
        limit = connection_limit()
        if max_connections is not None:
            if max_connections > limit:
                raise InvalidParameterError(
                    f"--max-connections {max_connections:,} is over what the limit on open files allows here "
                    f"({limit:,}: {_fd_limits()[0]:,} open files, less those in use and {FD_MARGIN} kept for the "
                    "index's own): give at most that, or raise --max-open-files (within the hard limit, "
                    "ulimit -Hn)")
            limit = max_connections
        app = create_app(idx, max_body=max_body, max_batch=max_batch, writer=writes, write_timeout=write_timeout,
                         health_timeout=health_timeout)
    except BaseException:
        sock.close()
        writes.close()
        idx.close()
        raise
    quiet_gc()
    print(f"neardup serve: {directory} on http://{host}:{port}/ (API docs at /docs)", flush=True)
    try:
        # a request still waiting `shutdown_timeout` s into a shutdown is cut off (503: the index
        # stays consistent); past `limit` open connections a request gets uvicorn's 503 at once
        config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False,
                                timeout_graceful_shutdown=shutdown_timeout, limit_concurrency=limit)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        writes.close()
        idx.close()
    return 0


def _seconds(flag: str, v) -> float:
    """A number of seconds, finite and not negative (InvalidParameterError naming `flag`)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise InvalidParameterError(f"{flag} must be a number of seconds, 0 or more, got {v!r}")
    return float(v)


def _health_timeout(v) -> float:
    """The health timeout: seconds, more than 0."""
    v = _seconds("--health-timeout", v)
    if v == 0:
        raise InvalidParameterError("--health-timeout must be more than 0 seconds")
    return v


def _write_timeout(v) -> float | None:
    """The write timeout: None for no limit (None, 0, "none" as the flag gives it), else seconds."""
    if v is None or (isinstance(v, str) and v.strip().lower() in ("none", "off")):
        return None
    v = _seconds("--write-timeout", v)
    return v if v > 0 else None


def _positive(flag: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise InvalidParameterError(f"{flag} must be a whole number, 1 or more, got {v!r}")
    return v


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
    return (FD_WANTED if soft == resource.RLIM_INFINITY else soft,
            None if hard == resource.RLIM_INFINITY else hard)



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
