"""The OpenAPI 3.1 document served at ``/openapi.json`` (protocol.md §3, §6, §7, §8, §10).

Schemas are JSON Schema 2020-12. Request bodies say exactly what the parsers accept (unknown
fields are rejected, so every object has ``additionalProperties: false``); byte limits of UTF-8
text appear as ``maxLength`` (a necessary bound: a string of at most N bytes has at most N
characters) and in the description. Limits are the defaults of :class:`Limits`; a deployment
publishes its own, possibly smaller, values at ``GET /v1/describe``. Two bodies are raw bytes,
not JSON: the upload content PUT and the blob content GET. Each error answer names its codes:
every code of its status, or just those an operation lists (see :data:`Errors`).
"""

from __future__ import annotations

from typing import Any

from waypost.reference import faults, requests, values
from waypost.reference.errors import BY_CODE, ERROR_CLASSES
from waypost.reference.grants import ACTIONS, SCOPES
from waypost.reference.limits import Limits
from waypost.reference.memory_requests import MODES
from waypost.reference.principal import FILTER_DIMENSIONS
from waypost.reference.service import control
from waypost.reference.service.submissions import OPERATIONS

Schema = dict[str, Any]

LIMITS = Limits()
OBJECT_ID = "^[A-Za-z0-9_-]{1,96}$"
REQUEST_ID = "^[A-Za-z0-9._:-]{1,128}$"
SEQUENCE = "^[0-9]{1,19}$"
SHA256 = "^[0-9a-f]{64}$"
TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$"
TIMESTAMP_INPUT = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
                   r"(Z|[+-][0-9]{2}:[0-9]{2})$")
FILTER_LIMIT = 100  # entries per consumer filter dimension (control.py)
MAX_BLOB_TEXT_BYTES = 255  # content_type and filename of blob.prepare (blobs.py)
MAX_ADVANCE_MS = 10**12  # one advance of the test-hook clock (app.py)

# --- schema helpers -------------------------------------------------------------------------


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None,
        description: str | None = None) -> Schema:
    """A closed JSON object: exactly these required members, any of the optional ones."""
    schema: Schema = {"type": "object", "properties": {**required, **(optional or {})},
                      "required": list(required), "additionalProperties": False}
    if description:
        schema["description"] = description
    return schema


def text(low: int, high: int) -> Schema:
    """UTF-8 text of ``low`` to ``high`` bytes."""
    schema: Schema = {"type": "string", "maxLength": high,
                      "description": f"{low}-{high} bytes of UTF-8"}
    if low:
        schema["minLength"] = low
    return schema


def array(items: Schema, low: int = 0, high: int | None = None, unique: bool = False) -> Schema:
    schema: Schema = {"type": "array", "items": items}
    if low:
        schema["minItems"] = low
    if high is not None:
        schema["maxItems"] = high
    if unique:
        schema["uniqueItems"] = True
    return schema


def integer(low: int = 0, high: int | None = None) -> Schema:
    schema: Schema = {"type": "integer", "minimum": low}
    if high is not None:
        schema["maximum"] = high
    return schema


def nullable(schema: Schema) -> Schema:
    return {"oneOf": [schema, {"type": "null"}]}


def enum(choices: tuple[str, ...] | list[str]) -> Schema:
    return {"type": "string", "enum": list(choices)}


def const(value: Any) -> Schema:
    return {"const": value}


ID, IDS = ref("ObjectId"), array(ref("ObjectId"))
TIME, SEQ = ref("Timestamp"), ref("Sequence")
CURSOR: Schema = {"type": "string", "minLength": 1, "description": "Opaque, HMAC-protected."}
KIND, STAGE = enum(requests.MESSAGE_KINDS), enum(requests.STAGES)

# --- component schemas ----------------------------------------------------------------------


