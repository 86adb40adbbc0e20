"""A failure that the same draws do not repeat (it depends on what else the server saw: its
history, its timing) is reported as the violation it was, never as Hypothesis' flaky error; its
replay file says it depends on timing, and the replay reruns its commands until it fails again
against the broken deployment."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.inprocess import kit_client
from tests.support.kit import patch_pages
from waypost.conformance import runner
from waypost.properties.coverage.catalogue import select

KitApp = Callable[..., AbstractContextManager[TestClient]]  # the conftest fixture kit_app
pytestmark = pytest.mark.slow


def drops_every_third_page_edge(mp: pytest.MonkeyPatch) -> None:
    """Every third page that has more after it loses its last item: whether a read fails
    depends on how many the server served before, not on the read."""
    served = itertools.count(1)
    patch_pages(mp, lambda page: page["items"].pop() if next(served) % 3 == 0 else None)


def test_a_failure_the_same_draws_do_not_repeat_is_reported_and_replayed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kit_app: KitApp,
        kit_admin: str) -> None:
    with kit_app(tmp_path / "data") as client:
        drops_every_third_page_edge(monkeypatch)
        report = runner.run("broken", kit_client(client), kit_admin, profile="quick", seed=4,
                            selected=select("P06"), replay_dir=tmp_path / "replays",
                            shrink_seconds=5)
        failed = {o.prop.pid: o for o in report.outcomes if o.result == "fail"}
        assert list(failed) == ["P06"], {o.prop.pid: o.message for o in report.outcomes}
        recorded: dict[str, Any] = json.loads(Path(str(failed["P06"].replay)).read_text())
        assert recorded["property"] == "P06"
        assert "Flaky" not in recorded["message"]
        # Hypothesis ran the same draws again and they passed: the file says so
        assert "depends on timing" in recorded["timing"]
        said: list[str] = []
        violation = runner.replay_file(Path(str(failed["P06"].replay)), kit_client(client),
                                       kit_admin, out=_Lines(said))
        assert violation is not None
        assert violation.pid == "P06"
        assert said[0].startswith("still failing")


class _Lines:
    """A text stream that keeps its lines."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def write(self, text: str) -> int:
        self.lines.extend(text.splitlines())
        return len(text)
