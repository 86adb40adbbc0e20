"""The embedded deployment: SQLite + files in one data directory, created on first start."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from waypost import power_cut
from waypost.adapters import power_cut_files
from waypost.adapters.blobs.files import FileBlobStore
from waypost.adapters.blobs.r2 import R2BlobStore
from waypost.adapters.d1.driver import D1Driver
from waypost.adapters.durable import DISK, FileCalls, make_dirs
from waypost.adapters.sqlite.driver import SqliteDriver
from waypost.reference.domain.clock import SystemClock
from waypost.reference.domain.errors import StorageUnavailable
from waypost.reference.domain.faults import Abandoned, Faults
from waypost.reference.domain.keys import derive as derive_keys
from waypost.reference.domain.published_limits import D1_LIMITS, Limits
from waypost.reference.domain.refusal_brake import RefusalBrake
from waypost.reference.domain.sessions import SessionPolicy
from waypost.reference.http.app import create_app
from waypost.reference.service.auth import token_digest
from waypost.reference.service.blobs import sweep
from waypost.reference.service.context import Context
from waypost.reference.storage.blob_store import BlobStore
from waypost.reference.storage.driver import Driver

logger = logging.getLogger("waypost.sweep")

DATABASE = "waypost.sqlite3"
CURSOR_KEY = "cursor.key"


@dataclass(frozen=True)
class Settings:
    """How to serve: where the data lives, the operator's admin token, test hooks."""

    data_dir: Path
    admin_token: str | None = field(default=None, repr=False)  # secrets stay out of reprs
    test_hooks: bool = False
    sweep_seconds: float = 30.0  # how often expired uploads are cleaned; 0 turns it off
    synchronous: str = "FULL"  # SQLite's setting; NORMAL only for throwaway kit targets
    #: ``sqlite`` (embedded) or ``d1`` (D1 and R2 through the gateway at ``gateway_url``)
    storage: str = "sqlite"
    gateway_url: str | None = None
    gateway_secret: str | None = field(default=None, repr=False)
    exit_on_crash: bool = False  # a ``crash`` fault ends the process (``--crash-mode exit``)
    #: the database through the power-cut simulator, the data directory and the blob store
    #: through its file-call shim: nothing unsynced survives a kill (``--simulate-power-cuts``,
    #: test deployments only: ``waypost/power_cut.py``, ``adapters/power_cut_files.py``)
    simulate_power_cuts: bool = False
    dashboard: bool = False  # serve the operator dashboard under /dashboard/
    #: dashboard sessions end this long after their last use, and this long after sign-in
    sessions: SessionPolicy = field(default_factory=SessionPolicy)


def cursor_key(data_dir: Path, calls: FileCalls = DISK) -> bytes:
    """The server's secret, from which every key is derived (``domain/keys.py``; cursors' key
    among them, hence the file's name): 32 random bytes made once, kept so that cursors and
    dashboard sessions survive restarts.
    Written to a temp file, fsynced, then linked into place: a crash leaves no half key."""
    path = data_dir / CURSOR_KEY
    if not path.exists():
        temp = data_dir / f".{CURSOR_KEY}.{secrets.token_hex(6)}"
        with calls.create(temp, 0o600) as out:
            out.write(secrets.token_bytes(32))
            calls.fsync(out)
        try:
            calls.link(temp, path)  # the first writer wins; others read its key
        except FileExistsError:
            pass
        finally:
            calls.unlink(temp)
        calls.sync_dir(data_dir)
    key = path.read_bytes()
    if len(key) != 32:
        raise RuntimeError(f"{path} is damaged: expected 32 bytes")
    return key


@asynccontextmanager
async def sweeping(ctx: Context, every: float) -> AsyncIterator[None]:
    """Clean expired uploads in the background while serving."""
    async def loop() -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await sweep(ctx)
            except (StorageUnavailable, Abandoned):
                continue  # the next round tries again (a fault point may have ended this one)
            except Exception:
                # A defect must not end the sweeper for the life of the server: say so, go on.
                logger.exception("the upload sweep failed; the next round tries again")

    task = asyncio.create_task(loop()) if every > 0 else None
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[Context]:
    """The context of a running server: the stores plus the upload sweeper."""
    async with open_context(settings) as ctx, sweeping(ctx, settings.sweep_seconds):
        yield ctx


@asynccontextmanager
async def open_context(settings: Settings) -> AsyncIterator[Context]:
    """Open (or create) the data directory and yield the context requests share."""
    files: FileCalls = DISK
    blob_files: FileCalls = DISK
    if settings.simulate_power_cuts:  # first undo what the last cut lost (a test deployment)
        journal = await asyncio.to_thread(power_cut_files.install, settings.data_dir)
        files, blob_files = journal.calls(), journal.calls(power_cut_files.dropped_syncs())
    # its own entry must survive a power cut during the first run, or everything goes with it
    await asyncio.to_thread(make_dirs, settings.data_dir, calls=files)
    driver: Driver
    blobs: BlobStore
    limits = Limits()
    faults = Faults(exit_on_crash=settings.exit_on_crash)
    if settings.storage == "d1":
        if not (settings.gateway_url and settings.gateway_secret):
            raise ValueError("D1 storage needs the gateway's URL and secret")
        driver = D1Driver(settings.gateway_url, settings.gateway_secret)
        blobs = R2BlobStore(driver.client)  # one client to the gateway; the driver closes it
        limits = D1_LIMITS
    else:
        driver = SqliteDriver(settings.data_dir / DATABASE, synchronous=settings.synchronous,
                              on_durable=lambda: faults.hit("commit.durable"),
                              vfs=power_cut.install() if settings.simulate_power_cuts else None)
        blobs = FileBlobStore(settings.data_dir / "objects", durable=settings.synchronous == "FULL",
                              calls=blob_files)
    keys = derive_keys(cursor_key(settings.data_dir, files))
    try:
        await driver.migrate()
        yield Context(
            driver=driver,
            blobs=blobs,
            limits=limits,
            clock=SystemClock(),
            cursor_key=keys.cursors,
            csrf_key=keys.csrf,
            session_key=keys.sessions,
            admin_digest=token_digest(settings.admin_token) if settings.admin_token else None,
            test_hooks=settings.test_hooks,
            faults=faults,
            sessions=settings.sessions,
            brake=None if settings.test_hooks else RefusalBrake(),
        )
    finally:
        await driver.aclose()


def build_app(settings: Settings) -> Starlette:
    """The embedded reference as an ASGI app (usable under any ASGI server)."""
    return create_app(lambda: serving(settings), settings.dashboard, settings.test_hooks)


def served_context(app: Any) -> Context:
    """The :class:`Context` an app of :func:`build_app` serves from, once it has started (a
    typed way in for tests and tools that hold the app, e.g. a ``TestClient``'s ``app``)."""
    ctx: Context = app.state.context
    return ctx