def _values() -> dict[str, Schema]:
    return {
        "ObjectId": {"type": "string", "pattern": OBJECT_ID,
                     "description": "Object id: ASCII [A-Za-z0-9_-], 1-96 characters."},
        "RequestId": {"type": "string", "pattern": REQUEST_ID,
                      "description": "Idempotency key: ASCII [A-Za-z0-9._:-], 1-128 characters."},
        "Sequence": {"type": "string", "pattern": SEQUENCE,
                     "description": "Decimal string of an integer up to 2^63-1 (never a number)."},
        "Timestamp": {"type": "string", "format": "date-time", "pattern": TIMESTAMP,
                      "description": "RFC 3339 UTC with milliseconds, e.g. "
                                     "2026-11-30T02:29:59.123Z."},
        "Sha256": {"type": "string", "pattern": SHA256,
                   "description": "SHA-256 digest or fingerprint: 64 lowercase hex characters."},
        "Revision": integer(0, values.MAX_REVISION),
        "Metadata": {"type": "object", "description": f"At most {values.MAX_METADATA_BYTES} bytes "
                     "as canonical JSON; never used for identity or authorisation."},
        "Error": obj({"error": obj({
            "code": enum([cls.code for cls in ERROR_CLASSES]),
            "message": {"type": "string"},
            "details": {"type": "object", "description": "e.g. field, max, current_revision"},
        })}, description="The one error envelope (protocol.md §7)."),
    }


def _messages() -> dict[str, Schema]:
    thread = {"oneOf": [obj({"new": const(True)}), obj({"thread_id": ID})]}
    body_in = obj({"text": text(0, LIMITS.body_text_bytes)}, {
        "options": array(text(1, requests.MAX_OPTION_BYTES), high=requests.MAX_OPTIONS),
        "source_uri": text(1, requests.MAX_SOURCE_URI_BYTES)})
    return {
        "MessageSendRequest": obj({
            "request_id": ref("RequestId"), "thread": thread, "kind": KIND,
            "subject": text(1, values.MAX_SUBJECT_BYTES), "body": body_in,
        }, {
            "recipient_ids": array(ID, 1, LIMITS.recipients),
            "in_reply_to": ID,
            "attachment_ids": array(ID, high=LIMITS.attachments, unique=True),
            "metadata": ref("Metadata"),
        }, "recipient_ids omitted: the space's default actor. in_reply_to needs thread_id.")
        | {"if": {"properties": {"thread": {"required": ["new"]}}},
           "then": {"not": {"required": ["in_reply_to"]}}},
        "MessageSent": obj({"message_id": ID, "thread_id": ID, "feed_item_id": ID,
                            "sequence": SEQ, "committed_at": TIME}),
        "Message": obj({
            "message_id": ID, "thread_id": ID, "in_reply_to": nullable(ID), "producer_id": ID,
            "recipient_ids": IDS, "kind": KIND, "subject": {"type": "string"},
            "body": obj({"text": {"type": "string"}, "options": array({"type": "string"}),
                         "source_uri": nullable({"type": "string"})}),
            "attachment_ids": IDS, "metadata": nullable(ref("Metadata")),
            "committed_at": TIME, "feed_item_id": ID, "sequence": SEQ}),
    }


def _feed_item(kind: str, detail: Schema) -> Schema:
    return obj({"item_id": ID, "sequence": SEQ, "type": const(kind), "producer_id": ID,
                "recipient_ids": IDS, "thread_id": nullable(ID), "committed_at": TIME,
                kind: detail})


