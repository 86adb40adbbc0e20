"""A real uvicorn server for an app the test built (and perhaps patched), on loopback in a
thread: for tests that claim "over HTTP" about an app they changed in-process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from waypost.conformance.targets import free_port


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.up = threading.Event()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        self.up.set()


@contextmanager
def serving_app(app: Any, **config: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port until the block ends; its base URL.
    ``config`` goes to ``uvicorn.Config`` (e.g. ``http=`` a protocol class). At the end, an
    answer still running (a server that trickles on purpose) is cancelled after a second
    rather than waited for."""
    port = free_port()
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                    **{"log_level": "critical", "timeout_graceful_shutdown": 1,
                                       **config}))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    assert server.up.wait(timeout=30), "the server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
