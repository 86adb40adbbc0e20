"""The component schemas of the OpenAPI document (``openapi.py``) and the helpers that build
them: one function per area, each returning its named schemas."""

from __future__ import annotations

from typing import Any

from waypost.reference.domain import faults, requests, values
from waypost.reference.domain.clock import MAX_ADVANCE_MS
from waypost.reference.domain.errors import ERROR_CLASSES
from waypost.reference.domain.grants import ACTIONS, SCOPES
from waypost.reference.domain.memory_requests import MODES
from waypost.reference.domain.principal import FILTER_DIMENSIONS
from waypost.reference.domain.published_limits import Limits
from waypost.reference.service import control
from waypost.reference.service.answers import OPERATIONS

Schema = dict[str, Any]

LIMITS = Limits()
OBJECT_ID = f"^{values.OBJECT_ID_PATTERN}$"
REQUEST_ID = f"^{values.REQUEST_ID_PATTERN}$"
SEQUENCE = "^[0-9]{1,19}$"
SHA256 = "^[0-9a-f]{64}$"
# A relative path (protocol.md §3.4): segments joined by "/", none empty, "." or "..", no
# backslash or C0 control character.
_SEGMENT = r"(?:[^/\\\x00-\x1f.][^/\\\x00-\x1f]*|\.[^/\\\x00-\x1f.][^/\\\x00-\x1f]*|\.\.[^/\\\x00-\x1f]+)"
PATH = f"^{_SEGMENT}(?:/{_SEGMENT})*$"
#: One line of text: no C0 or C1 control, no DEL (protocol.md WP-VAL-24).
LINE = r"^[^\x00-\x1f\x7f-\x9f]*$"
#: A message's body text: no C0 control but tab, LF and CR (protocol.md WP-VAL-25).
BODY_TEXT = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f]*$"
TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$"
TIMESTAMP_INPUT = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
                   r"(Z|[+-][0-9]{2}:[0-9]{2})$")

# --- schema helpers -------------------------------------------------------------------------


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None,
        description: str | None = None) -> Schema:
    """A closed JSON object (a request body, which the parsers hold to exactly these members:
    WP-VAL-1): these required members, any of the optional ones, no other."""
    return {**answer(required, optional, description), "additionalProperties": False}


def answer(required: dict[str, Schema], optional: dict[str, Schema] | None = None,
           description: str | None = None) -> Schema:
    """An open JSON object (an answer): the members protocol.md names for it are ``required``
    (§6.3, §13), the others the reference answers are ``optional``, and a server MAY add more."""
    schema: Schema = {"type": "object", "properties": {**required, **(optional or {})},
                      "required": list(required)}
    if description:
        schema["description"] = description
    return schema


#: The byte limit of a UTF-8 text, which JSON Schema cannot state (its maxLength counts
#: characters): a vendor extension holds it, and ``maxLength`` is the characters that always fit
#: (a character is at most 4 bytes), so every string the schema admits is within the limit.
MAX_BYTES = "x-waypost-max-bytes"
#: Integers in metadata: those JSON parsers share (I-JSON, RFC 7493), as canonical JSON
#: (RFC 8785) needs them.
SAFE_INTEGER = values.MAX_SAFE_INTEGER


def text(low: int, high: int, pattern: str | None = None) -> Schema:
    """UTF-8 text of ``low`` to ``high`` bytes: at most ``high // 4`` characters by the schema,
    ``high`` bytes by :data:`MAX_BYTES`."""
    schema: Schema = {"type": "string", "maxLength": high // 4, MAX_BYTES: high,
                      "description": f"{low}-{high} bytes of UTF-8"}
    if low:
        schema["minLength"] = low
    if pattern:
        schema["pattern"] = pattern
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
        "Metadata": {"type": "object", "additionalProperties": ref("JsonValue"),
                     MAX_BYTES: values.MAX_METADATA_BYTES,
                     "description": f"At most {values.MAX_METADATA_BYTES} bytes "
                     "as canonical JSON; never used for identity or authorisation."},
        "JsonValue": {"description": "Any JSON value whose integers (numbers written without "
                                     "fraction or exponent) are within ±(2^53−1); a larger "
                                     "one is 400 INVALID_REQUEST. Other numbers are any "
                                     "finite double.",
                      "anyOf": [{"type": ["null", "boolean", "string"]},
                                {"type": "integer", "minimum": -SAFE_INTEGER,
                                 "maximum": SAFE_INTEGER},
                                {"type": "number", "not": {"type": "integer"}},
                                array(ref("JsonValue")),
                                {"type": "object", "additionalProperties": ref("JsonValue")}]},
        "Error": obj({"error": answer({
            "code": enum([cls.code for cls in ERROR_CLASSES]),
            "message": {"type": "string"},
            "details": {"type": "object", "description": "e.g. field, max, current_revision"},
        })}, description="The one error envelope (protocol.md §7): exactly one member, error "
                         "(WP-ERR-1)."),
    }