def _feed() -> dict[str, Schema]:
    variants = {"message": "MessageFeedItem", "receipt": "ReceiptFeedItem",
                "memory_revision": "MemoryRevisionFeedItem"}
    return {
        "MessageFeedItem": _feed_item("message", obj({
            "message_id": ID, "subject": {"type": "string"}, "kind": KIND})),
        "ReceiptFeedItem": _feed_item("receipt", obj({
            "receipt_id": ID, "receipt_version": integer(1), "subject_item_id": ID,
            "subject_resource_id": ID, "consumer_id": ID, "actor_id": ID,
            "stage": STAGE, "updated_at": TIME})),
        "MemoryRevisionFeedItem": _feed_item("memory_revision", obj({
            "collection_id": ID, "revision": ref("Revision"),
            "parent_revision": ref("Revision"), "manifest_blob_id": ID})),
        "FeedItem": {"oneOf": [ref(name) for name in variants.values()],
                     "discriminator": {"propertyName": "type", "mapping": {
                         kind: f"#/components/schemas/{name}" for kind, name in variants.items()}}},
        "FeedPage": obj({"items": array(ref("FeedItem")), "next_cursor": CURSOR,
                         "has_more": {"type": "boolean"}}),
        "AckRequest": obj({
            "request_id": ref("RequestId"),
            "items": array(obj({"item_id": ID, "stage": STAGE}), high=LIMITS.ack_items),
        }, {"checkpoint": obj({"cursor": CURSOR})},
            "items may be empty only with a checkpoint; one item id at most once."),
        "AckResult": obj({
            "items": array(obj({"item_id": ID, "stage": STAGE,
                                "receipt_version": integer(1), "changed": {"type": "boolean"}})),
            "checkpoint_sequence": nullable(SEQ)}),
        "Submission": obj({
            "operation": enum(OPERATIONS), "request_id": ref("RequestId"),
            "state": enum(["pending", "committed", "failed"]), "fingerprint": ref("Sha256"),
            "result": nullable(obj({
                "status": integer(200, 599),
                "body": {"anyOf": [ref("MessageSent"), ref("AckResult"), ref("UploadPrepared"),
                                   ref("BlobSealed"), ref("Published"), ref("Error")]}}))}),
        "Describe": obj({
            "protocol": const("waypost/1"), "server": {"type": "string"},
            "limits": obj({name: integer() for name in LIMITS.published()}),
            "capabilities": obj({"adapter": {"type": "string"}, "test_hooks": {"type": "boolean"},
                                 "mcp": {"type": "boolean"},
                                 "operations": array(enum(OPERATIONS))})}),
    }


def _blobs() -> dict[str, Schema]:
    size, sha256 = integer(), ref("Sha256")
    facts = {"blob_id": ID, "size": size, "sha256": sha256, "content_type": {"type": "string"}}
    return {
        "BlobPrepareRequest": obj({
            "request_id": ref("RequestId"),
            "size": {**integer(0, LIMITS.upload_bytes),
                     "description": "Bytes of the content; 0 is valid. Above upload_bytes: "
                                    "413 RESOURCE_LIMIT."},
            "sha256": sha256, "content_type": text(1, MAX_BLOB_TEXT_BYTES),
        }, {"filename": text(1, MAX_BLOB_TEXT_BYTES)}),
        "UploadPrepared": obj({
            "upload_id": ID, "blob_id": ID,
            "upload_url": {"type": "string",
                           "pattern": f"^/v1/uploads/{OBJECT_ID[1:-1]}/content$",
                           "description": "Where to PUT the content, relative to this server."},
            "expires_at": TIME,
        }, description="blob_id is fixed now; the blob exists only once the upload is sealed."),
        "UploadStored": obj({"upload_id": ID, "blob_id": ID,
                             "state": enum(["stored", "sealed"]), "size": size,
                             "sha256": sha256}),
        "BlobSealed": obj(facts),
        "Blob": obj({**facts, "filename": nullable({"type": "string"}), "sealed_at": TIME}),
        "Clock": obj({"now": TIME}),
        "ArmFaultRequest": obj({"point": enum(faults.POINTS), "action": enum(faults.ACTIONS)},
                               {"times": {**integer(1, 1000), "default": 1}}),
        "Faults": obj({"armed": array(obj({"point": enum(faults.POINTS),
                                           "action": enum(faults.ACTIONS),
                                           "times": integer(1, 1000)})),
                       "points": array(enum(faults.POINTS)),
                       "actions": array(enum(faults.ACTIONS)),
                       "crash_mode": enum(["abandon", "exit"])}),
        "EmptyRequest": obj({}),
        "Restarted": obj({"restarted": const(True)}),
        "ClockAdvanceRequest": obj({"advance_ms": integer(0, MAX_ADVANCE_MS)}),
    }


