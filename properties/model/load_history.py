"""The history of a load run and the invariants it must keep, checked after the run from the
answers the clients got and a re-read of every view (``waypost conformance load``).

A view must show every message committed for it exactly once, in commit order (the kit's
feed checker, :func:`waypost.properties.model.history.analyse`), every revision of every collection
once and in order, and exactly the receipts of the ACKs that changed a stage, each receipt's
versions counting up by one with stages only moving forward. A collection's head must have
moved once per successful publish and hold every entry published."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from waypost.properties.model.history import Anomaly, analyse

STAGES = {"none": 0, "received": 1, "processed": 2}
#: What a load run's checks rest on (docs/protocol.md).
REQUIREMENTS = ("WP-FEED-1", "WP-FEED-2", "WP-FEED-3", "WP-VIS-1", "WP-MEM-16", "WP-MEM-17",
                "WP-MEM-18", "WP-RCPT-6", "WP-RCPT-7", "WP-LOAD-3", "WP-LOAD-5")


@dataclass(frozen=True)
class Sent:
    """A send the server answered 201."""

    request_id: str
    message_id: str
    feed_item_id: str
    sequence: int
    producer: str
    recipients: tuple[str, ...]


@dataclass(frozen=True)
class Acked:
    """One item of an ACK's answer, as the acknowledging consumer got it."""

    consumer: str
    item_id: str
    stage: str
    version: int
    changed: bool


@dataclass(frozen=True)
class Published:
    """A publish the server answered 201 (one new entry each)."""

    collection: str
    revision: int
    parent: int
    item_id: str


@dataclass
class History:
    """What the clients of a load run were answered; appended to from their threads."""

    sent: list[Sent] = field(default_factory=list)
    acked: list[Acked] = field(default_factory=list)
    published: list[Published] = field(default_factory=list)
    indeterminate: int = 0  # requests that never got an answer (their effect is unknown)
    anomalies: list[Anomaly] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, entry: Any) -> None:
        with self.lock:
            getattr(self, kind).append(entry)

    def anomaly(self, kind: str, detail: str, *ids: str) -> None:
        self.add("anomalies", Anomaly(kind, tuple(ids), detail))


def _named(view: str, anomalies: Iterable[Anomaly]) -> list[Anomaly]:
    return [Anomaly(a.kind, a.item_ids, f"{view}: {a.detail}") for a in anomalies]


def check_view(view: str, items: list[dict[str, Any]], history: History,
               recipient: str | None, heads: dict[str, int],
               producers: dict[str, str]) -> list[Anomaly]:
    """One view read from its start: ``recipient`` is the inbox's actor (None: the space
    log, which sees every message and receipt)."""
    return (_messages(view, items, history, recipient) + _sequences(view, items)
            + _revisions(view, items, heads)
            + _receipts(view, items, history, recipient, producers))


def _messages(view: str, items: list[dict[str, Any]], history: History,
              recipient: str | None) -> list[Anomaly]:
    """Every message committed for the view once, in commit order (the kit's checker)."""
    messages = sorted((s for s in history.sent if recipient is None or recipient in
                       s.recipients), key=lambda s: s.sequence)
    shown = [item for item in items if item.get("type") == "message"]
    found = analyse([s.feed_item_id for s in messages], [item["item_id"] for item in shown],
                    [int(item["sequence"]) for item in shown])
    if history.indeterminate:  # a send without an answer may have committed
        found = [a for a in found if a.kind != "unexpected"
                 or len(a.item_ids) > history.indeterminate]
    return _named(view, found)


def _sequences(view: str, items: list[dict[str, Any]]) -> list[Anomaly]:
    sequences = [int(item["sequence"]) for item in items]
    backwards = [i for i in range(1, len(items)) if sequences[i] <= sequences[i - 1]]
    if not backwards:
        return []
    i = backwards[0]
    return [Anomaly("sequence", (items[i - 1]["item_id"], items[i]["item_id"]),
                    f"{view}: sequence {sequences[i]} after {sequences[i - 1]}")]


def _revisions(view: str, items: list[dict[str, Any]], heads: dict[str, int]) -> list[Anomaly]:
    """Every revision of every collection once, in order."""
    revisions: dict[str, list[int]] = defaultdict(list)
    for item in items:
        if item.get("type") == "memory_revision":
            revision = item["memory_revision"]
            revisions[revision["collection_id"]].append(int(revision["revision"]))
    return [Anomaly("revisions", (collection,), (
        f"{view}: revisions of {collection} seen as {revisions.get(collection, [])[:20]}"
        f"…, expected 1..{head} once each in order"))
        for collection, head in heads.items()
        if revisions.get(collection, []) != list(range(1, head + 1))]


