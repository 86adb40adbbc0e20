"""What every operation needs: storage, blobs, the clock, the cursor key, the published limits."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from waypost.reference.domain.clock import SystemClock
from waypost.reference.domain.faults import Faults
from waypost.reference.domain.published_limits import Limits
from waypost.reference.domain.refusal_brake import RefusalBrake
from waypost.reference.domain.remembered import RememberedPrincipals
from waypost.reference.domain.sessions import SessionPolicy, SignInLimiter
from waypost.reference.service.wakeups import FeedSignal
from waypost.reference.storage.blob_store import BlobStore
from waypost.reference.storage.driver import Driver


@dataclass
class Outcome:
    """The answer to an operation: status, JSON body, and whether it replays a stored result."""

    status: int
    body: dict[str, Any]
    replayed: bool = False


@dataclass
class Context:
    """Shared by all requests of one server process."""

    driver: Driver
    blobs: BlobStore
    clock: SystemClock
    #: the keys derived from the server's secret (``domain/keys.py``), one per purpose
    cursor_key: bytes
    admin_digest: bytes | None
    csrf_key: bytes
    session_key: bytes
    limits: Limits = field(default_factory=Limits)
    signal: FeedSignal = field(default_factory=FeedSignal)
    test_hooks: bool = False
    faults: Faults = field(default_factory=Faults)
    sessions: SessionPolicy = field(default_factory=SessionPolicy)
    sign_ins: SignInLimiter = field(default_factory=SignInLimiter)
    remembered: RememberedPrincipals = field(default_factory=RememberedPrincipals)
    #: holds refused credentials (None: not at all, as on a test deployment, which serves a
    #: conformance kit that is refused on purpose, all from one address)
    brake: RefusalBrake | None = field(default_factory=RefusalBrake)
    #: whether this process sees every write of its database (it alone serves it): cursors'
    #: claims and tokens known to be live since their check rely on it
    sole_server: bool = True
    #: one large request body parsed at a time (``http/endpoints.py``, ``_parsed_in_steps``)
    large_bodies: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))
