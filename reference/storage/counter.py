"""The feed counter: every feed item takes the next sequence, which never wraps."""

from __future__ import annotations

from waypost.reference.domain.values import MAX_SEQUENCE


def sequence_exhausted(count: str) -> tuple[str, str]:
    """The guard case for a feed counter that cannot take ``count`` more items (never wraps)."""
    return (f"COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'feed_items'), 0)"
            f" > {MAX_SEQUENCE} - ({count})", "RESOURCE_LIMIT")
