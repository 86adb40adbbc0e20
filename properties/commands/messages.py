"""Message commands of the kit (P02, P05, P06, P16): a send publishes exactly one message item
that reads back byte for byte; a refused send publishes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waypost.properties.model.matching import MISSING, protocol_view, shaped
from waypost.properties.model.state import Message, Recorded, Token, message_item_json
from waypost.properties.protocol import fingerprints
from waypost.properties.verdicts.owners import refusal_ids

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

SEND_ANSWER = {"message_id", "thread_id", "feed_item_id", "sequence", "committed_at"}
#: The rule behind each code a send may be refused with (P05's first; FORBIDDEN alone is P02).
REFUSALS: dict[str, tuple[str, ...]] = {
    "NOT_FOUND": ("WP-MSG-3", "WP-MSG-5", "WP-MSG-6"), "INVALID_REQUEST": ("WP-MSG-6",),
    "REFERENCE_INVALID": ("WP-MSG-8", "WP-AUTH-7"),
    "FORBIDDEN": ("WP-AUTH-14", "WP-MSG-1", "WP-MSG-3", "WP-MSG-5", "WP-AUTH-6")}


def send_body(world: World, token: Token, recipients: list[str] | None, thread: Any,
              reply: int | None, kind: str, subject: str, text: str,
              options: list[str] | None, attachments: list[int] | None = None
              ) -> dict[str, Any]:
    """The request body of a send: ``thread`` is "new", "missing" or the number of a message
    whose thread to post in; ``reply`` and ``attachments`` number messages and uploads."""
    body: dict[str, Any] = {"request_id": world.rid(), "kind": kind, "subject": subject,
                            "body": {"text": text}}
    if recipients is not None:
        body["recipient_ids"] = recipients
    if thread == "new":
        body["thread"] = {"new": True}
    elif thread == "missing":
        body["thread"] = {"thread_id": MISSING}
    else:
        body["thread"] = {
            "thread_id": world.model.messages[world.message_order[thread]].thread_id}
    if reply is not None:
        body["in_reply_to"] = world.message_order[reply]
    if options is not None:
        body["body"]["options"] = options
    if attachments is not None:
        body["attachment_ids"] = [world.model.uploads[k].blob_id for k in attachments]
    return body


def send(world: World, token: str, recipients: list[str] | None, thread: Any,
         reply: int | None, kind: str, subject: str, text: str, options: list[str] | None,
         attachments: list[int] | None = None) -> None:
    """``message.send``: success publishes exactly one message item; refusals nothing."""
    sender = world.token(token)
    body = send_body(world, sender, recipients, thread, reply, kind, subject, text, options,
                     attachments)
    submit_send(world, sender, body)


def submit_send(world: World, sender: Token, body: dict[str, Any]) -> None:
    """Send ``body`` and compare the answer with the model (shared by send and reuse)."""
    answer = world.as_(sender, "POST", "/v1/messages", body)
    if world.dead(sender, answer, "send"):
        return
    errors = world.model.send_errors(sender, body)
    if errors:
        world.expect_refusal(answer, errors, refusal_ids(errors, REFUSALS), "send")
        return
    if not world.check(("WP-MSG-9", "WP-MSG-2", *_accepted_rules(world, sender, body)),
                       answer.status == 201,
                       f"send should publish, got {answer.status}",
                       answer=answer.json, request=body):
        return
    record_send(world, sender, body, answer.json, first=answer.replayed)


def _accepted_rules(world: World, sender: Token, body: dict[str, Any]) -> tuple[str, ...]:
    """What else an accepted send shows: the space's default actor as the recipient of a send
    without recipients (WP-CTRL-6), a disabled actor as a valid recipient (WP-CTRL-15)."""
    model = world.model
    recipients = body.get("recipient_ids", [model.spaces[sender.space]])
    disabled = any(model.actors[(sender.space, a)].disabled for a in recipients
                   if (sender.space, a) in model.actors)
    return (*(("WP-CTRL-6",) if "recipient_ids" not in body else ()),
            *(("WP-CTRL-15",) if disabled else ()))


def record_send(world: World, sender: Token, body: dict[str, Any], result: Any,
                first: bool | None = None) -> None:
    """A send the server published (its answer ``result``): the message and the submission.
    ``first`` is the replay mark of a first answer, which must be unset (P03)."""
    if not world.check(("WP-HTTP-10", "WP-VAL-9"),
                       shaped(result, SEND_ANSWER) and _sequence(result) is not None,
                       "send answer shape", answer=result):
        return
    if first is not None:
        world.check("WP-IDEM-7", not first, "a first answer must not say Waypost-Replayed")
    record_message(world, sender, body, result)
    world.model.submissions[(sender.space, sender.actor_id, "message.send",
                             body["request_id"])] = Recorded(
        "message.send", sender.space, sender.actor_id, sender.handle, body,
        fingerprints.send_fingerprint(body), 201, result)


def _sequence(result: dict[str, Any]) -> int | None:
    try:
        return int(result["sequence"])
    except (TypeError, ValueError):
        return None


def record_message(world: World, sender: Token, body: dict[str, Any],
                   result: dict[str, Any]) -> None:
    """The model learns a published message: its thread, its feed item, its content."""
    model, space = world.model, sender.space
    recipients = tuple(sorted(set(body.get("recipient_ids", [model.spaces[space]]))))
    thread_id = result["thread_id"]
    if "new" in body["thread"]:
        world.check("WP-MSG-4", (space, thread_id) not in model.threads,
                    "a new thread must get a new id", answer=result)
        model.threads[(space, thread_id)] = {sender.actor_id, *recipients}
    else:
        world.check("WP-MSG-5", thread_id == body["thread"]["thread_id"], "reply in the same thread",
                    answer=result)
    sequence = int(result["sequence"])
    bound = [i.sequence for i in model.items.get(space, []) if i.sequence]
    world.check("WP-FEED-1", all(sequence > s for s in bound),
                "a new item's sequence must be above every earlier one (never reused)",
                sequence=sequence, highest=max(bound, default=0))
    item = model.append(space, type="message", producer_id=sender.actor_id,
                        recipient_ids=recipients, thread_id=thread_id,
                        item_id=result["feed_item_id"], sequence=sequence,
                        message={"message_id": result["message_id"],
                                 "subject": body["subject"], "kind": body["kind"]})
    item.shown = message_item_json(item, result["committed_at"])
    content = body["body"]
    shown = {"message_id": result["message_id"], "thread_id": thread_id,
             "in_reply_to": body.get("in_reply_to"), "producer_id": sender.actor_id,
             "recipient_ids": list(recipients), "kind": body["kind"],
             "subject": body["subject"],
             "body": {"text": content["text"], "options": content.get("options", []),
                      "source_uri": content.get("source_uri")},
             "attachment_ids": body.get("attachment_ids", []),
             "metadata": body.get("metadata"),
             "committed_at": result["committed_at"], "feed_item_id": result["feed_item_id"],
             "sequence": result["sequence"]}
    model.messages[result["message_id"]] = Message(
        result["message_id"], space, thread_id, sender.actor_id, recipients, shown, item)
    world.message_order.append(result["message_id"])
    for blob_id in body.get("attachment_ids", []):
        model.attachments.setdefault(blob_id, []).append(result["message_id"])


def read_message(world: World, token: str, target: int | None) -> None:
    """Full message to producer, recipients, observers with ``message.read``; else exactly
    the answer of a missing message (P01, P05, P08)."""
    reader = world.token(token)
    message_id = MISSING if target is None else world.message_order[target]
    answer = world.as_(reader, "GET", f"/v1/messages/{message_id}")
    if world.dead(reader, answer, "read"):
        return
    message = world.model.messages.get(message_id)
    if message is None or not world.model.readable_by(message, reader):
        foreign = message is not None and message.space != reader.space
        world.expect_like_missing(answer, reader, "/v1/messages/{}", message_id,
                                  ("WP-AUTH-13", "WP-MSG-11") if foreign
                                  else ("WP-VIS-4", "WP-AUTH-13", "WP-MSG-11"),
                                  "an invisible or foreign message")
        return
    if not reader.has("message.read"):
        world.expect_refusal(answer, {"FORBIDDEN"}, ("WP-AUTH-14", "WP-MSG-11"),
                             "read without message.read")
        return
    world.check(("WP-MSG-12", "WP-MSG-10", "WP-HTTP-11"),
                answer.status == 200 and protocol_view(answer.json, message.shown)
                == message.shown, "the message must read back exactly as published",
                answer=answer.json, expected=message.shown)