def _memory() -> dict[str, Schema]:
    item_in = obj({"item_id": ID, "path": text(1, values.MAX_PATH_BYTES), "blob_id": ID},
                  {"metadata": ref("Metadata")})
    active = obj({"item_id": ID, "state": const("active"), "path": {"type": "string"},
                  "blob_id": ID, "metadata": ref("Metadata")})
    tombstone = obj({"item_id": ID, "state": const("tombstone"),
                     "deleted_in_revision": integer(1, values.MAX_REVISION)})
    inline = obj({"request_id": ref("RequestId"), "expected_revision": ref("Revision"),
                  "mode": enum(MODES),
                  "items": array(item_in, high=LIMITS.inline_items_per_publish)},
                 {"delete_ids": array(ID, high=LIMITS.inline_items_per_publish, unique=True)})
    by_manifest = obj({"request_id": ref("RequestId"), "expected_revision": ref("Revision"),
                       "mode": enum(MODES), "manifest_blob_id": ID})
    return {
        "PublishRequest": {"oneOf": [inline, by_manifest], "description":
                           "Inline items (+ delete_ids, delta only) or a manifest blob holding "
                           "{items, delete_ids} in the inline format."},
        "Published": {"oneOf": [
            obj({"revision": integer(1, values.MAX_REVISION),
                 "parent_revision": ref("Revision"), "changed": const(True)}),
            obj({"revision": ref("Revision"), "changed": const(False)})]},
        "MemoryEntry": {"oneOf": [active, tombstone]},
        "RevisionInfo": obj({
            "collection_id": ID, "revision": ref("Revision"),
            "parent_revision": nullable(ref("Revision")), "manifest_blob_id": nullable(ID),
            "state_fingerprint": ref("Sha256"), "committed_at": nullable(TIME),
            "feed_item_id": nullable(ID), "sequence": nullable(SEQ)},
            description="Revision 0 is the virtual empty state: no manifest, no feed item."),
        "RevisionItems": obj({"collection_id": ID, "revision": ref("Revision"),
                              "items": array(ref("MemoryEntry")), "next_cursor": CURSOR,
                              "has_more": {"type": "boolean"}}),
    }


