"""Receipt commands of the kit (P01, P05, P09, P10): ACKs of 0–20 items with an optional
checkpoint, all or nothing; the ACK limits; a foreign item probed through an ACK."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waypost.properties.model.matching import MISSING, masked, protocol_view, stable
from waypost.properties.model.state import STAGE_RANK, Item, Recorded, Token
from waypost.properties.protocol import fingerprints
from waypost.properties.verdicts.owners import refusal_ids

if TYPE_CHECKING:
    from waypost.properties.commands.world import World
    from waypost.properties.wire.http import Answer

#: The rule behind each code an ACK may be refused with (its own property's first).
REFUSALS: dict[str, tuple[str, ...]] = {
    "NOT_FOUND": ("WP-RCPT-3",), "INVALID_REQUEST": ("WP-RCPT-4",),
    "CURSOR_INVALID": ("WP-RCPT-11", "WP-CUR-2", "WP-CUR-3"),
    "CURSOR_STALE": ("WP-RCPT-11", "WP-CUR-4"), "FORBIDDEN": ("WP-AUTH-14", "WP-RCPT-1")}


def ack(world: World, token: str, lines: list[list[Any]], cursor: Any,
        recheck: bool = False, after_refusal: bool = False) -> None:
    """An ACK of distinct items (up to the published bound) and an optional checkpoint: all
    or nothing (P09, P10).
    With ``recheck``, the items it left processed are then acknowledged ``received`` and
    ``processed`` again: both must change nothing (the stage never goes back). A refused
    ACK's visible items that would advance are then acknowledged alone (``after_refusal``):
    each must advance, as nothing of the refused ACK may have been saved (P05)."""
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
        world.expect_refusal(answer, errors, ("WP-AUTH-13", "WP-RCPT-3") if foreign
                             else refusal_ids(errors, REFUSALS), "ACK")
        if "FORBIDDEN" not in errors and not after_refusal and answer.status >= 400:
            _nothing_saved(world, acker, items, lines)
        return
    position = None if held is None else held.position
    expected = world.model.apply_ack(acker, [(item, stage) for item, (_, stage)
                                             in zip(items, lines, strict=True)
                                             if item is not None], position)
    if not _answered(world, answer, expected, after_refusal):
        return
    world.check("WP-IDEM-7", not answer.replayed, "a first answer must not say Waypost-Replayed")
    world.model.submissions[(acker.space, acker.actor_id, "receipt.ack",
                             body["request_id"])] = Recorded(
        "receipt.ack", acker.space, acker.actor_id, acker.handle, body,
        fingerprints.ack_fingerprint(body, position), 200, expected)
    if recheck:
        _recheck(world, token, lines, expected)
        _retry_after_advances(world, acker, body, lines, expected)
        _receipt_refused(world, acker)
        _scope_needed(world, acker, lines)


def _nothing_saved(world: World, acker: Token, items: list[Item | None],
                   lines: list[list[Any]]) -> None:
    """The visible items of a refused ACK whose stage would advance, acknowledged alone: if
    the refused ACK saved any of them, their answers show it (P05's counterexample)."""
    advancing = [[ref, stage] for item, (ref, stage) in zip(items, lines, strict=True)
                 if item is not None and item.item_id is not None and item.type != "receipt"
                 and world.model.visible(item, acker)
                 and STAGE_RANK[stage] > STAGE_RANK[world.model.receipts.get(
                     (acker.space, acker.consumer_id, item.item_id), ("none", 0))[0]]]
    if advancing and world.model.live(acker) and acker.has("receipt.write"):
        ack(world, acker.handle, advancing, None, after_refusal=True)


def _answered(world: World, answer: Answer, expected: dict[str, Any],
              after_refusal: bool = False) -> bool:
    """The ACK's answer: its shape (P10), each item's stage, version and ``changed`` (P09), the
    checkpoint after it (P10)."""
    got = answer.json if isinstance(answer.json, dict) else {}
    if not world.check(("WP-HTTP-14", "WP-RCPT-5"), answer.status == 200 and isinstance(
            got.get("items"), list) and len(got["items"]) == len(expected["items"])
            and "checkpoint_sequence" in got,
            f"an ACK must answer 200 with one result per item, got {answer.status}",
            answer=answer.json, expected=expected):
        return False
    if not world.check(("WP-LOAD-3", "WP-RCPT-5") if after_refusal
                       else ("WP-RCPT-6", "WP-RCPT-7", "WP-RCPT-8"), protocol_view(
            got["items"], expected["items"]) == expected["items"],
            "an ACK of items a refused ACK named found receipts the refused ACK saved"
            if after_refusal else
            "an ACK's item results differ from the model: a stage that went back, a version "
            "that did not move with a real advance, or a no-op that claims a change",
            answer=got["items"], expected=expected["items"]):
        return False
    return world.check(("WP-RCPT-12", "WP-RCPT-11"),
                       got["checkpoint_sequence"] == expected["checkpoint_sequence"],
                       "checkpoint_sequence must be the saved checkpoint after the ACK "
                       "(the maximum of the saved and the given position), or null",
                       answer=got["checkpoint_sequence"],
                       expected=expected["checkpoint_sequence"])


def _recheck(world: World, token: str, lines: list[list[Any]],
             expected: dict[str, Any]) -> None:
    """The items an ACK left processed, acknowledged lower and equal again: no change."""
    done = [ref for (ref, _), result in zip(lines, expected["items"], strict=False)
            if result["stage"] == "processed"]
    if done:
        ack(world, token, [[ref, "received"] for ref in done], None)
        ack(world, token, [[ref, "processed"] for ref in done], None)


def _receipt_refused(world: World, acker: Token) -> None:
    """The newest receipt item the acker sees, acknowledged alone: refused (WP-RCPT-4)."""
    shown = [item for item in world.model.items.get(acker.space, [])
             if item.type == "receipt" and item.item_id is not None
             and world.model.visible(item, acker)]
    if shown:
        ack(world, acker.handle, [[[world.space_name(acker), shown[-1].index], "received"]],
            None, after_refusal=True)


def _scope_needed(world: World, acker: Token, lines: list[list[Any]]) -> None:
    """The same items acknowledged through a live token of the space without
    ``receipt.write``: refused, nothing saved (WP-RCPT-1)."""
    other = next((token for token in world.model.tokens.values()
                  if token.space == acker.space and world.model.live(token)
                  and not token.has("receipt.write")), None)
    if other is not None:
        ack(world, other.handle, lines, None, after_refusal=True)


def _retry_after_advances(world: World, acker: Token, body: dict[str, Any],
                          lines: list[list[Any]], expected: dict[str, Any]) -> None:
    """The items an ACK left ``received`` advanced to ``processed``, then the ACK itself
    again: it must answer its own moment's stages and versions, not the current ones (P10's
    counterexample)."""
    received = [ref for (ref, _), result in zip(lines, expected["items"], strict=False)
                if result["stage"] == "received"]
    if not received:
        return
    ack(world, acker.handle, [[ref, "processed"] for ref in received], None)
    answer = world.as_(acker, "POST", "/v1/acks", body)
    if world.dead(acker, answer, "ACK retry"):
        return
    world.check(("WP-RCPT-13", "WP-IDEM-8", "WP-IDEM-6"), answer.status == 200
                and protocol_view(stable(answer.json), expected) == expected,
                "a retried ACK must answer the stages and versions of its own moment, not the "
                "receipts' current ones", answer=answer.json, status=answer.status,
                expected=expected)


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
    world.expect_refusal(answers[0], {"INVALID_REQUEST", "FORBIDDEN"}, "WP-RCPT-2",
                         "an empty ACK")
    for over in answers[1:]:
        world.expect_refusal(over, {"RESOURCE_LIMIT", "FORBIDDEN"}, ("WP-RCPT-2", "WP-LIM-3"),
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
    world.check(("WP-AUTH-13", "WP-RCPT-3"), answers[0].status == 404 and shapes[0] == shapes[1],
                "a foreign item must answer exactly like a missing one",
                foreign=answers[0].json, missing=answers[1].json)
