"""Shared fixtures: a fresh data directory, the ASGI app over it, and a provisioned space; for
the kit's runs, the reference as they serve it and the defects more than one test injects. The
plain helpers they use are in ``tests/support/``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from starlette.testclient import TestClient

from tests.support.api import ADMIN_TOKEN, Api, with_notes
from tests.support.kit import KIT_ADMIN, KitApp, Patch, kit_served, patch_pages
from tests.support.writer import Submitter
from waypost.reference.server import Settings, build_app, served_context

# Profiles: dev (fast, the default), ci (CI sets HYPOTHESIS_PROFILE=ci), thorough (long runs).
# Failures print the reproduction blob and seed.
_common = {"deadline": None, "print_blob": True,
           "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]}
settings.register_profile("dev", max_examples=20, **_common)
settings.register_profile("ci", max_examples=60, **_common)
settings.register_profile("thorough", max_examples=600, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per core, times ``WAYPOST_WORKERS_PER_CORE`` (tox's slow env sets
    1.5: its tests often wait, on servers and kits in processes of their own and on fsync; on 2
    cores, three workers ran the tier in 6.5 minutes, two in 9)."""
    per_core = float(os.environ.get("WAYPOST_WORKERS_PER_CORE", "1"))
    return max(1, round(len(os.sched_getaffinity(0)) * per_core))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def d1_settings(tmp_path: Path) -> Iterator[Settings]:
    """Settings of the reference on a fresh D1 database and R2 bucket: the gateway Worker on
    local workerd (``npm ci`` on first use), stopped afterwards."""
    from waypost.gateway import local_d1

    with local_d1(tmp_path, ADMIN_TOKEN) as settings:
        yield settings


@pytest.fixture
def client(data_dir: Path) -> Iterator[TestClient]:
    app = build_app(Settings(data_dir, ADMIN_TOKEN))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture
def api(client: TestClient) -> Api:
    """The API with space ``s1`` (alice default, bob, carol) and ``s2`` (dave default, erin)."""
    api = Api(client)
    api.space("s1")
    api.space("s2", ("dave", "erin"))
    return api


@pytest.fixture
def hooked(data_dir: Path) -> Iterator[Api]:
    """The API with test hooks on (a server clock that tests can advance)."""
    app = build_app(Settings(data_dir, ADMIN_TOKEN, test_hooks=True, sweep_seconds=0))
    with TestClient(app, raise_server_exceptions=False) as client:
        api = Api(client)
        api.space("s1")
        api.space("s2", ("dave", "erin"))
        yield api


@pytest.fixture
def mem(api: Api) -> Api:
    return with_notes(api)


@pytest.fixture
def submit() -> Iterator[Submitter]:
    """``submit(writer.run, plan)``: a plan handed to the SQLite writer as the server hands it,
    from a test without an event loop; a future of its outcome rows."""
    submitter = Submitter()
    yield submitter
    submitter.close()


# ----- the kit's in-process runs ---------------------------------------------------------------


@pytest.fixture
def kit_admin() -> str:
    """The admin token of the reference that ``kit_app`` serves."""
    return KIT_ADMIN


@pytest.fixture
def kit_app() -> KitApp:
    """``kit_app(data_dir, **settings)``: the reference as the kit's runs here serve it
    (``tests/support/kit.py``, ``kit_served``)."""
    return kit_served


@pytest.fixture
def regressions() -> list[Path]:
    """The committed replay files every target must pass."""
    return sorted((Path(__file__).resolve().parent.parent / "conformance" / "regressions")
                  .glob("*.json"))


@pytest.fixture
def drop_page_edges() -> Patch:
    """A defect: a page that has more after it loses its last item (its cursor stays after
    it)."""
    return lambda mp, client: patch_pages(mp, lambda page: page["items"].pop())


@pytest.fixture
def repeat_page_edges() -> Patch:
    """A defect: a page's cursor points before its last item, so the next page repeats it."""

    def patch(mp: pytest.MonkeyPatch, client: TestClient) -> None:
        from waypost.reference.service import feed

        def repeat(page: dict[str, Any]) -> None:
            ctx = served_context(client.app)
            *_, before_last = page["items"][:-1] or page["items"]
            decoded = feed.cursor.decode(ctx.cursor_key, page["next_cursor"])
            moved = feed.cursor.FeedCursor(**{**decoded.__dict__,
                                              "position": int(before_last["sequence"])})
            page["next_cursor"] = feed.cursor.encode(ctx.cursor_key, moved)
        patch_pages(mp, repeat)
    return patch


@pytest.fixture
def record_temporary_errors_as_final() -> Patch:
    """A defect: a send that meets a temporary storage error records 503 as the key's final
    result (the key must stay retryable). It patches the service module, for every app."""

    def patch(mp: pytest.MonkeyPatch, app: Any) -> None:
        from waypost.reference.domain import values
        from waypost.reference.domain.canonical import digest
        from waypost.reference.domain.errors import StorageUnavailable
        from waypost.reference.domain.requests import parse_send
        from waypost.reference.service import messages
        from waypost.reference.storage import submissions as submission_sql

        original = messages.send

        async def send(ctx: Any, principal: Any, raw: Any) -> Any:
            try:
                return await original(ctx, principal, raw)
            except StorageUnavailable:
                request, now = parse_send(raw, ctx.limits), ctx.clock.now_ms()
                submission_id = values.new_id("sub")
                await submission_sql.reserve(
                    ctx.driver, principal, now, "message.send", request.request_id,
                    digest(request.normalised), submission_id, values.new_id("msg"))
                await ctx.driver.run(submission_sql.record_failure(
                    principal, now, submission_id, 503, "UNAVAILABLE", "{}"))
                raise
        mp.setattr(messages, "send", send)
    return patch


# ----- the browser tier --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's launch arguments (``--headed``, ``--slowmo``…) on Debian's chromium:
    Playwright's own browser download is not used. Its browser lives for the whole session and
    keeps an event loop running in this thread, hence the ``browser`` tox env, a pytest process
    of its own (later tests of a shared worker call ``asyncio.run``)."""
    path = os.environ.get("WAYPOST_CHROMIUM") or shutil.which("chromium")
    if path is None:  # a failure, not a skip: CI installs it (.ci/run)
        pytest.fail("no chromium: install Debian's package (apt-get install chromium) or set "
                    "WAYPOST_CHROMIUM to a Chromium executable")
    return {**browser_type_launch_args, "executable_path": path}
