"""P01–P18 as data: what each property says and whether the kit covers it yet (with the reason
when not). Which checks of the kit exercise a property is computed from the checks themselves
(``properties/coverage/check_sites.py``). The runner prints this table."""

from __future__ import annotations

from dataclasses import dataclass

from waypost.properties.coverage import check_sites


@dataclass(frozen=True)
class Property:
    """One property of properties.md, with the kit's coverage of it."""

    pid: str
    name: str
    statement: str
    covered: bool = True
    reason: str = ""

    @property
    def checked_by(self) -> tuple[str, ...]:
        """The named checks of the kit whose requirement ids include one of this property's."""
        return check_sites.checked_by(self.pid)


CATALOGUE: tuple[Property, ...] = (
    Property("P01", "Space isolation",
             "No credential of one space can read, reference, acknowledge or learn of another "
             "space's objects; foreign ids answer exactly like nonexistent ids."),
    Property("P02", "Current authority",
             "Every request needs a live credential; after revoke, expiry or disable nothing more "
             "has an effect."),
    Property("P03", "Idempotent submissions",
             "One key fixes fingerprint, ids and defaults; retries return the identical stable "
             "result; a different fingerprint gets IDEMPOTENCY_CONFLICT and changes nothing."),
    Property("P04", "Canonical fingerprint",
             "Fingerprints are SHA-256 over RFC 8785 of the normalised request; vectors "
             "reproduce byte for byte."),
    Property("P05", "Atomic publication",
             "A message, an ACK (receipts, receipt items, checkpoint) becomes visible entirely or "
             "not at all."),
    Property("P06", "Feed order and completeness",
             "Sequences strictly increase in commit order and are never reused; any page sizes "
             "yield every visible item once, in order."),
    Property("P07", "Cursor integrity",
             "Cursors are integrity-protected and bound to consumer, view, filter and grants; "
             "rotation with identical grants keeps them valid."),
    Property("P08", "View and filter correctness",
             "A consumer sees exactly the model's visible set for its view, scopes, grants and "
             "filter."),
    Property("P09", "Receipt monotonicity and history",
             "Stages never go back; each advance bumps the version and appends a receipt item "
             "holding the stage of that moment; earlier receipt items never change."),
    Property("P10", "ACK atomicity and bounds",
             "Up to 20 items plus an optional checkpoint, saved completely or not at all; the "
             "checkpoint only moves forward; the answer is stable under retry."),
    Property("P11", "Memory head CAS",
             "expected_revision other than the head is REVISION_CONFLICT with current_revision, "
             "recorded as the key's result; success makes revision = expected + 1; among "
             "concurrent publishers at one head exactly one wins; revisions stop at 2^53-1."),
    Property("P12", "No-op publication",
             "A publish whose resulting state equals the head state answers changed:false with "
             "the head revision; no revision, no feed item; stable under retry."),
    Property("P13", "Fixed revision reads",
             "A published revision, read at any later time with any page sizes, shows the "
             "identical entries; its item cursor is bound to it; its manifest equals its rows."),
    Property("P14", "Snapshot/delta and tombstones",
             "Snapshots tombstone unlisted entries, tombstones stay until an upsert, upsert and "
             "delete are disjoint, active paths unique, invalid input rejected before any "
             "effect."),
    Property("P15", "Upload integrity",
             "Content must match the declared size and SHA-256 (zero bytes valid); content is "
             "create-only; an expired upload cannot be sealed; a sealed blob never changes."),
    Property("P16", "Blob access and reference",
             "A blob is readable only by its owner, readers of a message attaching it, or a "
             "grant; referencing needs a sealed blob of the space, owned or granted."),
    Property("P17", "Reference consumer reliability",
             "The reference consumer stores a page, its work records and its checkpoint in one "
             "local transaction before acknowledging received; sends processed only after the "
             "local mark; a crash at any of its fault points loses no item, repeats no "
             "completed work and resubmits outbound writes with their original request_id."),
    Property("P18", "Crash-safe lifecycle",
             "A crash, a lost response or a temporary error at any fault point leaves one "
             "stable result that a lookup and a retry find; temporary errors are never final."),
)

BY_ID: dict[str, Property] = {prop.pid: prop for prop in CATALOGUE}


def select(only: str | None) -> list[Property]:
    """The properties named by ``--only P03,P06`` (all when None); unknown ids raise ValueError."""
    if not only:
        return list(CATALOGUE)
    wanted = [part.strip().upper() for part in only.split(",") if part.strip()]
    unknown = [pid for pid in wanted if pid not in BY_ID]
    if unknown:
        raise ValueError(f"unknown properties: {', '.join(unknown)} (known: P01–P18)")
    return [BY_ID[pid] for pid in wanted]
