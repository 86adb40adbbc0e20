"""The OpenAPI 3.1 document served at ``/openapi.json`` (protocol.md §3, §6, §7, §8, §10).

Schemas are JSON Schema 2020-12. Request bodies say exactly what the parsers accept (unknown
fields are rejected, so every object has ``additionalProperties: false``). Answers are open: an
answer schema's ``required`` members are exactly those docs/protocol.md names for it (§6.3,
§13; ``tests/project/test_answer_shapes.py`` holds the two equal), its optional ones are what
the reference adds, and a server MAY add more (only the error envelope's top level is closed,
WP-ERR-1). The upload content PUT answers any 2xx, with or without a body. Byte limits of UTF-8
text appear as ``maxLength`` (a necessary bound: a string of at most N bytes has at most N
characters) and in the description. Limits are the defaults of :class:`Limits`; a deployment
publishes its own, possibly smaller, values at ``GET /v1/describe``. Two bodies are raw bytes,
not JSON: the upload content PUT and the blob content GET. Each error answer names its codes:
every code of its status, or just those an operation lists (see :data:`Errors`).
"""

from __future__ import annotations

from typing import Any

from waypost.reference.domain.errors import BY_CODE, ERROR_CLASSES
from waypost.reference.http.openapi_schemas import (
    CURSOR,
    LIMITS,
    OBJECT_ID,
    REQUEST_ID,
    SHA256,
    Schema,
    components,
    enum,
    integer,
    ref,
)
from waypost.reference.service.answers import OPERATIONS

# --- operations -----------------------------------------------------------------------------

Security = list[dict[str, list[str]]]
DATA: Security = [{"bearerAuth": []}]
ADMIN: Security = [{"adminBearer": []}]
PUBLIC: Security = []
REPLAYED = {"Waypost-Replayed": {
    "description": "true when this answer replays the stable result of an earlier request "
                   "with the same request_id; absent otherwise.",
    "schema": {"type": "string", "enum": ["true"]}}}
RETRY_AFTER = {"Retry-After": {"description": "With SUBMISSION_PENDING: seconds to wait.",
                               "schema": {"type": "string"}}}
ETAG = {"ETag": {"description": "The content's SHA-256 as a quoted strong validator.",
                 "required": True, "schema": {"type": "string", "pattern": f'^"{SHA256[1:-1]}"$'}}}
ACCEPT_RANGES = {"Accept-Ranges": {
    "description": "bytes: one byte range of the content may be asked with Range.",
    "schema": {"type": "string", "enum": ["bytes"]}}}
RANGE_PARAMETERS = [
    {"name": "Range", "in": "header", "required": False, "schema": {"type": "string"},
     "description": "One byte range (bytes=FIRST-LAST, bytes=FIRST-, bytes=-SUFFIX): 206 with "
                    "those bytes, or 416 when it starts past the end. A header that is not one "
                    "well-formed bytes range (several ranges included) is ignored: 200."},
    {"name": "If-Range", "in": "header", "required": False, "schema": {"type": "string"},
     "description": "With Range: the ETag the client holds; any other value (a date, a weak "
                    "or other tag) makes the answer the whole content (200)."},
]
RAW = "application/octet-stream"

#: Error answers of an operation: a status stands for every code of that status, a code name
#: for itself (codes of one status are documented together).
Errors = tuple[int | str, ...]


def _error(codes: list[str], write: bool) -> Schema:
    headers = {**(REPLAYED if write else {}),
               **(RETRY_AFTER if write and "SUBMISSION_PENDING" in codes else {})}
    answer: Schema = {"description": " or ".join(codes),
                      "content": {"application/json": {"schema": ref("Error")}}}
    if headers:
        answer["headers"] = headers
    return answer


def _errors(errors: Errors, write: bool) -> dict[str, Schema]:
    codes: dict[int, list[str]] = {}
    for entry in errors:
        if isinstance(entry, int):
            codes.setdefault(entry, []).extend(
                cls.code for cls in ERROR_CLASSES if cls.status == entry)
        else:
            codes.setdefault(BY_CODE[entry].status, []).append(entry)
    return {str(status): _error(names, write) for status, names in codes.items()}


