"""Full re-reads of an example's state: every live view from its checkpoint and every published
revision, as commands that compare them with the model. An example ends with them, and so does
each step of a limit check (what was accepted is all there, what was refused left nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from waypost.properties.commands.feed import check_view
from waypost.properties.commands.revisions import read_revision
from waypost.properties.commands.world import Command, World

Step = tuple[Command, dict[str, Any]]


def view_rereads(world: World) -> Iterator[Step]:
    """``check_view`` once per (consumer, grant fingerprint): tokens with equal grants see the
    same items (P05, P06, P08, P09)."""
    model = world.model
    seen: set[tuple[str, str]] = set()
    for token in list(model.tokens.values()):
        view = (token.consumer_id, token.grant_fingerprint)
        if view not in seen and model.live(token):
            seen.add(view)
            yield check_view, {"token": token.handle}


def revision_rereads(world: World, heads_only: bool = False) -> Iterator[Step]:
    """``read_revision`` of every revision of every collection (``heads_only``: of each head),
    through a token that may read it (P13, P14)."""
    model = world.model
    for collection in list(model.collections.values()):
        reader = next((t for t in model.tokens.values() if t.space == collection.space
                       and model.live(t) and t.has("memory.read")
                       and t.may(collection.collection_id, "read")), None)
        first = collection.head if heads_only else 1
        for revision in range(max(first, 1), collection.head + 1) if reader else ():
            assert reader is not None
            yield read_revision, {"token": reader.handle,
                                    "collection": collection.collection_id,
                                    "revision": revision, "sizes": [model.page_size()],
                                    "tombstones": True}
