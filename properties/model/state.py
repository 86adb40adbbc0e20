"""The kit's independent model of Waypost/1 (protocol.md §2–§9): pure Python, no HTTP.

It holds what a correct server must have published and predicts every answer: which items each
consumer sees, receipts and their history, checkpoints per grant fingerprint, submissions with
their stable results. Server-generated values (ids, sequences, times) are learnt from the
answers that reveal them and must never change afterwards. Memory collections keep every
state they published, the state a publish makes on its parent, and the input no state can make
valid (at the end of this module).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The example's two spaces and their actors (the first of each is its default actor).
SPACE_ACTORS = {"A": ("a0", "a1", "a2"), "B": ("b0",)}
#: The example's collections: (space, collection id, source actor).
COLLECTIONS = (("A", "notes", "a0"), ("A", "plans", "a1"), ("B", "journal", "b0"))
STAGE_RANK = {"none": 0, "received": 1, "processed": 2}
ALL_SCOPES = ("message.send", "message.read", "space.observe", "receipt.write", "memory.write",
              "memory.read", "blob.write", "blob.reference", "event.subscribe")


@dataclass
class Actor:
    actor_id: str
    space: str
    disabled: bool = False


@dataclass
class Consumer:
    consumer_id: str
    space: str
    actor_id: str
    view: str
    view_revision: int = 1
    filter: dict[str, frozenset[str]] = field(default_factory=dict)


@dataclass
class Token:
    """A credential the kit holds; ``handle`` is its stable name in replays."""

    handle: str
    token_id: str
    secret: str
    space: str
    actor_id: str
    consumer_id: str
    scopes: frozenset[str]
    recipients_any: bool
    recipient_ids: frozenset[str]
    grant_fingerprint: str
    revoked: bool = False
    blob_references: frozenset[str] = frozenset()
    collections: dict[str, frozenset[str]] = field(default_factory=dict)  # id -> actions

    def has(self, scope: str) -> bool:
        return scope in self.scopes

    def may(self, collection_id: str, action: str) -> bool:
        return action in self.collections.get(collection_id, frozenset())


@dataclass
class Item:
    """A feed item in commit order (``index`` within its space). Receipt items are known from
    the ACK that made them, but their id, sequence and times only from the first feed page that
    shows them; ``bound`` tells whether those are known."""

    index: int
    space: str
    type: str
    producer_id: str
    recipient_ids: tuple[str, ...]
    thread_id: str | None
    item_id: str | None = None
    sequence: int | None = None
    shown: dict[str, Any] | None = None  # the full JSON once seen, never to change
    message: dict[str, Any] | None = None
    receipt: dict[str, Any] | None = None  # expected receipt fields (without server values)
    memory: dict[str, Any] | None = None  # expected memory_revision fields (manifest learnt)
    collection_id: str | None = None
    about_collection: str | None = None  # a receipt about a revision: its collection

    @property
    def bound(self) -> bool:
        return self.item_id is not None


@dataclass
class Message:
    message_id: str
    space: str
    thread_id: str
    producer_id: str
    recipient_ids: tuple[str, ...]
    shown: dict[str, Any]  # the full expected message JSON
    item: Item


@dataclass
class Recorded:
    """A submission whose first answer the kit saw: its body, fingerprint and stable result."""

    operation: str
    space: str
    actor_id: str
    token: str
    body: dict[str, Any]
    fingerprint: str
    status: int
    result: dict[str, Any]
    path: str = ""
    state: str = "committed"  # or "failed": a recorded business outcome (REVISION_CONFLICT)


@dataclass
class Upload:
    """An upload slot the kit prepared, with the bytes it declared."""

    upload_id: str
    blob_id: str
    space: str
    owner_id: str
    content: bytes
    content_type: str
    filename: str | None
    expires_at: str
    state: str = "awaiting"  # awaiting, stored, sealed (the kit never sees cleanup directly)
    sealed: dict[str, Any] | None = None  # the blob metadata once sealed and read

    @property
    def sealed_answer(self) -> dict[str, Any]:
        import hashlib

        return {"blob_id": self.blob_id, "size": len(self.content),
                "sha256": hashlib.sha256(self.content).hexdigest(),
                "content_type": self.content_type}


@dataclass
class HeldCursor:
    """A cursor the server handed out, with what the kit knows it is bound to."""

    text: str
    space: str
    actor_id: str
    consumer_id: str
    view_revision: int
    grant_fingerprint: str
    position: int
    token: str = ""  # the handle of the token it was handed to


@dataclass
class Model:
    """Everything published in one run's spaces."""

    spaces: dict[str, str] = field(default_factory=dict)  # space id -> default actor
    actors: dict[tuple[str, str], Actor] = field(default_factory=dict)
    consumers: dict[tuple[str, str], Consumer] = field(default_factory=dict)
    tokens: dict[str, Token] = field(default_factory=dict)
    threads: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    items: dict[str, list[Item]] = field(default_factory=dict)  # per space, commit order
    messages: dict[str, Message] = field(default_factory=dict)
    receipts: dict[tuple[str, str, str], tuple[str, int]] = field(default_factory=dict)
    checkpoints: dict[tuple[str, str, int, str], int] = field(default_factory=dict)
    submissions: dict[tuple[str, str, str, str], Recorded] = field(default_factory=dict)
    cursors: list[HeldCursor] = field(default_factory=list)
    uploads: list[Upload] = field(default_factory=list)
    hooks: bool = False  # the target offers /_test/clock
    attachments: dict[str, list[str]] = field(default_factory=dict)  # blob id -> message ids
    collections: dict[tuple[str, str], Collection] = field(default_factory=dict)
    limits: dict[str, int] = field(default_factory=dict)  # as /v1/describe publishes them

    def page_size(self) -> int:
        """The largest page the kit asks for: 100, or the smaller published ``page_limit``."""
        return min(100, self.limits.get("page_limit", 100))

    # ----- authority -------------------------------------------------------------------------

    def live(self, token: Token) -> bool:
        """A token works while it is not revoked and its actor is not disabled."""
        return not token.revoked and not self.actors[(token.space, token.actor_id)].disabled

    def consumer_of(self, token: Token) -> Consumer:
        return self.consumers[(token.space, token.consumer_id)]

    # ----- feed ------------------------------------------------------------------------------

    def visible(self, item: Item, token: Token) -> bool:
        """protocol.md §8 for the token's consumer, scopes and grants, then its filter."""
        consumer = self.consumer_of(token)
        if item.space != token.space:
            return False
        if item.type in ("message", "receipt"):
            if not token.has("message.read"):
                return False
            if consumer.view == "inbox" and consumer.actor_id not in item.recipient_ids:
                return False
            if consumer.view == "space_log" and not token.has("space.observe"):
                return False
            if item.about_collection is not None and not (
                    token.has("memory.read") and token.may(item.about_collection, "read")):
                return False  # a receipt names the collection of its revision (docs/spec.md)
        elif item.type == "memory_revision":
            assert item.collection_id is not None
            if not (token.has("memory.read") and token.may(item.collection_id, "read")):
                return False
        # only a revision has a collection: a receipt about one matches no collection_ids
        # (WP-VIS-2), although it names the collection (``about_collection``)
        values = {"producer_ids": item.producer_id, "thread_ids": item.thread_id,
                  "item_types": item.type, "collection_ids": item.collection_id}
        for dimension, allowed in consumer.filter.items():
            if allowed and values[dimension] not in allowed:
                return False
        return True

    def index_after(self, space: str, position: int) -> int:
        """The commit index of the item at ``position`` (−1 for the start)."""
        if position == 0:
            return -1
        for item in self.items.get(space, []):
            if item.sequence == position:
                return item.index
        raise KeyError(f"no item of {space} has sequence {position}")

    def visible_after(self, token: Token, position: int) -> list[Item]:
        start = self.index_after(token.space, position)
        return [item for item in self.items.get(token.space, [])
                if item.index > start and self.visible(item, token)]

    def checkpoint_key(self, token: Token) -> tuple[str, str, int, str]:
        consumer = self.consumer_of(token)
        return (token.space, consumer.consumer_id, consumer.view_revision,
                token.grant_fingerprint)

    def checkpoint(self, token: Token) -> int:
        return self.checkpoints.get(self.checkpoint_key(token), 0)

    def cursor_problem(self, cursor: HeldCursor, token: Token) -> str | None:
        """Why ``token`` may not use ``cursor``: CURSOR_INVALID, CURSOR_STALE, or None."""
        consumer = self.consumer_of(token)
        if (cursor.space, cursor.actor_id, cursor.consumer_id) != (
                token.space, token.actor_id, token.consumer_id):
            return "CURSOR_INVALID"
        if (cursor.view_revision, cursor.grant_fingerprint) != (
                consumer.view_revision, token.grant_fingerprint):
            return "CURSOR_STALE"
        return None

    def append(self, space: str, **fields: Any) -> Item:
        items = self.items.setdefault(space, [])
        item = Item(index=len(items), space=space, **fields)
        items.append(item)
        return item

    # ----- messages --------------------------------------------------------------------------

    def readable_by(self, message: Message, token: Token) -> bool:
        """Producer, recipients or ``space.observe`` (the scope ``message.read`` aside)."""
        return message.space == token.space and (
            message.producer_id == token.actor_id or token.actor_id in message.recipient_ids
            or token.has("space.observe"))

    def send_errors(self, token: Token, body: dict[str, Any]) -> set[str]:
        """Every error code that applies to a new ``message.send`` (empty: it must succeed)."""
        errors: set[str] = set()
        if not token.has("message.send"):
            errors.add("FORBIDDEN")
        recipients = body.get("recipient_ids", [self.spaces[token.space]])
        for actor_id in recipients:
            if (token.space, actor_id) not in self.actors:
                errors.add("NOT_FOUND")
            elif not (token.recipients_any or actor_id in token.recipient_ids):
                errors.add("FORBIDDEN")
        thread = body["thread"]
        if "thread_id" in thread:
            members = self.threads.get((token.space, thread["thread_id"]))
            if members is None or token.actor_id not in members:
                errors.add("NOT_FOUND")
            elif any(actor_id not in members for actor_id in recipients):
                errors.add("FORBIDDEN")
        if "in_reply_to" in body:
            if "new" in thread:
                errors.add("INVALID_REQUEST")
            else:
                target = self.messages.get(body["in_reply_to"])
                if (target is None or target.thread_id != thread.get("thread_id")
                        or not self.readable_by(target, token) or not token.has("message.read")):
                    errors.add("NOT_FOUND")
        for blob_id in body.get("attachment_ids", []):
            if not self.referenceable(blob_id, token):
                errors.add("REFERENCE_INVALID")
        return errors

    # ----- blobs -----------------------------------------------------------------------------

    def blob(self, blob_id: str) -> Upload | None:
        return next((u for u in self.uploads if u.blob_id == blob_id and u.state == "sealed"),
                    None)

    def referenceable(self, blob_id: str, token: Token) -> bool:
        """P16: a sealed blob of the token's space, owned by its actor or granted."""
        blob = self.blob(blob_id)
        return blob is not None and blob.space == token.space and (
            blob.owner_id == token.actor_id or blob_id in token.blob_references)

    def blob_readable(self, blob_id: str, token: Token) -> bool:
        """P16: owner, a reader of a message attaching it, or a reference grant."""
        blob = self.blob(blob_id)
        if blob is None or blob.space != token.space:
            return False
        if blob.owner_id == token.actor_id or blob_id in token.blob_references:
            return True
        if self.revision_reader(token, lambda entries: any(
                entry.get("blob_id") == blob_id for entry in entries.values())):
            return True
        return token.has("message.read") and any(
            self.readable_by(self.messages[mid], token)
            for mid in self.attachments.get(blob_id, []))

    def revision_reader(self, token: Token, references: Any) -> bool:
        """Whether ``token`` reads some revision whose entries ``references`` accepts."""
        return token.has("memory.read") and any(
            collection.space == token.space and token.may(collection.collection_id, "read")
            and any(references(state) for state in collection.states)
            for collection in self.collections.values())

    def manifest_readable(self, collection: Collection, token: Token) -> bool:
        """A manifest blob: its publisher (the owner) or readers of the collection."""
        return collection.space == token.space and (
            collection.source_actor_id == token.actor_id
            or (token.has("memory.read") and token.may(collection.collection_id, "read")))

    # ----- receipts --------------------------------------------------------------------------

    def ack_errors(self, token: Token, items: list[Item | None], cursor: HeldCursor | None,
                   tampered: bool) -> set[str]:
        """Every error code that applies to a new ``receipt.ack``."""
        errors: set[str] = set()
        if not token.has("receipt.write"):
            errors.add("FORBIDDEN")
        if tampered:
            errors.add("CURSOR_INVALID")
        elif cursor is not None:
            problem = self.cursor_problem(cursor, token)
            if problem:
                errors.add(problem)
        for item in items:
            if item is None or not self.visible(item, token):
                errors.add("NOT_FOUND")
            elif item.type == "receipt":
                errors.add("INVALID_REQUEST")
        return errors

    def apply_ack(self, token: Token, lines: list[tuple[Item, str]],
                  position: int | None) -> dict[str, Any]:
        """Apply an accepted ACK; returns the answer the server must give."""
        results = []
        for item, stage in lines:
            assert item.item_id is not None
            key = (token.space, token.consumer_id, item.item_id)
            current, version = self.receipts.get(key, ("none", 0))
            if STAGE_RANK[stage] > STAGE_RANK[current]:
                version += 1
                self.receipts[key] = (stage, version)
                self.append(token.space, type="receipt", producer_id=token.actor_id,
                            recipient_ids=(item.producer_id,), thread_id=item.thread_id,
                            about_collection=item.collection_id,
                            receipt={"receipt_version": version, "subject_item_id": item.item_id,
                                     "subject_resource_id": _resource_id(item),
                                     "consumer_id": token.consumer_id,
                                     "actor_id": token.actor_id, "stage": stage})
                results.append({"item_id": item.item_id, "stage": stage,
                                 "receipt_version": version, "changed": True})
            else:
                results.append({"item_id": item.item_id, "stage": current,
                                "receipt_version": version, "changed": False})
        checkpoint = None
        if position is not None:
            where = self.checkpoint_key(token)
            self.checkpoints[where] = max(self.checkpoints.get(where, 0), position)
            checkpoint = str(self.checkpoints[where])
        return {"items": results, "checkpoint_sequence": checkpoint}