def parameter(name: str, where: str = "path", schema: Schema | None = None,
              description: str = "") -> Schema:
    param: Schema = {"name": name, "in": where, "required": where == "path",
                     "schema": schema or {"type": "string", "pattern": OBJECT_ID}}
    if description:
        param["description"] = description
    return param


def operation(op_id: str, summary: str, security: Security, status: int, result: Schema,
              errors: Errors, body: str | None = None,
              params: list[Schema] | None = None, write: bool = False,
              also_ok: bool = False) -> Schema:
    """One operation: its success answer (and ``200`` too when ``also_ok``), its error
    answers, its body and parameters."""
    success: Schema = {"description": summary,
                       "content": {"application/json": {"schema": result}}}
    if write:
        success["headers"] = REPLAYED
    successes = {str(status): success, **({"200": success} if also_ok else {})}
    op: Schema = {"operationId": op_id, "summary": summary, "security": security,
                  "responses": {**successes, **_errors(errors, write)}}
    if params:
        op["parameters"] = params
    if body is not None:
        op["requestBody"] = {"required": True,
                             "content": {"application/json": {"schema": ref(body)}}}
    return op


def admin_write(op_id: str, summary: str, status: int, result: str, body: str,
                *path: str) -> Schema:
    return operation(op_id, summary, ADMIN, status, ref(result), (400, 401, 404, 409, 413, 503),
                     body, [parameter(name) for name in path], write=True)


def upload(op_id: str, summary: str, errors: Errors, *path: str) -> Schema:
    """A data-plane operation whose body is raw bytes (any length, 0 included), not JSON, and
    whose success is any ``2XX``, with or without a body (WP-UPL-3): no shape is documented."""
    op = operation(op_id, summary, DATA, 200, {}, errors,
                   params=[parameter(name) for name in path])
    op["responses"] = {"2XX": {
        "description": "Any success status, with or without a body: the declared bytes are "
                       "stored (or already were). A body, when present, is JSON and not part "
                       "of the contract (protocol.md WP-UPL-3); the reference answers 200 "
                       "{upload_id, blob_id, state: stored | sealed, size, sha256}."},
        **{status: answer for status, answer in op["responses"].items() if status != "200"}}
    op["requestBody"] = {"required": True, "description": "The raw content bytes.",
                         "content": {RAW: {}}}
    return op


def download(op_id: str, summary: str, errors: Errors, *path: str) -> Schema:
    """A data-plane read answering raw bytes with an ``ETag``, whole (``200``) or one byte
    range of them (``206``, ``416``); errors are still JSON."""
    op = operation(op_id, summary, DATA, 200, {}, errors,
                   params=[*(parameter(name) for name in path), *RANGE_PARAMETERS])
    op["responses"]["200"] = {
        "description": f"{summary} Content-Type is the blob's content_type.",
        "headers": {**ETAG, **ACCEPT_RANGES}, "content": {"*/*": {}}}
    op["responses"]["206"] = {
        "description": "The byte range asked with Range, Content-Type the blob's content_type.",
        "headers": {**ETAG, **ACCEPT_RANGES, "Content-Range": {
            "description": "bytes FIRST-LAST/SIZE: the bytes sent, of the whole size.",
            "required": True,
            "schema": {"type": "string", "pattern": "^bytes [0-9]+-[0-9]+/[0-9]+$"}}},
        "content": {"*/*": {}}}
    op["responses"]["416"] = {
        "description": "The range asked starts at or past the end of the content; no body.",
        "headers": {**ACCEPT_RANGES, "Content-Range": {
            "description": "bytes */SIZE: the whole size.", "required": True,
            "schema": {"type": "string", "pattern": "^bytes \\*/[0-9]+$"}}}}
    return op


