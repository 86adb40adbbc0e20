"""The crash matrix must fail on servers that get recovery wrong. Each variant is the reference
with one defect, patched in this test process and served by uvicorn in a thread (crashes are
abandoned requests and ``/_test/restart`` stands in for a new process)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import request_response

from tests.support.threaded_server import serving_app
from waypost.conformance.crash_matrix import crash_matrix
from waypost.reference.http import app as http_app
from waypost.reference.server import Settings, build_app
from waypost.reference.service import messages

ADMIN = "matrix-admin"
Patch = Callable[[pytest.MonkeyPatch, Any], None]
pytestmark = pytest.mark.slow


@contextmanager
def serving(data_dir: Path, patch: Patch, mp: pytest.MonkeyPatch) -> Iterator[str]:
    app = build_app(Settings(data_dir, ADMIN, test_hooks=True, sweep_seconds=0))
    patch(mp, app)
    with serving_app(app) as url:
        yield url


def replays_forgotten_after_a_restart(mp: pytest.MonkeyPatch, app: Any) -> None:
    """Deduplication kept in memory only: after a restart a committed key sends again."""
    remembered: set[str] = set()
    original = messages.send

    async def send(ctx: Any, principal: Any, raw: Any) -> Any:
        key = raw.get("request_id") if isinstance(raw, dict) else None
        found = await messages.submissions.find(ctx, principal, "message.send", str(key))
        if found is not None and not found[0].pending and key not in remembered:
            raw = {**raw, "request_id": f"{key}.again"}
        outcome = await original(ctx, principal, raw)
        remembered.add(str(key))
        return outcome
    mp.setattr(messages, "send", send)
    hook = http_app.restart_hook

    async def restart_hook(request: Any) -> Any:
        remembered.clear()  # what a new process would forget
        return await hook(request)
    route = next(r for r in app.routes if getattr(r, "path", "") == "/_test/restart")
    mp.setattr(route, "app", request_response(restart_hook))


VARIANTS: dict[str, tuple[Patch | str, tuple[str, ...], str]] = {
    "a temporary error is recorded as a final failure": (  # a conftest fixture
        "record_temporary_errors_as_final", ("unavailable",), "final failure"),
    "a crash after commit re-commits on retry": (
        replays_forgotten_after_a_restart, ("crash",), "took effect 2 times"),
}


def test_the_unbroken_reference_passes_the_same_matrix(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with serving(tmp_path / "data", lambda mp, app: None, monkeypatch) as url:
        matrix = crash_matrix(("message.send", "memory.publish"),
                              actions=("crash", "unavailable"), progress=False, url=url,
                              admin_token=ADMIN)
    assert [(c.action, c.operation, c.point, c.note) for c in matrix.cells if not c.ok] == []


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_crash_matrix_catches_a_broken_recovery(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    request: pytest.FixtureRequest,
                                                    name: str) -> None:
    patch, actions, reason = VARIANTS[name]
    apply: Patch = request.getfixturevalue(patch) if isinstance(patch, str) else patch
    with serving(tmp_path / "data", apply, monkeypatch) as url:
        matrix = crash_matrix(("message.send",), actions=actions, progress=False, url=url,
                              admin_token=ADMIN)
    failures = [c for c in matrix.cells if not c.ok]
    assert failures, f"{name}: the matrix passed a broken server"
    assert any(reason in c.note for c in failures), [c.note for c in failures]