def _messages() -> dict[str, Schema]:
    thread = {"oneOf": [obj({"new": const(True)}), obj({"thread_id": ID})]}
    body_in = obj({"text": text(0, LIMITS.body_text_bytes, BODY_TEXT)}, {
        "options": array(text(1, requests.MAX_OPTION_BYTES, LINE), high=requests.MAX_OPTIONS),
        "source_uri": text(1, requests.MAX_SOURCE_URI_BYTES, LINE)})
    return {
        "MessageSendRequest": obj({
            "request_id": ref("RequestId"), "thread": thread, "kind": KIND,
            "subject": text(1, values.MAX_SUBJECT_BYTES, LINE), "body": body_in,
        }, {
            "recipient_ids": array(ID, 1, LIMITS.recipients),
            "in_reply_to": ID,
            "attachment_ids": array(ID, high=LIMITS.attachments, unique=True),
            "metadata": ref("Metadata"),
        }, "recipient_ids omitted: the space's default actor. in_reply_to needs thread_id.")
        | {"if": {"properties": {"thread": {"required": ["new"]}}},
           "then": {"not": {"required": ["in_reply_to"]}}},
        "MessageSent": answer({"message_id": ID, "thread_id": ID, "feed_item_id": ID,
                               "sequence": SEQ, "committed_at": TIME}),
        "Message": answer({
            "message_id": ID, "thread_id": ID, "in_reply_to": nullable(ID), "producer_id": ID,
            "recipient_ids": IDS, "kind": KIND, "subject": {"type": "string"},
            "body": answer({"text": {"type": "string"}, "options": array({"type": "string"}),
                            "source_uri": nullable({"type": "string"})}),
            "attachment_ids": IDS, "metadata": nullable(ref("Metadata")),
            "committed_at": TIME, "feed_item_id": ID, "sequence": SEQ}),
    }


def _feed_item(kind: str, detail: Schema) -> Schema:
    return answer({"item_id": ID, "sequence": SEQ, "type": const(kind), "producer_id": ID,
                   "recipient_ids": IDS, "thread_id": nullable(ID), "committed_at": TIME,
                   kind: detail})