def _paths() -> dict[str, dict[str, Schema]]:
    feed_query = [
        parameter("cursor", "query", CURSOR,
                  "Opaque next_cursor of an earlier page; omitted: after the saved checkpoint."),
        parameter("limit", "query", {**integer(1, LIMITS.page_limit), "default": 50}),
        parameter("wait", "query", {**integer(0, LIMITS.wait_seconds), "default": 0},
                  "Long-poll seconds; above 0 needs the event.subscribe scope."),
    ]
    submission = [parameter("operation", schema=enum(OPERATIONS)),
                  parameter("request_id", schema={"type": "string", "pattern": REQUEST_ID})]
    space = "/admin/v1/spaces/{space_id}"
    revision = parameter("revision", schema={"type": "string", "pattern": "^(0|[1-9][0-9]{0,15})$"},
                         description="A published revision, or 0 (the empty state).")
    memory_query = [
        parameter("cursor", "query", CURSOR, "Opaque next_cursor of an earlier page."),
        parameter("limit", "query", {**integer(1, LIMITS.page_limit), "default": 50}),
        parameter("include_tombstones", "query", {**enum(["true", "false"]),
                                                  "default": "false"}),
    ]
    return {
        "/v1/describe": {"get": operation(
            "describe", "Protocol version, limits and capabilities.", PUBLIC, 200,
            ref("Describe"), (400,))},
        "/openapi.json": {"get": operation(
            "openapi", "This document.", PUBLIC, 200, {"type": "object"}, (400,))},
        "/v1/messages": {"post": operation(
            "sendMessage", "message.send: publish a message.", DATA, 201, ref("MessageSent"),
            (400, 401, 403, 404, 409, 413, 422, 503), "MessageSendRequest", write=True)},
        "/v1/messages/{message_id}": {"get": operation(
            "readMessage", "The full message, for producer, recipients or space.observe.", DATA,
            200, ref("Message"), (400, 401, 403, 404, 503), params=[parameter("message_id")])},
        "/v1/feed": {"get": operation(
            "readFeed", "One page of the token's consumer view.", DATA, 200, ref("FeedPage"),
            (400, 401, 403, 409, 503), params=feed_query)},
        "/v1/acks": {"post": operation(
            "acknowledge", "receipt.ack: receipts and a checkpoint, all or nothing.", DATA, 200,
            ref("AckResult"), (400, 401, 403, 404, 409, 413, 503), "AckRequest", write=True)},
        "/v1/submissions/{operation}/{request_id}": {"get": operation(
            "readSubmission", "The recorded state and result of the caller's own key.", DATA,
            200, ref("Submission"), (400, 401, 404, 503), params=submission)},
        "/v1/blobs": {"post": operation(
            "prepareBlob", "blob.prepare: an expiring upload slot for known size and SHA-256.",
            DATA, 201, ref("UploadPrepared"),
            ("INVALID_REQUEST", 401, 403, "IDEMPOTENCY_CONFLICT", "SUBMISSION_PENDING", 413, 503),
            "BlobPrepareRequest", write=True)},
        "/v1/uploads/{upload_id}/content": {"put": upload(
            "putUploadContent", "The content, streamed and verified against the declared size "
            "and SHA-256; create-only (the same bytes again are accepted, never others).",
            ("INVALID_REQUEST", 401, 403, 404, 410, "CONTENT_MISMATCH", 503),
            "upload_id")},
        "/v1/uploads/{upload_id}/commit": {"post": operation(
            "commitUpload", "blob.commit: seal the stored upload into an immutable blob.", DATA,
            200, ref("BlobSealed"),
            ("INVALID_REQUEST", 401, 403, 404, "IDEMPOTENCY_CONFLICT", "NOT_READY",
             "SUBMISSION_PENDING", 410, 413, 503), "RequestOnly", [parameter("upload_id")],
            write=True)},
        "/v1/blobs/{blob_id}": {"get": operation(
            "readBlob", "Blob metadata, for its owner, readers of a message attaching it, or a "
            "blob grant.", DATA, 200, ref("Blob"), ("INVALID_REQUEST", 401, 404, 503),
            params=[parameter("blob_id")])},
        "/v1/blobs/{blob_id}/content": {"get": download(
            "readBlobContent", "The sealed bytes, for whoever may read the blob.",
            ("INVALID_REQUEST", 401, 404, 503), "blob_id")},
        "/v1/collections/{collection_id}/revisions": {"post": operation(
            "publishMemory", "memory.publish: a new revision if expected_revision is the head "
            "(201), the head for an unchanged state (200), else a recorded 409 "
            "REVISION_CONFLICT with current_revision.", DATA, 201, ref("Published"),
            (400, 401, 403, 404, 409, 413, 422, 503), "PublishRequest",
            [parameter("collection_id")], write=True, also_ok=True)},
        "/v1/collections/{collection_id}": {"get": operation(
            "readCollection", "The collection and its head, for tokens with a grant on it.",
            DATA, 200, ref("Collection"), (400, 401, 403, 404, 503),
            params=[parameter("collection_id")])},
        "/v1/collections/{collection_id}/revisions/{revision}": {"get": operation(
            "readRevision", "Metadata of a fixed revision (memory.read and a read grant).",
            DATA, 200, ref("RevisionInfo"), (400, 401, 403, 404, 503),
            params=[parameter("collection_id"), revision])},
        "/v1/collections/{collection_id}/revisions/{revision}/items": {"get": operation(
            "readRevisionItems", "Entries of a fixed revision in item_id order; the cursor is "
            "bound to the revision, the reader and include_tombstones.", DATA, 200,
            ref("RevisionItems"), (400, 401, 403, 404, 503),
            params=[parameter("collection_id"), revision, *memory_query])},
        "/_test/clock": {
            "get": operation("readClock", "Test hook (404 unless --test-hooks): the server "
                             "clock.", ADMIN, 200, ref("Clock"), (401, 404)),
            "post": operation("advanceClock", "Test hook (404 unless --test-hooks): advance the "
                              "server clock.", ADMIN, 200, ref("Clock"),
                              ("INVALID_REQUEST", 401, 404, 413),
                              "ClockAdvanceRequest")},
        "/_test/faults": {
            "get": operation("readFaults", "Test hook (404 unless --test-hooks): the armed "
                             "fault points.", ADMIN, 200, ref("Faults"), (401, 404)),
            "post": operation("armFault", "Test hook (404 unless --test-hooks): arm a fault "
                              "point with an action for the next `times` passes. crash and "
                              "lose_response end the request without an HTTP response.",
                              ADMIN, 200, ref("Faults"), ("INVALID_REQUEST", 401, 404, 413),
                              "ArmFaultRequest"),
            "delete": operation("clearFaults", "Test hook (404 unless --test-hooks): disarm "
                                "every fault point.", ADMIN, 200, ref("Faults"), (401, 404))},
        "/_test/restart": {"post": operation(
            "restart", "Test hook (404 unless --test-hooks): drop in-memory state and reopen "
            "the stores, as a process restart would.", ADMIN, 200, ref("Restarted"),
            ("INVALID_REQUEST", 401, 404, 413), "EmptyRequest")},
        "/admin/v1/spaces": {
            "post": admin_write("createSpace", "A space and its default actor.", 201,
                                "SpaceCreated", "CreateSpaceRequest"),
            "get": operation("listSpaces", "Every space.", ADMIN, 200, ref("SpaceList"),
                             (400, 401, 503))},
        space: {"get": operation("readSpace", "One space with what it holds.", ADMIN, 200,
                                 ref("SpaceDetail"), (400, 401, 404, 503),
                                 params=[parameter("space_id")])},
        f"{space}/actors": {"post": admin_write(
            "createActor", "A new actor.", 201, "ActorCreated", "CreateActorRequest",
            "space_id")},
        f"{space}/actors/{{actor_id}}/disable": {"post": admin_write(
            "disableActor", "Disable an actor; bumps its authority version.", 200,
            "ActorDisabled", "RequestOnly", "space_id", "actor_id")},
        f"{space}/consumers": {"post": admin_write(
            "createConsumer", "A durable reader of one actor.", 201, "ConsumerView",
            "CreateConsumerRequest", "space_id")},
        f"{space}/consumers/{{consumer_id}}/view": {"post": admin_write(
            "changeView", "A new view and filter; bumps view_revision.", 200, "ConsumerView",
            "ChangeViewRequest", "space_id", "consumer_id")},
        f"{space}/collections": {"post": admin_write(
            "createCollection", "A memory collection of a source actor.", 201,
            "CollectionCreated",
            "CreateCollectionRequest", "space_id")},
        f"{space}/tokens": {"post": admin_write(
            "issueToken", "A bearer token; its secret is returned only here.", 201,
            "TokenIssued", "IssueTokenRequest", "space_id")},
        "/admin/v1/tokens/{token_id}/revoke": {"post": admin_write(
            "revokeToken", "Revoke a token (idempotent).", 200, "TokenRevoked", "RequestOnly",
            "token_id")},
        f"{space}/threads/{{thread_id}}/members": {"post": admin_write(
            "addThreadMembers", "Add members to a thread.", 200, "ThreadMembers",
            "AddThreadMembersRequest", "space_id", "thread_id")},
    }


