"""The rules of a memory publish's plans (``storage/memory.py``): its reservation's check of the
entries' blobs, the staging of its inputs, and the commit of its revision."""

from __future__ import annotations

from collections.abc import Sequence

from waypost.reference.storage.authority import TOKEN_DEAD, lacks_scope
from waypost.reference.storage.counter import sequence_exhausted
from waypost.reference.storage.plan import json_list
from waypost.reference.storage.references import referenceable
from waypost.reference.storage.rules import Rule, first
from waypost.reference.storage.submissions import ALREADY_SETTLED, Checks

#: Verdicts the commit records as the key's stable result (not refusals).
CONFLICT, UNCHANGED = "REVISION_CONFLICT", "UNCHANGED"
NOT_RESERVED = "NOT_RESERVED"

#: SQL: the collection ``:cid`` of the space (a WHERE clause), its head revision, and the
#: publish's staged inputs ``i`` (a FROM source with its WHERE clause begun).
COLLECTION = "space_id = :space_id AND collection_id = :cid"
HEAD = f"(SELECT current_revision FROM collections WHERE {COLLECTION})"
STAGED = "memory_publish_inputs i WHERE i.submission_id = :submission_id"

_UNREFERENCEABLE = f"NOT {referenceable('j.value', ':producer_id')}"
#: Every entry names a blob the producer may reference (P16). The key's reservation checks it
#: (an invalid publish reserves nothing) and tells the first blob at fault, in ``blob_id``
#: order; the commit's guard checks the staged entries again under the same verdict.
ENTRY_BLOBS = Rule(
    "REFERENCE_INVALID:items",
    f"EXISTS (SELECT 1 FROM json_each(:entry_blobs) j WHERE {_UNREFERENCEABLE})",
    first("json_each(:entry_blobs) j", _UNREFERENCEABLE, "json_object('blob_id', j.value)"),
    "REFERENCE_INVALID", "items",
    "entries must name sealed blobs of this space that the producer owns or may reference")


def entry_blob_checks(blob_ids: Sequence[str]) -> Checks:
    """The reservation's :data:`ENTRY_BLOBS` check of a publish naming ``blob_ids``."""
    return (ENTRY_BLOBS,), {"entry_blobs": json_list(sorted(set(blob_ids)))}


#: A publish stages its inputs once, while its key is reserved.
STAGE_RULES = (TOKEN_DEAD, Rule(
    NOT_RESERVED, "NOT EXISTS (SELECT 1 FROM submissions WHERE submission_id = :submission_id"
    " AND state = 'reserved')", None, "", "", "the publish goes on from its submission's state"))


def _refused(verdict: str, condition: str, code: str, field: str = "") -> Rule:
    """A rule of the commit answered in the words of a generic refusal, e.g. ``"not ready:
    collection"`` (as the server has always answered them)."""
    told = f"{code.lower().replace('_', ' ')}: {field or 'collection'}"
    return Rule(verdict, condition, None, code, field, told)


#: The commit's rules, in order: a settled key answers first, then the token, the collection's
#: grant and source, the head (a conflict or an unchanged state is the key's recorded result),
#: the prepared object, the revision counter, the staged entries' blobs, the feed counter.
COMMIT_RULES = (
    ALREADY_SETTLED,
    TOKEN_DEAD,
    lacks_scope("forbidden: collection"),
    _refused("FORBIDDEN:collection_id", "NOT EXISTS (SELECT 1 FROM token_collection_grants"
             " WHERE token_id = :token_id AND collection_id = :cid AND action = 'write')",
             "FORBIDDEN", "collection_id"),
    _refused("FORBIDDEN:collection_id", f"NOT EXISTS (SELECT 1 FROM collections WHERE"
             f" {COLLECTION} AND source_actor_id = :producer_id)", "FORBIDDEN", "collection_id"),
    Rule(CONFLICT, f"{HEAD} <> :expected", None, "", "", "the recorded conflict answers"),
    Rule(UNCHANGED, ":new_fp IS NOT NULL AND :new_fp = COALESCE((SELECT state_fingerprint FROM"
         f" memory_revisions WHERE {COLLECTION} AND revision = :expected), :empty_fp)", None,
         "", "", "the head answers, unchanged"),
    _refused("NOT_READY", "NOT EXISTS (SELECT 1 FROM submissions WHERE"
             " submission_id = :submission_id AND state = 'prepared')", "NOT_READY"),
    _refused("RESOURCE_LIMIT:expected_revision", ":new_revision > :max_revision",
             "RESOURCE_LIMIT", "expected_revision"),
    ENTRY_BLOBS._replace(condition=f"EXISTS (SELECT 1 FROM {STAGED} AND i.action = 'upsert'"
                         f" AND NOT {referenceable('i.blob_id', ':producer_id')})", details=None),
    sequence_exhausted("1", "resource limit: collection"),
)