def _resource_id(item: Item) -> str:
    """A message item's message id; a memory_revision item's collection id (docs/spec.md)."""
    if item.message is not None:
        return str(item.message["message_id"])
    assert item.collection_id is not None
    return item.collection_id


def message_item_json(item: Item, committed_at: str) -> dict[str, Any]:
    """The feed item the server must show for a message."""
    return {"item_id": item.item_id, "sequence": str(item.sequence), "type": "message",
            "producer_id": item.producer_id, "recipient_ids": sorted(item.recipient_ids),
            "thread_id": item.thread_id, "committed_at": committed_at, "message": item.message}


# ----- memory collections (protocol.md §9) --------------------------------------------------

Entries = dict[str, dict[str, Any]]  # item_id -> the public entry shape (protocol.md §6)


@dataclass
class Collection:
    """A collection and every state it published: ``states[r]`` is revision ``r``'s entries
    (``states[0]`` the empty revision 0); what the server showed of each revision is kept so a
    later read must show the same (P13)."""

    collection_id: str
    space: str
    source_actor_id: str
    scope: str
    states: list[Entries] = field(default_factory=lambda: [{}])
    shown: dict[int, dict[str, Any]] = field(default_factory=dict)  # revision metadata
    items: dict[int, Item] = field(default_factory=dict)  # revision -> its feed item

    @property
    def head(self) -> int:
        return len(self.states) - 1


