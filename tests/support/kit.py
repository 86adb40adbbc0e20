"""The kit's in-process runs: the admin token of the reference ``kit_app`` serves, the types of
the fixtures that serve it and inject defects (``tests/conftest.py``), and the feed patch those
defects share."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from starlette.testclient import TestClient

KIT_ADMIN = "kit-admin"
KitApp = Callable[..., AbstractContextManager[TestClient]]
Patch = Callable[[pytest.MonkeyPatch, Any], None]


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