def _receipts(view: str, items: list[dict[str, Any]], history: History,
              recipient: str | None, producers: dict[str, str]) -> list[Anomaly]:
    """Receipts: exactly one per changing ACK item, versions 1, 2, … stages forward."""
    expected = Counter((a.item_id, a.consumer, a.version, a.stage) for a in history.acked
                       if a.changed and (recipient is None
                                         or producers.get(a.item_id) == recipient))
    seen: list[tuple[str, str, int, str]] = [
        (r["subject_item_id"], r["consumer_id"], int(r["receipt_version"]), r["stage"])
        for r in (item["receipt"] for item in items if item.get("type") == "receipt")]
    anomalies: list[Anomaly] = []
    lost = expected - Counter(seen)
    extra = Counter(seen) - expected
    if lost:
        anomalies.append(Anomaly("lost receipt", tuple(k[0] for k in lost),
                                 f"{view}: receipts of changing ACKs never shown: "
                                 f"{sorted(lost)[:5]}"))
    if extra and not history.indeterminate:  # an unanswered ACK may have committed
        anomalies.append(Anomaly("unexpected receipt", tuple(k[0] for k in extra),
                                 f"{view}: receipts no ACK changed (or shown twice): "
                                 f"{sorted(extra)[:5]}"))
    last: dict[tuple[str, str], tuple[int, str]] = {}
    for subject, consumer, version, stage in seen:
        before = last.get((subject, consumer), (0, "none"))
        if version != before[0] + 1 or STAGES.get(stage, 0) <= STAGES[before[1]]:
            anomalies.append(Anomaly("receipt order", (subject,), (
                f"{view}: receipt of {consumer} went from version {before[0]} ({before[1]}) "
                f"to {version} ({stage})")))
        last[(subject, consumer)] = (version, stage)
    return anomalies


def check_acks(history: History) -> list[Anomaly]:
    """ACK answers of one consumer never see a receipt go back, and ``changed`` means the
    version moved."""
    anomalies: list[Anomaly] = []
    last: dict[tuple[str, str], tuple[int, str]] = {}
    for acked in history.acked:
        key = (acked.consumer, acked.item_id)
        version, stage = last.get(key, (0, "none"))
        moved = acked.version == version + 1 and STAGES[acked.stage] > STAGES[stage]
        kept = acked.version == version and STAGES[acked.stage] == STAGES[stage]
        if not ((acked.changed and moved) or (not acked.changed and kept)):
            anomalies.append(Anomaly("receipt regressed", (acked.item_id,), (
                f"ACK of {acked.consumer}: receipt at version {version} ({stage}) answered "
                f"version {acked.version} ({acked.stage}), changed={acked.changed}")))
        last[key] = (max(version, acked.version), max(stage, acked.stage, key=lambda name: STAGES[name]))
    return anomalies


def check_collection(collection: str, head: int, history: History,
                     head_items: list[str], parents: dict[int, int]) -> list[Anomaly]:
    """The head moved once per successful publish; every revision's parent is the one
    before; the head holds every entry published. A publish that never got an answer may
    have committed: up to ``history.indeterminate`` more revisions and entries are allowed."""
    mine = [p for p in history.published if p.collection == collection]
    anomalies = _head(collection, head, mine, history.indeterminate)
    wrong = {r: p for r, p in parents.items() if p != r - 1}
    if wrong or any(p.parent != p.revision - 1 for p in mine):
        anomalies.append(Anomaly("parent", (collection,), (
            f"{collection}: revisions whose parent is not the one before: "
            f"{sorted(wrong.items())[:10]}")))
    published, held = {p.item_id for p in mine}, set(head_items)
    if not published <= held or len(held - published) > history.indeterminate \
            or len(head_items) != len(held):
        anomalies.append(Anomaly("entries", tuple(sorted(published ^ held))[:10], (
            f"{collection}: the head holds {len(head_items)} entries, {len(published)} were "
            f"published ({history.indeterminate} unanswered requests)")))
    return anomalies


def _head(collection: str, head: int, mine: list[Published], unknown: int) -> list[Anomaly]:
    """Each answered revision once; the head at the answered publishes, plus at most
    ``unknown`` unanswered ones."""
    revisions = sorted(p.revision for p in mine)
    doubled = sorted(r for r, n in Counter(revisions).items() if n > 1)
    if unknown:
        right = not doubled and len(mine) <= head <= len(mine) + unknown \
            and all(1 <= r <= head for r in revisions)
    else:
        right = revisions == list(range(1, len(mine) + 1)) and head == len(mine)
    return [] if right else [Anomaly("head", (collection,), (
        f"{collection}: {len(mine)} successful publishes ({unknown} unanswered requests), "
        f"head {head}, revisions answered {revisions[:10]}… (answered twice: "
        f"{doubled[:10]})"))]