def next_state(parent: Entries, mode: str, items: list[dict[str, Any]],
               delete_ids: list[str], revision: int) -> Entries | str:
    """protocol.md §9: the state a publish makes on ``parent``, or the error code of input the
    parent makes invalid."""
    if any(item_id not in parent for item_id in delete_ids):
        return "INVALID_REQUEST"  # deleting an id never seen
    upserts = {item["item_id"]: item for item in items}
    state: Entries = {}
    for item_id, entry in parent.items():
        if item_id in upserts:
            continue
        gone = entry["state"] == "active" and (mode == "snapshot" or item_id in delete_ids)
        state[item_id] = ({"item_id": item_id, "state": "tombstone",
                           "deleted_in_revision": revision} if gone else entry)
    for item_id, item in upserts.items():
        state[item_id] = {"item_id": item_id, "state": "active", "path": item["path"],
                          "blob_id": item["blob_id"], "metadata": item.get("metadata", {})}
    paths = [entry["path"] for entry in state.values() if entry["state"] == "active"]
    if len(paths) != len(set(paths)):
        return "INVALID_REQUEST"  # two active entries on one path
    return state


def input_errors(mode: str, items: list[dict[str, Any]], delete_ids: list[str]) -> set[str]:
    """Input that is invalid whatever the collection holds."""
    ids = [item["item_id"] for item in items]
    paths = [item["path"] for item in items]
    if (len(set(ids)) != len(ids) or len(set(paths)) != len(paths)
            or len(set(delete_ids)) != len(delete_ids) or set(ids) & set(delete_ids)
            or (mode == "snapshot" and delete_ids)):
        return {"INVALID_REQUEST"}
    return set()
