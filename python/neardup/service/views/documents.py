"""/v1/documents: POST (check one article or a batch against the index, and add them; the
fast path, fastpost.py, answers with :func:`add` too), GET and DELETE one article."""

from __future__ import annotations

import math
from typing import Any

import orjson
from fastapi import Query, Request
from fastapi.responses import JSONResponse, Response

from neardup.errors import DocumentNotFoundError, DuplicateIdError, NeardupError, RecordError
from neardup.io.records import parse_time
from neardup.service.models import ERR, AddOut, BatchIn, DocumentIn, DocumentOut, document_problem
from neardup.service.problems import bad_document, encoded, err, not_utf8, unknown_params, writer_error
from neardup.service.routing import Routes
from neardup.service.state import service_of
from neardup.service.timings import Timings
from neardup.service.worker import WriterProcess
from neardup.service.writer import GroupWriter
from neardup.service.writes import Deadline, removed, written

__all__ = ["add", "routes"]

routes = Routes()


@routes.post(
    "/v1/documents",
    response_model=AddOut,
    responses=ERR,
    summary="Check one article or a batch against the index, and add them",
)
async def post_documents(
    request: Request, body: BatchIn | DocumentIn, dry_run: bool = Query(False, description="only check; insert nothing")
):
    # a misspelt dry_run (dry-run, dryrun, DRY_RUN) or two of them would insert for real
    # where the client meant a check: refused, not ignored
    refused = encoded(request)
    if refused is not None:
        return refused
    # (here only bodies the fast path left to FastAPI: json.loads takes UTF-16 and UTF-32
    # with their byte-order marks, which JSON over HTTP is not; such a body was added)
    refused = not_utf8(await request.body())
    if refused is not None:
        return refused
    params = request.query_params
    refused = unknown_params(request, ("dry_run",))
    if refused is not None:
        return refused
    if len(params.getlist("dry_run")) > 1:
        return err(
            422,
            "invalid_request",
            "dry_run is given more than once",
            [{"where": "query.dry_run", "problem": "given more than once"}],
        )
    st = service_of(request)
    return await add(st.writer, st.max_batch, body, dry_run, st.front, st.deadline)


# an id may hold a slash ("site/a/1"), sent percent-encoded or not (routing._IdPath)
@routes.get("/v1/documents/{doc_id:neardup_id}", response_model=DocumentOut, responses=ERR, summary="One article")
def get_document(request: Request, doc_id: str):
    refused = unknown_params(request, ())
    if refused is not None:
        return refused
    idx = service_of(request).index
    try:
        d = idx.get_document(doc_id)
    except DocumentNotFoundError as exc:
        return err(404, "not_found", str(exc))
    d["published_at"] = _finite(d["published_at"])
    if d.get("title") is None and isinstance(d["fields"].get("title"), str):
        d["title"] = d["fields"]["title"]
    if d["closest"] is not None:  # as the POST's verdict gave it: an integer id as a number
        d["closest"] = idx.typed_ids([d["closest"]]).get(d["closest"], d["closest"])
    if d["closest_similarity"] is not None:
        d["closest_similarity"] = round(d["closest_similarity"], 6)
    return d


# (response_model: the answer's schema, a dict; an error is its JSONResponse, as is)
@routes.delete(
    "/v1/documents/{doc_id:neardup_id}",
    response_model=dict,
    responses=ERR,
    summary="Remove an article (its cluster may split)",
)
async def delete_document(request: Request, doc_id: str) -> dict | JSONResponse:
    refused = unknown_params(request, ())
    if refused is not None:
        return refused
    st = service_of(request)
    typed = st.index.typed_ids([doc_id]).get(doc_id, doc_id)  # (the id as it was given, for the answer)
    n = await removed(st.writer.remove(doc_id), st.deadline)
    return n if isinstance(n, JSONResponse) else {"removed": n, "id": typed}


async def add(
    writer: GroupWriter | WriterProcess,
    max_batch: int,
    body: BatchIn | DocumentIn,
    dry_run: bool,
    timings: Timings,
    deadline: Deadline | None = None,
) -> Response:
    """POST /v1/documents once its body is validated: the FastAPI route and the fast path
    (fastpost.py) both answer with this; its time goes to `timings` ("post", "post_dry_run").
    `deadline`: the write timeout (writes.written)."""
    with timings.timed("post_dry_run" if dry_run else "post"):
        return await _answer(writer, max_batch, body, dry_run, deadline)


async def _answer(
    writer: GroupWriter | WriterProcess,
    max_batch: int,
    body: BatchIn | DocumentIn,
    dry_run: bool,
    deadline: Deadline | None = None,
) -> Response:
    batch = isinstance(body, BatchIn)
    docs = body.documents if isinstance(body, BatchIn) else [body]
    if len(docs) > max_batch:
        return err(
            413,
            "batch_too_large",
            f"{len(docs):,} documents in one request, over the limit of {max_batch:,} (neardup serve --max-batch)",
        )
    recs = []
    for i, d in enumerate(docs):
        problem = document_problem(d)
        if problem is not None:
            return bad_document(batch, i, *problem)
        r: dict[str, Any] = {"id": d.id, "text": d.text}
        if d.title is not None:
            r["title"] = d.title
        if d.published_at is not None:
            try:
                # a time the keeper rule cannot read is the client's mistake: said now, not kept
                # as a missing time (an add from files keeps the record and warns: docs/index.md)
                parse_time(d.published_at)
            except ValueError as exc:
                return bad_document(batch, i, "published_at", str(exc))
            r["published_at"] = d.published_at
        if d.source is not None:
            r["source"] = d.source
        if d.fields:
            r.update(d.fields)  # (none of them names a field above: document_problem)
        recs.append(r)
    try:
        if dry_run:
            vs = await written(writer.dry_run(recs), deadline, "dry_run")
        else:
            vs = await written(writer.submit(recs), deadline)  # group commit with the others waiting
    except DuplicateIdError as exc:
        return err(409, "duplicate_id", str(exc), {"ids": [str(i) for i in exc.ids[:100]]})
    except RecordError as exc:
        return bad_document(batch, exc.line - 1, exc.field, exc.reason)
    except NeardupError as exc:
        refused = writer_error(exc)
        if refused is None:
            raise
        return refused
    # the writer process sends dicts already (worker.py); a GroupWriter thread, Verdicts
    results = [v if isinstance(v, dict) else v.as_dict() for v in vs]
    out = {"dry_run": dry_run, "inserted": 0 if dry_run else len(vs), "results": results}
    return _json(out)


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


def _finite(x):
    return None if isinstance(x, float) and not math.isfinite(x) else x