def _control() -> dict[str, Schema]:
    name, uri = text(1, control.MAX_NAME_BYTES), text(1, control.MAX_URI_BYTES)
    rid = ref("RequestId")
    actor = {"actor_id": ID, "kind": enum(control.ACTOR_KINDS), "display_name": name}
    filter_ = obj({}, {dim: array(enum(control.ITEM_TYPES) if dim == "item_types" else ID,
                                  high=FILTER_LIMIT) for dim in FILTER_DIMENSIONS})
    recipients = {"oneOf": [obj({"mode": const("any")}),
                            obj({"mode": const("listed"), "actor_ids": IDS})]}
    space = {"space_id": ID, "display_name": {"type": "string"}, "source_uri": {"type": "string"},
             "default_actor_id": ID, "created_at": TIME}
    token_fields = {"token_id": ID, "grant_fingerprint": ref("Sha256"),
                    "expires_at": nullable(TIME)}
    collection = {"collection_id": ID, "source_actor_id": ID, "scope": {"type": "string"},
                  "current_revision": ref("Revision")}
    view = {"view": enum(control.VIEWS)}
    return {
        "RequestOnly": obj({"request_id": rid}),
        "CreateSpaceRequest": obj({"request_id": rid, "space_id": ID, "display_name": name,
                                   "source_uri": uri,
                                   "default_actor": obj(actor)}),
        "SpaceCreated": obj({"space_id": ID, "default_actor_id": ID}),
        "CreateActorRequest": obj({"request_id": rid, **actor}),
        "ActorCreated": obj({"space_id": ID, "actor_id": ID}),
        "ActorDisabled": obj({"space_id": ID, "actor_id": ID, "disabled": const(True),
                              "authority_version": integer()}),
        "ConsumerFilter": filter_,
        "CreateConsumerRequest": obj({"request_id": rid, "consumer_id": ID, "actor_id": ID,
                                      **view}, {"filter": ref("ConsumerFilter")}),
        "ChangeViewRequest": obj({"request_id": rid, **view}, {"filter": ref("ConsumerFilter")}),
        "ConsumerView": obj({"consumer_id": ID, "actor_id": ID, **view,
                             "view_revision": integer()}),
        "CreateCollectionRequest": obj({"request_id": rid, "collection_id": ID,
                                        "source_actor_id": ID, "scope": uri}),
        "Collection": obj(collection),
        "IssueTokenRequest": obj({
            "request_id": rid, "actor_id": ID, "consumer_id": ID, "scopes": array(enum(SCOPES)),
            "recipients": recipients,
            "collections": array(obj({"collection_id": ID,
                                      "actions": array(enum(ACTIONS), low=1)})),
            "blob_references": IDS,
        }, {"expires_at": {"type": "string", "format": "date-time", "pattern": TIMESTAMP_INPUT}},
            "Every grant list is explicit: an empty list grants nothing."),
        "TokenIssued": obj({**token_fields, "token": nullable({"type": "string"})},
                           description="token: the secret, only in the first answer "
                                       "(null when replayed)."),
        "TokenRevoked": obj({"token_id": ID, "revoked": const(True)}),
        "AddThreadMembersRequest": obj({"request_id": rid,
                                        "actor_ids": array(ID, 1, LIMITS.recipients)}),
        "ThreadMembers": obj({"space_id": ID, "thread_id": ID, "member_ids": IDS}),
        "Space": obj(space),
        "SpaceList": obj({"spaces": array(ref("Space"))}),
        "SpaceDetail": obj({
            **space,
            "actors": array(obj({**actor, "display_name": {"type": "string"},
                                 "disabled": {"type": "boolean"},
                                 "authority_version": integer(), "created_at": TIME})),
            "consumers": array(obj({"consumer_id": ID, "actor_id": ID, **view,
                                    "view_revision": integer(), "disabled": {"type": "boolean"},
                                    "filter": ref("ConsumerFilter"), "created_at": TIME})),
            "collections": array(obj({**collection, "created_at": TIME})),
            "tokens": array(obj({**token_fields, "actor_id": ID, "consumer_id": ID,
                                 "revoked": {"type": "boolean"}, "scopes": array(enum(SCOPES)),
                                 "created_at": TIME})),
            "threads": array(obj({"thread_id": ID, "member_ids": IDS, "created_at": TIME})),
        }, description="A space with its actors, consumers, collections, tokens (no secrets) "
                       "and threads."),
    }


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


def upload(op_id: str, summary: str, result: str, errors: Errors, *path: str) -> Schema:
    """A data-plane operation whose body is raw bytes (any length, 0 included), not JSON."""
    op = operation(op_id, summary, DATA, 200, ref(result), errors,
                   params=[parameter(name) for name in path])
    op["requestBody"] = {"required": True, "description": "The raw content bytes.",
                         "content": {RAW: {}}}
    return op


def download(op_id: str, summary: str, errors: Errors, *path: str) -> Schema:
    """A data-plane read answering raw bytes with an ``ETag`` (errors are still JSON)."""
    op = operation(op_id, summary, DATA, 200, {}, errors,
                   params=[parameter(name) for name in path])
    op["responses"]["200"] = {
        "description": f"{summary} Content-Type is the blob's content_type.",
        "headers": ETAG, "content": {"*/*": {}}}
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
            ref("Describe"), ())},
        "/openapi.json": {"get": operation(
            "openapi", "This document.", PUBLIC, 200, {"type": "object"}, ())},
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
            "UploadStored", ("INVALID_REQUEST", 401, 403, 404, 410, "CONTENT_MISMATCH", 503),
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
                             (401, 503))},
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
            "createCollection", "A memory collection of a source actor.", 201, "Collection",
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


def document() -> dict[str, Any]:
    """The whole document; built fresh on each call (it is small)."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "Waypost/1", "version": "1",
                 "description": "Asynchronous mailbox and memory-sync protocol for AI agents."},
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": _paths(),
        "components": {
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer",
                               "description": "Data-plane token (tok_<id>.<secret>)."},
                "adminBearer": {"type": "http", "scheme": "bearer",
                                "description": "The operator's admin token."},
            },
            "schemas": {**_values(), **_messages(), **_feed(), **_blobs(), **_memory(),
                        **_control()},
        },
    }
