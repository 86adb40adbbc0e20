"""The feed counter: every feed item takes the next sequence, which never wraps."""

from __future__ import annotations

from waypost.reference.domain.values import MAX_SEQUENCE
from waypost.reference.storage.rules import Rule

#: What a client is told when the counter is full, in most plans.
AT_MAXIMUM = "the feed's sequence counter is at its maximum"


def sequence_exhausted(count: str, message: str = AT_MAXIMUM) -> Rule:
    """The rule that the feed counter can take ``count`` more items (it never wraps),
    answered ``RESOURCE_LIMIT`` with ``message``."""
    return Rule("RESOURCE_LIMIT", f"COALESCE((SELECT seq FROM sqlite_sequence WHERE"
                f" name = 'feed_items'), 0) > {MAX_SEQUENCE} - ({count})", None,
                "RESOURCE_LIMIT", "", message)
