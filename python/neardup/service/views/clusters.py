"""/v1/clusters: the recent stories with copies, and one story's members."""

from __future__ import annotations

from fastapi import Path as FPath
from fastapi import Query, Request

from neardup.errors import DocumentNotFoundError, IndexCorruptError
from neardup.service.models import CLUSTER_NUMBER, ERR, ClusterCard, ClusterOut
from neardup.service.page import SNIPPET_CUT
from neardup.service.problems import err, unknown_params
from neardup.service.routing import Routes
from neardup.service.state import service_of

__all__ = ["routes"]

routes = Routes()


@routes.get("/v1/clusters", response_model=list[ClusterCard], responses=ERR, summary="Recent stories with copies")
def recent(request: Request, limit: int = Query(24, ge=1, le=500), snippets: bool = True):
    refused = unknown_params(request, ("limit", "snippets"))
    if refused is not None:
        return refused
    idx = service_of(request).index
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


@routes.get("/v1/clusters/{cluster_id}", response_model=ClusterOut, responses=ERR, summary="One story: its members")
def get_cluster(
    request: Request,
    cluster_id: str = FPath(pattern=CLUSTER_NUMBER, description="a cluster number (digits only)"),
    texts: bool = False,
):
    refused = unknown_params(request, ("texts",))
    if refused is not None:
        return refused
    try:
        return service_of(request).index.get_cluster(int(cluster_id), texts=texts)
    except DocumentNotFoundError as exc:
        return err(404, "not_found", str(exc))
