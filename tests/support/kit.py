"""The kit's in-process runs: the reference as they serve it (the fixture ``kit_app``) with its
admin token, the types of the fixtures that serve it and inject defects (``tests/conftest.py``),
and the feed patch those defects share."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

KIT_ADMIN = "kit-admin"
KitApp = Callable[..., AbstractContextManager[TestClient]]
Patch = Callable[[pytest.MonkeyPatch, Any], None]


@contextmanager
def kit_served(data_dir: Path, **extra: Any) -> Iterator[TestClient]:
    """The reference as the kit's runs here serve it, like the kit's sqlite target with SQLite
    ``synchronous=NORMAL`` (the kit checks answers, not power-loss durability), and no
    background sweep, whose wall-clock moments would make a seeded run depend on timing."""
    from waypost.reference.server import Settings, build_app

    settings = Settings(data_dir, KIT_ADMIN, synchronous="NORMAL", sweep_seconds=0, **extra)
    with TestClient(build_app(settings)) as test_client:
        yield test_client


def patch_pages(mp: pytest.MonkeyPatch, change: Callable[[dict[str, Any]], None]) -> None:
    from waypost.reference.service import feed
    from waypost.reference.service.context import Outcome

    original = feed.read_feed

    async def read_feed(*args: Any) -> Outcome:
        outcome = await original(*args)
        if outcome.body["has_more"] and len(outcome.body["items"]) > 1:
            change(outcome.body)
        return outcome
    mp.setattr(feed, "read_feed", read_feed)
