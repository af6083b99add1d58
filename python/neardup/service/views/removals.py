"""/v1/removals: remove articles by id and/or by age (eviction in bounded steps)."""

from __future__ import annotations

from fastapi import Request

from neardup.errors import InvalidParameterError
from neardup.index.removal import older_than_seconds
from neardup.service.models import ERR, RemovalIn, RemovalOut
from neardup.service.problems import err, unknown_params
from neardup.service.routing import Routes
from neardup.service.state import service_of
from neardup.service.writes import removed

__all__ = ["routes"]

routes = Routes()


@routes.post(
    "/v1/removals",
    response_model=RemovalOut,
    responses=ERR,
    summary="Remove articles by id and/or by age (eviction in bounded steps)",
)
async def post_removals(request: Request, body: RemovalIn):
    refused = unknown_params(request, ())
    if refused is not None:
        return refused
    if not body.ids and body.older_than is None:
        return err(
            422,
            "invalid_request",
            "give ids, older_than, or both",
            [{"where": "body", "problem": "neither ids nor older_than"}],
        )
    st = service_of(request)
    if len(body.ids) > st.max_batch:
        return err(
            413,
            "batch_too_large",
            f"{len(body.ids):,} ids in one request, over the limit of {st.max_batch:,} (neardup serve --max-batch)",
        )
    try:
        older_than_seconds(body.older_than)  # refused here, before the writer sees it
    except InvalidParameterError as exc:
        return err(422, "invalid_request", str(exc), [{"where": "body.older_than", "problem": str(exc)}])
    return await removed(
        st.writer.remove_many(list(body.ids), body.older_than, body.limit, body.scrub),
        st.deadline,
        "; nothing was removed",
    )
