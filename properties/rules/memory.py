"""Rules of memory: publishes (snapshot or delta, inline or manifest, at the head or beside
it), histories of several publishes in a row, races of two publishers, reads of heads and fixed
revisions, item cursors moved to another revision, the revision limit (P01, P11–P14, P16)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from waypost.properties.commands import memory as memory_commands
from waypost.properties.commands import revisions
from waypost.properties.commands.memory import PATHS
from waypost.properties.model.state import COLLECTIONS
from waypost.properties.rules.driver import METADATA, RuleDriver, sample
from waypost.properties.rules.hypothesis_hooks import StepDraws

ACTIONS = ["publish"] * 8 + ["read"] * 3 + ["head", "race", "cursor", "limit", "history"]


def memory(d: RuleDriver, data: StepDraws) -> None:
    """One memory action by a writer of some collection (mostly) or any token, on its own
    collection (mostly), another or a missing one (P11–P14, P16)."""
    action = data.draw(st.sampled_from(ACTIONS))
    writers = d.writers()
    writers = writers[:1] * 4 + writers  # most publishes build up one collection's history
    token = sample(data, writers if writers and data.draw(
        st.sampled_from([True, True, True, False])) else d.handles())
    holder = d.model.tokens[token]
    own = [cid for cid, actions in holder.collections.items() if "write" in actions]
    known = [cid for _, cid, _ in COLLECTIONS]
    collection = sample(data, [*own * 10, *known, "zz-missing"])
    if action == "head":
        d.run(revisions.read_collection, token=token, collection=collection)
    elif action in ("read", "cursor"):
        _read(d, data, action, token, collection)
    elif action == "limit":
        d.run(memory_commands.revision_limit, token=token, collection=collection)
    elif action == "history":
        _history(d, data, token, collection)
    else:
        _write(d, data, action, token, collection)


def _head(d: RuleDriver, token: str, collection: str) -> int:
    target = d.model.collections.get((d.model.tokens[token].space, collection))
    return target.head if target is not None else 0


def _read(d: RuleDriver, data: StepDraws, action: str, token: str, collection: str) -> None:
    """A fixed revision read with random page sizes, or an item cursor moved elsewhere (P13)."""
    if action == "cursor":  # a collection with two revisions to move a cursor between
        holder = d.model.tokens[token]
        collection = next((cid for (space, cid), target in d.model.collections.items()
                           if space == holder.space and target.head >= 2
                           and holder.may(cid, "read")), collection)
    revision = data.draw(st.integers(0, _head(d, token, collection) + 1))
    if action == "cursor":
        d.run(revisions.cursor_elsewhere, token=token, collection=collection, revision=revision)
        return
    d.run(revisions.read_revision, token=token, collection=collection, revision=revision,
          sizes=data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)),
          tombstones=data.draw(st.booleans()))


def _write(d: RuleDriver, data: StepDraws, action: str, token: str, collection: str) -> None:
    """A publish or a race, with entries on blobs the writer owns (or, when deliberately
    wrong, any blob and colliding paths)."""
    blobs = d.owned_blobs(data, token)
    wrong = data.draw(st.sampled_from([False, False, False, False, True]))
    pool = blobs if not wrong else blobs + list(range(len(d.model.uploads)))
    if not pool:
        return
    if action == "race":
        fresh = list(range(7, 12))  # ids only a race adds
        change = data.draw(st.lists(st.sampled_from(fresh).flatmap(
            lambda n: st.tuples(st.just(n), st.just(n + 20), st.sampled_from(blobs or pool),
                                st.none())), min_size=1, max_size=2, unique_by=lambda e: e[0]))
        d.run(memory_commands.race, token=token, collection=collection, items=[list(e) for e in change])
        return
    _publish(d, data, token, collection, pool, wrong)


def _history(d: RuleDriver, data: StepDraws, token: str, collection: str) -> None:
    """Three or four valid publishes in a row at the head: entries, a snapshot that tombstones
    those it does not list, then one or two drawn freely. Later revisions must carry, or
    revive, the tombstones of earlier ones (P13, P14), which only a publish after a tombstone
    shows; drawn freely, such chains are rare."""
    blobs = d.owned_blobs(data, token)
    if not blobs:
        return
    for mode in ["delta", "snapshot", *[None] * data.draw(st.integers(1, 2))]:
        _publish(d, data, token, collection, blobs, False, offset=0, manifest=False, mode=mode,
                 min_items=0 if mode is None else 1)


def _publish(d: RuleDriver, data: StepDraws, token: str, collection: str, pool: list[int],
             wrong: bool, offset: int | None = None, manifest: bool | None = None,
             mode: str | None = None, min_items: int = 0) -> None:
    """One publish of entries on ``pool``'s blobs (snapshot or delta, maybe deletes); the
    offset from the head, the manifest input and the mode are drawn unless given."""
    # An item keeps its own path (n) or moves to n + 7, so paths rarely collide unless the
    # draw is deliberately wrong.
    entry = st.integers(0, 6).flatmap(lambda n: st.tuples(
        st.just(n), st.sampled_from([n, n, n, n + 7]) if not wrong else st.integers(0, 8),
        st.sampled_from(pool), st.none() | st.fixed_dictionaries({"k": st.integers(0, 2)})
        | st.sampled_from(METADATA)))
    items = data.draw(st.lists(entry, min_size=min_items, max_size=4) if wrong else st.lists(
        entry, min_size=min_items, max_size=4, unique_by=(lambda e: e[0], lambda e: e[1])))
    if mode is None:
        mode = data.draw(st.sampled_from(["delta", "snapshot"]))
    deletes = _deletes(d, data, token, collection, mode, items, wrong)
    if offset is None:
        offset = data.draw(st.sampled_from([0, 0, 0, 0, 0, -1, 1]))
    if manifest is None:
        manifest = data.draw(st.sampled_from([False, False, False, True]))
    target = d.model.collections.get((d.model.tokens[token].space, collection))
    before = (target.head, bool(target.states[-1])) if target else (0, False)
    d.run(memory_commands.publish, token=token, collection=collection, offset=offset, mode=mode,
          items=[list(e) for e in items], deletes=deletes, manifest=manifest)
    if mode == "snapshot" and before[1] and _head(d, token, collection) == before[0] + 1:
        _after_snapshot(d, token, collection, before[0] + 1, items)
    elif _head(d, token, collection) == before[0] + 1 and data.draw(st.booleans()):
        _onto_a_held_path(d, token, collection, pool)
    if before[0] == 1 and _head(d, token, collection) == 2:  # two revisions, for the first time
        d.run(revisions.cursor_elsewhere, token=token, collection=collection, revision=2)  # WP-CUR-6


def _after_snapshot(d: RuleDriver, token: str, collection: str, revision: int,
                    items: list[Any]) -> None:
    """What a snapshot did to the entries it did not list, tombstones included (P14); where
    it left tombstones, the same snapshot with one metadata changed, read back too: the
    earlier tombstones are carried (P14)."""
    d.run(revisions.read_revision, token=token, collection=collection, revision=revision,
          sizes=[3], tombstones=True)
    target = d.model.collections[(d.model.tokens[token].space, collection)]
    if items and any(entry["state"] == "tombstone" for entry in target.states[-1].values()):
        (number, path, upload, _), *rest = items
        d.run(memory_commands.publish, token=token, collection=collection, offset=0, mode="snapshot",
              items=[[number, path, upload, {"changed": revision}], *map(list, rest)],
              deletes=[], manifest=False)
        if target.head == revision + 1:
            d.run(revisions.read_revision, token=token, collection=collection, revision=revision + 1,
                  sizes=[3], tombstones=True)


def _onto_a_held_path(d: RuleDriver, token: str, collection: str, pool: list[int]) -> None:
    """A delta moving one active entry onto the path another active entry of the head holds:
    the result would hold two active entries on one path, so it is refused (WP-MEM-12)."""
    target = d.model.collections[(d.model.tokens[token].space, collection)]
    active = [(item_id, entry["path"]) for item_id, entry in sorted(target.states[-1].items())
              if entry["state"] == "active"]
    if len(active) < 2 or not pool:
        return
    (moved, _), (_, held) = active[0], active[1]
    number = next((n for n in range(40) if PATHS[n % len(PATHS)].format(n) == held), None)
    if number is not None:
        d.run(memory_commands.publish, token=token, collection=collection, offset=0, mode="delta",
              items=[[int(moved[1:]), number, pool[0], None]], deletes=[], manifest=False)


def _deletes(d: RuleDriver, data: StepDraws, token: str, collection: str, mode: str,
             items: list[Any], wrong: bool) -> list[int]:
    """Item numbers to delete: none in a valid snapshot, else some the head holds (or, when
    ``wrong``, any, also ids upserted at once)."""
    target = d.model.collections.get((d.model.tokens[token].space, collection))
    seen = sorted(int(item_id[1:]) for item_id in (target.states[-1] if target else {}))
    if items and mode == "delta" and data.draw(
            st.sampled_from([False] * (1 if wrong else 11) + [True])):
        # only the overlap is wrong: an id upserted and deleted at once (P14's counterexample)
        upserted = {e[0] for e in items}
        return [*[n for n in seen if n not in upserted][:1], items[0][0]]
    if (mode == "snapshot" and not wrong) or not (seen or wrong):
        return []
    deletes: list[int] = data.draw(st.lists(
        st.sampled_from(seen) if seen and not wrong else st.integers(0, 6), max_size=2,
        unique=True))
    return deletes if wrong else [n for n in deletes if n not in {e[0] for e in items}]
