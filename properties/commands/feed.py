"""Feed commands of the kit (P06–P09): pages from the checkpoint or a held cursor compared item
by item with the model's visible items, whole views paged through with random page sizes,
tampered cursors. The history checker names what a wrong page lost, doubled or reordered."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from waypost.properties.model.history import Anomaly, analyse
from waypost.properties.model.matching import protocol_view, shaped
from waypost.properties.model.state import HeldCursor, Item, Token
from waypost.properties.wire.http import Answer

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

PAGE = {"items", "next_cursor", "has_more"}


def read_feed(world: World, token: str, cursor: int | None, limit: int) -> None:
    """One page from the checkpoint or a held cursor, compared item by item (P06–P08)."""
    reader = world.token(token)
    params: dict[str, Any] = {"limit": limit}
    held = None if cursor is None else world.model.cursors[cursor]
    if held is not None:
        params["cursor"] = held.text
    answer = world.as_(reader, "GET", "/v1/feed", params=params)
    if world.dead(reader, answer, "feed"):
        return
    if held is not None:
        problem = world.model.cursor_problem(held, reader)
        if problem:
            rules = ("WP-CUR-3",) if problem == "CURSOR_INVALID" else ("WP-CUR-4", "WP-CTRL-9")
            world.expect_refusal(answer, {problem}, ("WP-AUTH-13", *rules)
                                 if held.space != reader.space else (*rules, "WP-CUR-1"),
                                 "a cursor of another binding")
            return
    position = held.position if held is not None else world.model.checkpoint(reader)
    check_page(world, reader, position, limit, answer, from_checkpoint=held is None,
               rotated=held is not None and held.token != reader.handle)


def check_view(world: World, token: str, sizes: list[int] | None = None) -> None:
    """Page through the consumer's whole view from its checkpoint, following the server's
    cursors with the given page sizes (cycled): it must equal the model's visible set, in
    order, each item exactly once (P05, P06, P08, P09)."""
    reader = world.token(token)
    if not world.model.live(reader):
        return
    sizes = sizes or [world.model.page_size()]
    position: int | None = world.model.checkpoint(reader)
    answer = world.as_(reader, "GET", "/v1/feed", params={"limit": sizes[0]})
    for page in itertools.count(1):
        assert position is not None
        position = check_page(world, reader, position, sizes[(page - 1) % len(sizes)], answer,
                              from_checkpoint=page == 1)
        if position is None or not answer.json["has_more"]:
            break
        answer = world.as_(reader, "GET", "/v1/feed", params={
            "limit": sizes[page % len(sizes)], "cursor": answer.json["next_cursor"]})


def tamper(world: World, token: str, cursor: int, where: int) -> None:
    """Any changed character of a cursor is CURSOR_INVALID, with no data read (P07)."""
    reader = world.token(token)
    text = world.model.cursors[cursor].text
    index = where % len(text)
    replacement = "A" if text[index] != "A" else "B"
    tampered = text[:index] + replacement + text[index + 1:]
    answer = world.as_(reader, "GET", "/v1/feed", params={"cursor": tampered})
    if world.dead(reader, answer, "feed"):
        return
    world.expect_refusal(answer, {"CURSOR_INVALID"}, ("WP-CUR-2", "WP-VAL-23"),
                         "a tampered cursor")


def check_page(world: World, reader: Token, position: int, limit: int, answer: Answer,
               from_checkpoint: bool = False, rotated: bool = False) -> int | None:
    """Compare one page with the model; bind receipt and revision items seen for the first
    time; return the page's end position (None if the page was wrong). A page read without a
    cursor starts at the checkpoint of the reader's view and grants (WP-RCPT-10); one read
    with a cursor another token of the same grants was given shows it still valid
    (WP-CUR-5)."""
    if not _well_formed(world, answer):
        return None
    page = answer.json
    expected = world.model.visible_after(reader, position)
    shown = page["items"]
    world.check("WP-FEED-2", len(shown) <= limit, "a page holds at most limit items",
                shown=len(shown), limit=limit)
    want = expected[:min(limit, len(shown)) if page["has_more"] else limit]
    anomalies = analyse([expected_id(item, got) for item, got in
                         zip(want, shown + [None] * len(want), strict=False)],
                        [got["item_id"] for got in shown],
                        [int(got["sequence"]) for got in shown])
    also = (*(("WP-RCPT-10",) if from_checkpoint else ()), *(("WP-CUR-5",) if rotated else ()))
    blamed = _blame(world, reader, want, shown, anomalies) if anomalies \
        else _verified(world, reader)
    if not world.check((*blamed, *also), not anomalies,
                       "the page differs from the consumer's visible items",
                       anomalies=[a.as_json() for a in anomalies], position=position,
                       limit=limit):
        return None
    if not world.check("WP-FEED-2", len(want) == len(shown),
                       "the page holds other items than the visible ones after its position",
                       shown=len(shown), visible=len(want)):
        return None
    for item, got in zip(want, shown, strict=True):
        compare_item(world, item, got)
    world.check("WP-FEED-5", page["has_more"] == (len(expected) > len(shown)),
                "has_more is wrong",
                has_more=page["has_more"], visible=len(expected), shown=len(shown))
    end = want[len(shown) - 1].sequence if shown else position
    assert end is not None  # every item shown is bound now
    consumer = world.model.consumer_of(reader)
    world.model.cursors.append(HeldCursor(page["next_cursor"], reader.space, reader.actor_id,
                                          reader.consumer_id, consumer.view_revision,
                                          reader.grant_fingerprint, end, reader.handle))
    return end


def _well_formed(world: World, answer: Answer) -> bool:
    """A page: ``items`` (objects with an id and a decimal sequence), a cursor, ``has_more``."""
    page = answer.json
    if not world.check(("WP-HTTP-13", "WP-FEED-4"), answer.status == 200 and shaped(page, PAGE),
                       f"feed read failed: {answer.status}", answer=page):
        return False
    return world.check(("WP-HTTP-13", "WP-HTTP-12", "WP-VAL-9"), isinstance(page["items"], list)
                       and isinstance(page["next_cursor"], str)
                       and isinstance(page["has_more"], bool)
                       and all(_item_shape(got) for got in page["items"]),
                       "a feed page must hold items with an item_id and a decimal sequence, "
                       "a next_cursor and has_more", answer=page)


def _item_shape(got: Any) -> bool:
    return (isinstance(got, dict) and isinstance(got.get("item_id"), str)
            and isinstance(got.get("sequence"), str) and got["sequence"].isdigit())


def _blame(world: World, reader: Token, want: list[Item], shown: list[dict[str, Any]],
           anomalies: list[Anomaly]) -> tuple[str, ...]:
    """The rules a wrong page breaks. Items the consumer must never see point at visibility
    (P08) or, when they are all receipts, at receipt history (P09), or when they are all
    revisions the model never saw published, at no-op publication (P12); anything else is
    paging itself (P06)."""
    types = {**{i.item_id: i.type for i in want if i.item_id},
             **{got["item_id"]: got.get("type") for got in shown}}
    strays = _strays(world, reader, shown, anomalies)
    stray_types = {types.get(item_id) for item_id in strays}
    if not strays:
        return ("WP-FEED-3", "WP-FEED-2", "WP-FEED-9")
    if stray_types == {"receipt"}:
        return ("WP-RCPT-7", "WP-VIS-1", "WP-VIS-3")
    if stray_types == {"memory_revision"} and not known_revisions(
            world, [got for got in shown if got["item_id"] in strays]):
        return ("WP-MEM-15", "WP-VIS-1")
    return ("WP-VIS-1", "WP-VIS-2", "WP-VIS-3", "WP-VIS-4", "WP-CTRL-8")


def _verified(world: World, reader: Token) -> tuple[str, ...]:
    """What a page equal to the model's visible items shows holds: paging (P06), and the
    visibility rules the model applied to compute it (P08): the table and the server's own
    computation always, the filter's dimensions where the consumer has a filter, receipts
    about revisions where the space holds any."""
    consumer = world.model.consumer_of(reader)
    filtered = any(consumer.filter.values())
    about_revisions = any(item.type == "receipt" and item.about_collection
                          for item in world.model.items.get(reader.space, []))
    return ("WP-FEED-3", "WP-FEED-2", "WP-FEED-9", "WP-VIS-1", "WP-VIS-4",
            *(("WP-VIS-2", "WP-CTRL-8") if filtered else ()),
            *(("WP-VIS-3",) if about_revisions else ()))


def _strays(world: World, reader: Token, shown: list[dict[str, Any]],
            anomalies: list[Anomaly]) -> set[str]:
    """The ids of items shown that the consumer may never see."""
    visible = world.model.visible_after(reader, 0)
    visible_ids = {i.item_id for i in visible if i.item_id}
    unbound = [i for i in visible if i.item_id is None]
    by_id = {got["item_id"]: got for got in shown}
    return {item_id for a in anomalies if a.kind == "unexpected"
            for item_id in a.item_ids if item_id not in visible_ids
            and not any(matches_unbound(i, by_id.get(item_id, {})) for i in unbound)}


def known_revisions(world: World, shown: list[dict[str, Any]]) -> bool:
    """Whether every revision item shown is one the model knows was published (an unknown
    one is a revision that should not exist, e.g. from a no-op publish)."""
    known = {(c.collection_id, revision) for c in world.model.collections.values()
             for revision in c.items}
    details = [got.get("memory_revision") for got in shown]
    return all(isinstance(d, dict) and (d.get("collection_id"), d.get("revision")) in known
               for d in details)


def expected_id(item: Item, got: dict[str, Any] | None) -> str:
    """The id the model expects at this place; an unbound item (a receipt or a revision,
    whose id no answer told) takes the id shown if the item shown is that item."""
    if item.item_id is not None:
        return item.item_id
    if got is not None and matches_unbound(item, got):
        return str(got["item_id"])
    return f"<{item.type} {item.receipt or item.memory} not shown>"


def matches_unbound(item: Item, got: dict[str, Any]) -> bool:
    wanted = item.receipt if item.type == "receipt" else item.memory
    detail = got.get(item.type)
    return (got.get("type") == item.type and isinstance(detail, dict) and wanted is not None
            and all(detail.get(k) == v for k, v in wanted.items()))


def compare_item(world: World, item: Item, got: dict[str, Any]) -> None:
    """An item shown before must be shown identically; a first sight binds the model's item
    to the server's id and sequence and checks where it is routed (P05, P06, P09)."""
    if item.shown is not None:
        world.check(("WP-RCPT-7", "WP-FEED-8") if item.type == "receipt" else "WP-FEED-8",
                    protocol_view(got, item.shown) == item.shown,
                    "a published item changed or differs from what was published",
                    shown=got, expected=item.shown)
        return
    bound = [i.sequence for i in world.model.items[item.space]
             if i.sequence is not None and i.index < item.index]
    world.check(("WP-FEED-1", "WP-FEED-3"), all(int(got["sequence"]) > s for s in bound),
                f"a {item.type} item must come after everything committed before it",
                item=got)
    item.item_id, item.sequence = got["item_id"], int(got["sequence"])
    item.shown = got
    recipients = got.get("recipient_ids")
    world.check(("WP-RCPT-7", *(("WP-MEM-30",) if item.about_collection else ()))
                if item.type == "receipt" else ("WP-MEM-29", "WP-MEM-17")
                if item.type == "memory_revision" else ("WP-MSG-9", "WP-HTTP-12"),
                got.get("producer_id") == item.producer_id and isinstance(recipients, list)
                and sorted(recipients) == sorted(item.recipient_ids)
                and got.get("thread_id") == item.thread_id, f"{item.type} item routing",
                item=got)
