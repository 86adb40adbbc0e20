"""Receipt commands of the kit (P01, P05, P09, P10): ACKs of 0–20 items with an optional
checkpoint, all or nothing; the ACK limits; a foreign item probed through an ACK."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waypost.properties import fingerprints
from waypost.properties.compare import MISSING, masked, protocol_view
from waypost.properties.model import Recorded

if TYPE_CHECKING:
    from waypost.properties.world import World

def ack(world: World, token: str, lines: list[list[Any]], cursor: Any,
        recheck: bool = False) -> None:
    """An ACK of distinct items (up to the published bound) and an optional checkpoint: all
    or nothing (P09, P10).
    With ``recheck``, the items it left processed are then acknowledged ``received`` and
    ``processed`` again: both must change nothing (the stage never goes back)."""
    acker = world.token(token)
    items = [world.item_ref(ref) for ref, _ in lines]
    body: dict[str, Any] = {"request_id": world.rid(), "items": [
        {"item_id": item.item_id if item is not None else MISSING, "stage": stage}
        for item, (_, stage) in zip(items, lines, strict=True)]}
    held = None if cursor in (None, "tampered") else world.model.cursors[cursor]
    if cursor is not None:
        body["checkpoint"] = {"cursor": "v1.tampered.cursor" if held is None else held.text}
    answer = world.as_(acker, "POST", "/v1/acks", body)
    if world.dead(acker, answer, "ACK"):
        return
    errors = world.model.ack_errors(acker, items, held, cursor == "tampered")
    if errors:
        foreign = any(i is not None and i.space != acker.space for i in items)
        world.expect_refusal(answer, errors, "P01" if foreign else "P10", "ACK")
        return
    position = None if held is None else held.position
    expected = world.model.apply_ack(acker, [(item, stage) for item, (_, stage)
                                             in zip(items, lines, strict=True)
                                             if item is not None], position)
    if not world.check("P10", answer.status == 200
                       and protocol_view(answer.json, expected) == expected,
                       "the ACK answer differs from the model", answer=answer.json,
                       expected=expected):
        return
    world.check("P03", not answer.replayed, "a first answer must not say Waypost-Replayed")
    world.model.submissions[(acker.space, acker.actor_id, "receipt.ack",
                             body["request_id"])] = Recorded(
        "receipt.ack", acker.space, acker.actor_id, acker.handle, body,
        fingerprints.ack_fingerprint(body, position), 200, expected)
    if recheck:
        _recheck(world, token, lines, expected)


def _recheck(world: World, token: str, lines: list[list[Any]],
             expected: dict[str, Any]) -> None:
    """The items an ACK left processed, acknowledged lower and equal again: no change."""
    done = [ref for (ref, _), result in zip(lines, expected["items"], strict=False)
            if result["stage"] == "processed"]
    if done:
        ack(world, token, [[ref, "received"] for ref in done], None)
        ack(world, token, [[ref, "processed"] for ref in done], None)


def ack_limits(world: World, token: str) -> None:
    """Past the published ACK limit is RESOURCE_LIMIT (or FORBIDDEN, for whichever token was
    drawn); neither items nor a checkpoint is INVALID_REQUEST; nothing is saved either way
    (P10). The limit phase checks the bound itself with real items (``limits``)."""
    acker = world.token(token)
    bound = world.model.limits.get("ack_items")
    answers = [world.as_(acker, "POST", "/v1/acks", {"request_id": world.rid(), "items": []})]
    if bound is not None:
        answers.append(world.as_(acker, "POST", "/v1/acks", {"request_id": world.rid(), "items": [
            {"item_id": f"fi-{n}", "stage": "received"} for n in range(bound + 1)]}))
    if world.dead(acker, answers[0], "ACK"):
        return
    world.expect_refusal(answers[0], {"INVALID_REQUEST", "FORBIDDEN"}, "P10", "an empty ACK")
    for over in answers[1:]:
        world.expect_refusal(over, {"RESOURCE_LIMIT", "FORBIDDEN"}, "P10",
                             f"an ACK of {bound} + 1 items")


def probe_foreign(world: World, token: str, item: list[Any]) -> None:
    """An item of the other space answers an ACK exactly like a missing one (P01)."""
    prober = world.token(token)
    target = world.item_ref(item)
    if target is None or target.space == prober.space or not world.model.live(prober) \
            or not prober.has("receipt.write"):
        return
    probed = (target.item_id, MISSING)
    answers = [world.as_(prober, "POST", "/v1/acks", {
        "request_id": world.rid(), "items": [{"item_id": item_id, "stage": "received"}]})
        for item_id in probed]
    shapes = [(a.status, a.code, masked(a.json, item_id))
              for a, item_id in zip(answers, probed, strict=True)]
    world.check("P01", answers[0].status == 404 and shapes[0] == shapes[1],
                "a foreign item must answer exactly like a missing one",
                foreign=answers[0].json, missing=answers[1].json)
