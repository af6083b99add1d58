"""The service's request and answer models (pydantic: they make its OpenAPI schema), and the
checks of an article that the models cannot say (an id's length, the `fields` it may not use)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, field_validator

__all__ = [
    "AddOut",
    "BatchIn",
    "CLUSTER_NUMBER",
    "ClusterCard",
    "ClusterOut",
    "DocumentIn",
    "DocumentOut",
    "ERR",
    "ErrorBody",
    "ErrorOut",
    "MAX_FIELDS_DEPTH",
    "MAX_ID_BYTES",
    "MemberOut",
    "NOT_BLANK",
    "RESERVED_FIELDS",
    "RemovalIn",
    "RemovalOut",
    "VerdictOut",
    "document_problem",
]


# "Has a character that is not white space" as Python's str.strip() sees white space, which is
# how the pipeline's record check decides that a text or an id is empty.
NOT_BLANK = "[^\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
#: A cluster number in a URL: digits only (int() would read "1_0" as 10, " 1" and "+1" as 1).
CLUSTER_NUMBER = "^[0-9]{1,18}$"


class DocumentIn(BaseModel):
    """One article."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "example": {
                "id": "site-a-417",
                "text": "heavy rain is likely over coastal karnataka ...",
                "published_at": "2026-10-27T09:30:00+05:30",
                "source": "site-a",
            }
        },
    )
    id: Annotated[StrictStr, Field(pattern=NOT_BLANK)] | StrictInt = Field(
        description="unique id (a string with a non-space character, or an integer)"
    )
    text: StrictStr = Field(min_length=1, pattern=NOT_BLANK, description="the article body (not blank)")
    title: StrictStr | None = Field(default=None, description="optional headline, kept but not compared")
    published_at: StrictStr | StrictInt | StrictFloat | None = Field(
        default=None,
        description="publish time for the keeper rule: ISO 8601, RFC 2822 or seconds since the epoch; "
        "one that cannot be read is refused (422 bad_document)",
    )
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

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "example": {"older_than": "30d", "limit": 10000},
            # ids, older_than, or both: a request naming neither is refused (422), and says so here
            "anyOf": [
                {"required": ["ids"], "properties": {"ids": {"minItems": 1}}},
                {"required": ["older_than"], "properties": {"older_than": {"not": {"type": "null"}}}},
            ],
        },
    )
    ids: list[Annotated[StrictStr, Field(pattern=NOT_BLANK)] | StrictInt] = Field(
        default_factory=list, description="ids to remove; one not in the index: 404, nothing removed"
    )
    older_than: StrictStr | StrictInt | StrictFloat | None = Field(
        default=None, description="an age ('30d', '12h') or a time (ISO 8601 date or time, seconds since the epoch)"
    )
    limit: StrictInt = Field(
        default=10_000,
        ge=1,
        le=100_000,
        description="at most this many of the older documents in this request, the first "
        "added first; 'more' in the answer says whether others remain",
    )
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
    id: str | int
    status: str = Field(description="'new' (a story of its own) or 'duplicate' (matched an earlier article)")
    cluster: int | None
    keeper: str | int | None
    is_keeper: bool
    alternates: list[str | int]
    closest: str | int | None = Field(description="the closest earlier article, if any")
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
    id: str | int
    published_at: float | None
    source: str | None
    similarity: float | None
    match: str | None
    is_keeper: bool
    fields: dict[str, Any]
    text: str | None = None


class ClusterOut(BaseModel):
    cluster: int
    keeper: str | int | None
    size: int
    created_at: float | None = None
    updated_at: float | None = None
    merged_into: int | None = None
    members: list[MemberOut]


class ClusterCard(BaseModel):
    cluster: int
    size: int
    updated_at: float
    keeper: str | int
    keeper_source: str | None
    keeper_published_at: float | None
    snippet: str | None = None


class DocumentOut(BaseModel):
    id: str | int
    published_at: float | None
    source: str | None
    added_at: float
    cluster: int
    keeper: str | int | None
    is_keeper: bool
    similarity_to_keeper: float | None
    match: str | None
    closest: str | int | None = Field(
        description="the closest earlier article when it was added (its id as it was given, while it is in the index)"
    )
    closest_similarity: float | None
    fields: dict[str, Any]
    title: str | None = None
    text: str | None = None


#: the error answers a route may give, for its OpenAPI schema
ERR = {s: {"model": ErrorOut} for s in (400, 404, 409, 413, 422, 500, 503)}


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


def document_problem(d: DocumentIn) -> tuple[str, str] | None:
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