def _feed() -> dict[str, Schema]:
    variants = {"message": "MessageFeedItem", "receipt": "ReceiptFeedItem",
                "memory_revision": "MemoryRevisionFeedItem"}
    return {
        "MessageFeedItem": _feed_item("message", answer({
            "message_id": ID, "subject": {"type": "string"}, "kind": KIND})),
        "ReceiptFeedItem": _feed_item("receipt", answer({
            "receipt_id": ID, "receipt_version": integer(1), "subject_item_id": ID,
            "subject_resource_id": ID, "consumer_id": ID, "actor_id": ID,
            "stage": STAGE, "updated_at": TIME})),
        "MemoryRevisionFeedItem": _feed_item("memory_revision", answer({
            "collection_id": ID, "revision": ref("Revision"),
            "parent_revision": ref("Revision"), "manifest_blob_id": ID})),
        "FeedItem": {"oneOf": [ref(name) for name in variants.values()],
                     "discriminator": {"propertyName": "type", "mapping": {
                         kind: f"#/components/schemas/{name}" for kind, name in variants.items()}}},
        "FeedPage": answer({"items": array(ref("FeedItem")), "next_cursor": CURSOR,
                            "has_more": {"type": "boolean"}}),
        "AckRequest": obj({
            "request_id": ref("RequestId"),
            "items": array(obj({"item_id": ID, "stage": STAGE}), high=LIMITS.ack_items),
        }, {"checkpoint": obj({"cursor": CURSOR})},
            "items may be empty only with a checkpoint; one item id at most once."),
        "AckResult": answer({
            "items": array(answer({"item_id": ID, "stage": STAGE, "receipt_version": integer(1),
                                   "changed": {"type": "boolean"}})),
            "checkpoint_sequence": nullable(SEQ)}),
        "Submission": answer({
            "operation": enum(OPERATIONS), "request_id": ref("RequestId"),
            "state": enum(["pending", "committed", "failed"]), "fingerprint": ref("Sha256"),
            "result": nullable(answer({
                "status": integer(200, 599),
                "body": {"anyOf": [ref("MessageSent"), ref("AckResult"), ref("UploadPrepared"),
                                   ref("BlobSealed"), ref("Published"), ref("Error")]}}))}),
        "Describe": answer({
            "protocol": const("waypost/1"), "server": {"type": "string"},
            "limits": answer({name: integer() for name in LIMITS.published()}),
            "capabilities": answer({"test_hooks": {"type": "boolean"},
                                    "mcp": {"type": "boolean"}},
                                   {"adapter": {"type": "string"},
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
            "sha256": sha256, "content_type": {
                "type": "string", "minLength": 1, "maxLength": values.BLOB_TEXT_BYTES,
                "pattern": f"^{values.CONTENT_TYPE_PATTERN}$",
                "description": "A media type (type/subtype, optional ; name=value parameters) "
                               "of 1-255 ASCII bytes; anything else is 400 INVALID_REQUEST."},
        }, {"filename": text(1, values.BLOB_TEXT_BYTES, LINE)}),
        "UploadPrepared": answer({
            "upload_id": ID, "blob_id": ID,
            "upload_url": {"type": "string",
                           "pattern": f"^/v1/uploads/{OBJECT_ID[1:-1]}/content$",
                           "description": "Where to PUT the content, relative to this server."},
            "expires_at": TIME,
        }, description="blob_id is fixed now; the blob exists only once the upload is sealed."),
        "BlobSealed": answer(facts),
        "Blob": answer({**facts, "filename": nullable({"type": "string"}), "sealed_at": TIME}),
        "Clock": answer({"now": TIME}),
        "ArmFaultRequest": obj({"point": enum(faults.POINTS), "action": enum(faults.ACTIONS)},
                               {"times": {**integer(1, 1000), "default": 1}}),
        "Faults": answer({"armed": array(answer({"point": enum(faults.POINTS),
                                                 "action": enum(faults.ACTIONS),
                                                 "times": integer(1, 1000)})),
                          "points": array(enum(faults.POINTS)),
                          "actions": array(enum(faults.ACTIONS))},
                         {"crash_mode": enum(["abandon", "exit"])}),
        "EmptyRequest": obj({}),
        "Restarted": answer({"restarted": const(True)}),
        "ClockAdvanceRequest": obj({"advance_ms": integer(0, MAX_ADVANCE_MS)}),
    }


def _memory() -> dict[str, Schema]:
    item_in = obj({"item_id": ID, "path": text(1, values.MAX_PATH_BYTES, PATH), "blob_id": ID},
                  {"metadata": ref("Metadata")})
    active = answer({"item_id": ID, "state": const("active"), "path": {"type": "string"},
                     "blob_id": ID, "metadata": ref("Metadata")})
    tombstone = answer({"item_id": ID, "state": const("tombstone"),
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
        "PublishedRevision": answer({"revision": integer(1, values.MAX_REVISION),
                                     "parent_revision": ref("Revision"),
                                     "changed": const(True)}),
        "PublishedUnchanged": answer({"revision": ref("Revision"), "changed": const(False)}),
        "Published": {"oneOf": [ref("PublishedRevision"), ref("PublishedUnchanged")]},
        "ActiveEntry": active,
        "TombstoneEntry": tombstone,
        "MemoryEntry": {"oneOf": [ref("ActiveEntry"), ref("TombstoneEntry")]},
        "RevisionInfo": answer({
            "collection_id": ID, "revision": ref("Revision"),
            "parent_revision": nullable(ref("Revision")), "manifest_blob_id": nullable(ID),
            "state_fingerprint": ref("Sha256")}, {
            "committed_at": nullable(TIME), "feed_item_id": nullable(ID),
            "sequence": nullable(SEQ)},
            description="Revision 0 is the virtual empty state: no manifest, no feed item."),
        "RevisionItems": answer({"items": array(ref("MemoryEntry")), "next_cursor": CURSOR,
                                 "has_more": {"type": "boolean"}},
                                {"collection_id": ID, "revision": ref("Revision")}),
    }


def _control() -> dict[str, Schema]:
    name, uri = text(1, control.MAX_NAME_BYTES, LINE), text(1, control.MAX_URI_BYTES, LINE)
    rid = ref("RequestId")
    actor = {"actor_id": ID, "kind": enum(control.ACTOR_KINDS), "display_name": name}
    dimensions = {dim: array(enum(control.ITEM_TYPES) if dim == "item_types" else ID,
                             high=values.FILTER_ENTRIES) for dim in FILTER_DIMENSIONS}
    recipients = {"oneOf": [obj({"mode": const("any")}),
                            obj({"mode": const("listed"), "actor_ids": IDS})]}
    space = {"space_id": ID, "display_name": {"type": "string"}, "source_uri": {"type": "string"},
             "default_actor_id": ID}
    token_fields = {"token_id": ID, "grant_fingerprint": ref("Sha256"),
                    "expires_at": nullable(TIME)}
    collection = {"collection_id": ID, "source_actor_id": ID, "scope": {"type": "string"},
                  "current_revision": ref("Revision")}
    view = {"view": enum(control.VIEWS)}
    created = {"created_at": TIME}
    return {
        "RequestOnly": obj({"request_id": rid}),
        "CreateSpaceRequest": obj({"request_id": rid, "space_id": ID, "display_name": name,
                                   "source_uri": uri,
                                   "default_actor": obj(actor)}),
        "SpaceCreated": answer({"space_id": ID, "default_actor_id": ID}),
        "CreateActorRequest": obj({"request_id": rid, **actor}),
        "ActorCreated": answer({"actor_id": ID}, {"space_id": ID}),
        "ActorDisabled": answer({"actor_id": ID}, {"space_id": ID, "disabled": const(True),
                                                   "authority_version": integer()}),
        "ConsumerFilter": obj({}, dimensions),
        "CreateConsumerRequest": obj({"request_id": rid, "consumer_id": ID, "actor_id": ID,
                                      **view}, {"filter": ref("ConsumerFilter")}),
        "ChangeViewRequest": obj({"request_id": rid, **view}, {"filter": ref("ConsumerFilter")}),
        "ConsumerView": answer({"consumer_id": ID}, {"actor_id": ID, **view,
                                                     "view_revision": integer()},
                               "view_revision: the consumer's, after this write (the "
                               "reference starts a consumer at 1)."),
        "CreateCollectionRequest": obj({"request_id": rid, "collection_id": ID,
                                        "source_actor_id": ID, "scope": uri}),
        "CollectionCreated": answer({"collection_id": ID}, {
            k: v for k, v in collection.items() if k != "collection_id"}),
        "Collection": answer(collection),
        "IssueTokenRequest": obj({
            "request_id": rid, "actor_id": ID, "consumer_id": ID, "scopes": array(enum(SCOPES)),
            "recipients": recipients,
            "collections": array(obj({"collection_id": ID,
                                      "actions": array(enum(ACTIONS), low=1)})),
            "blob_references": IDS,
        }, {"expires_at": {"type": "string", "format": "date-time", "pattern": TIMESTAMP_INPUT}},
            "Every grant list is explicit: an empty list grants nothing."),
        "TokenIssued": answer({**token_fields, "token": nullable({"type": "string"})},
                              description="token: the secret, only in the first answer "
                                          "(null when replayed)."),
        "TokenRevoked": answer({"token_id": ID}, {"revoked": const(True)}),
        "AddThreadMembersRequest": obj({"request_id": rid,
                                        "actor_ids": array(ID, 1, LIMITS.recipients)}),
        "ThreadMembers": answer({"thread_id": ID}, {"space_id": ID, "member_ids": IDS}),
        "Space": answer(space, created),
        "SpaceList": answer({"spaces": array(ref("Space"))}),
        "SpaceDetail": answer({
            **space,
            "actors": array(answer({**actor, "display_name": {"type": "string"},
                                    "disabled": {"type": "boolean"},
                                    "authority_version": integer()}, created)),
            "consumers": array(answer({"consumer_id": ID, "actor_id": ID, **view,
                                       "filter": answer({}, dimensions),
                                       "view_revision": integer()},
                                      {"disabled": {"type": "boolean"}, **created})),
            "collections": array(answer(collection, created)),
            "tokens": array(answer({"token_id": ID, "actor_id": ID, "consumer_id": ID,
                                    **{k: v for k, v in token_fields.items() if k != "token_id"},
                                    "revoked": {"type": "boolean"}},
                                   {"scopes": array(enum(SCOPES)), **created})),
            "threads": array(answer({"thread_id": ID, "member_ids": IDS}, created)),
        }, created, "A space with its actors, consumers, collections, tokens (no secrets) and "
                    "threads."),
    }


def components() -> dict[str, Schema]:
    """Every named schema of the document."""
    return {**_values(), **_messages(), **_feed(), **_blobs(), **_memory(), **_control()}

