"""Idempotency commands of the kit (P03, P04, P01): an earlier write again, unchanged (the
identical stable result, marked replayed) or changed (IDEMPOTENCY_CONFLICT); the submission
lookup with the kit's own fingerprint; another actor's use of the same request_id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waypost.properties.commands.messages import submit_send
from waypost.properties.model.matching import protocol_view, stable
from waypost.properties.model.state import Recorded

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

PATHS = {"message.send": "/v1/messages", "receipt.ack": "/v1/acks", "blob.prepare": "/v1/blobs"}


def path_of(sub: Recorded) -> str:
    return sub.path or PATHS[sub.operation]


def retry(world: World, submission: int, when: str = "") -> None:
    """The same request again (``when``: after what, for the message): the identical stable
    result, marked replayed (P03)."""
    sub = world.recorded(submission)
    sender = world.token(sub.token)
    answer = world.as_(sender, "POST", path_of(sub), sub.body)
    if world.dead(sender, answer, "retry"):
        return
    first = stable(sub.result)
    world.check((*(("WP-RCPT-13",) if sub.operation == "receipt.ack" else ()),
                 "WP-IDEM-6", "WP-IDEM-8", "WP-IDEM-4", "WP-ERR-4"),
                (answer.status, protocol_view(stable(answer.json), first)) == (sub.status, first),
                f"a retry{when} must return the identical stable result", answer=answer.json,
                status=answer.status, first=sub.result, operation=sub.operation)
    world.check("WP-IDEM-6", answer.replayed,
                f"a replayed answer{when} must carry Waypost-Replayed: true")


def altered(sub: Recorded) -> dict[str, Any] | None:
    """The submission's body with one thing changed (None where nothing can change: the body
    of ``blob.commit`` is only its request id, an ACK may have no items)."""
    body = dict(sub.body)
    if sub.operation == "message.send":
        body["subject"] = sub.body["subject"] + " (changed)"
    elif sub.operation == "blob.prepare":
        body["content_type"] = "application/x-changed"
    elif sub.operation == "memory.publish":
        body["mode"] = "snapshot" if sub.body["mode"] == "delta" else "delta"
        body.pop("delete_ids", None)
    elif sub.operation == "receipt.ack" and sub.body["items"]:
        first = dict(sub.body["items"][0])
        first["stage"] = "processed" if first["stage"] == "received" else "received"
        body["items"] = [first, *sub.body["items"][1:]]
    else:
        return None
    return body


def conflict(world: World, submission: int) -> None:
    """The same key with another request: IDEMPOTENCY_CONFLICT, nothing changes (P03)."""
    sub = world.recorded(submission)
    sender = world.token(sub.token)
    body = altered(sub)
    if body is None:
        return
    answer = world.as_(sender, "POST", path_of(sub), body)
    if world.dead(sender, answer, "retry"):
        return
    world.expect_refusal(answer, {"IDEMPOTENCY_CONFLICT"}, ("WP-IDEM-9", "WP-IDEM-4"),
                         "a changed retry")


def lookup(world: World, submission: int) -> None:
    """The submission lookup: its state, the fingerprint the kit computes, the result
    (P03, P04)."""
    sub = world.recorded(submission)
    asker = world.token(sub.token)
    answer = world.as_(asker, "GET",
                       f"/v1/submissions/{sub.operation}/{sub.body['request_id']}")
    if world.dead(asker, answer, "lookup"):
        return
    found = answer.json if isinstance(answer.json, dict) else {}
    held = found.get("result")
    result: dict[str, Any] = held if isinstance(held, dict) else {}
    wanted = {"status": sub.status, "body": stable(sub.result)}
    shown = {"status": result.get("status"), "body": stable(result.get("body"))}
    if not world.check(("WP-IDEM-13", "WP-IDEM-10"), answer.status == 200
                       and found.get("state") == sub.state
                       and protocol_view(shown, wanted) == wanted,
                       f"the key must hold the {sub.state} stable result", answer=answer.json,
                       status=answer.status, expected={"state": sub.state, "result": wanted}):
        return
    world.check(("WP-IDEM-2", "WP-IDEM-3", "WP-VAL-12"), found.get("fingerprint") == sub.fingerprint,
                "the recorded fingerprint is not SHA-256(JCS(normalised request))",
                answer=answer.json, expected=sub.fingerprint)


def reuse_key(world: World, token: str, submission: int) -> None:
    """Another actor sends with a request_id some actor already used: a key is (space,
    producer, operation, request_id), so this is a new submission, never a replay of the
    other one; and the other's key is invisible to this actor's lookup (P03, P01)."""
    sub = world.recorded(submission)
    sender = world.token(token)
    if sub.operation != "message.send" or (sender.actor_id, sender.space) == (
            sub.actor_id, sub.space):
        return
    request_id = sub.body["request_id"]
    lookup = world.as_(sender, "GET", f"/v1/submissions/message.send/{request_id}")
    if (sender.space, sender.actor_id, "message.send", request_id) in world.model.submissions:
        return  # this actor used the id too: that is a plain retry, covered elsewhere
    if world.model.live(sender):
        world.expect_refusal(lookup, {"NOT_FOUND"}, ("WP-IDEM-14", "WP-IDEM-1"),
                             "a lookup of another actor's key")
    body = dict(sub.body)
    if sender.space != sub.space:
        body = {**body, "thread": {"new": True}}
        for field in ("in_reply_to", "recipient_ids", "attachment_ids"):
            body.pop(field, None)
    submit_send(world, sender, body)