def _body(member: str) -> str:
    return f"$response.body#/{member}"


def _path(name: str) -> str:
    return f"$request.path.{name}"


#: OpenAPI links (what an answer lets a client do next), by operation and success status: link
#: name -> (target operationId, its parameters as runtime expressions or constants).
LINKS: dict[tuple[str, str], dict[str, tuple[str, dict[str, Any]]]] = {
    ("sendMessage", "201"): {
        "ReadMessage": ("readMessage", {"message_id": _body("message_id")}),
        "ReadSubmission": ("readSubmission", {"operation": "message.send",
                                              "request_id": "$request.body#/request_id"})},
    ("prepareBlob", "201"): {
        "PutContent": ("putUploadContent", {"upload_id": _body("upload_id")}),
        "CommitUpload": ("commitUpload", {"upload_id": _body("upload_id")}),
        "ReadBlob": ("readBlob", {"blob_id": _body("blob_id")})},
    ("putUploadContent", "2XX"): {
        "CommitUpload": ("commitUpload", {"upload_id": _path("upload_id")})},
    ("commitUpload", "200"): {
        "ReadBlob": ("readBlob", {"blob_id": _body("blob_id")}),
        "ReadContent": ("readBlobContent", {"blob_id": _body("blob_id")})},
    ("publishMemory", "201"): {
        "ReadRevision": ("readRevision", {"collection_id": _path("collection_id"),
                                          "revision": _body("revision")}),
        "ReadItems": ("readRevisionItems", {"collection_id": _path("collection_id"),
                                            "revision": _body("revision")}),
        "ReadCollection": ("readCollection", {"collection_id": _path("collection_id")})},
    ("readCollection", "200"): {
        "ReadHead": ("readRevision", {"collection_id": _path("collection_id"),
                                      "revision": _body("current_revision")}),
        "ReadHeadItems": ("readRevisionItems", {"collection_id": _path("collection_id"),
                                                "revision": _body("current_revision")})},
    ("createSpace", "201"): {
        "ReadSpace": ("readSpace", {"space_id": _body("space_id")}),
        "CreateActor": ("createActor", {"space_id": _body("space_id")}),
        "CreateConsumer": ("createConsumer", {"space_id": _body("space_id")}),
        "CreateCollection": ("createCollection", {"space_id": _body("space_id")}),
        "IssueToken": ("issueToken", {"space_id": _body("space_id")})},
    ("createActor", "201"): {
        "DisableActor": ("disableActor", {"space_id": _body("space_id"),
                                          "actor_id": _body("actor_id")})},
    ("createConsumer", "201"): {
        "ChangeView": ("changeView", {"space_id": _path("space_id"),
                                      "consumer_id": _body("consumer_id")})},
    ("issueToken", "201"): {
        "RevokeToken": ("revokeToken", {"token_id": _body("token_id")})},
}


def _link(paths: dict[str, dict[str, Schema]]) -> None:
    by_id = {op["operationId"]: op for item in paths.values() for op in item.values()}
    for (op_id, status), links in LINKS.items():
        by_id[op_id]["responses"][status]["links"] = {
            name: {"operationId": target, "parameters": parameters}
            for name, (target, parameters) in links.items()}


def document() -> dict[str, Any]:
    """The whole document; built fresh on each call (it is small)."""
    paths = _paths()
    _link(paths)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Waypost/1", "version": "1",
                 "description": "Asynchronous mailbox and memory-sync protocol for AI agents."},
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer",
                               "description": "Data-plane token (tok_<id>.<secret>)."},
                "adminBearer": {"type": "http", "scheme": "bearer",
                                "description": "The operator's admin token."},
            },
            "schemas": components(),
        },
    }
