"""The fault proxy: network faults for targets without fault points (any deployment URL).

It sits between the kit and the target as an httpx transport, so every byte still goes to the
real deployment over real HTTP; armed, the next request suffers one fault:

- ``drop_request``: never forwarded; the kit sees a dropped connection;
- ``drop_response``: forwarded and answered by the target, the answer thrown away;
- ``duplicate``: forwarded twice (the network delivered it twice); the kit sees the second answer;
- ``delay``: forwarded after a pause (a slow network; nothing may depend on timing).
"""

from __future__ import annotations

import time

import httpx

ACTIONS = ("drop_request", "drop_response", "duplicate", "delay")
DELAY_SECONDS = 0.2


class FaultProxy(httpx.BaseTransport):
    """An httpx transport that forwards to ``inner`` and injects the armed fault once."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.armed: str | None = None
        self.used: set[str] = set()  # the fault kinds this run injected (for the report)

    def arm(self, action: str) -> None:
        if action not in ACTIONS:
            raise ValueError(f"unknown proxy fault {action!r}")
        self.armed = action

    def disarm(self) -> None:
        self.armed = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        action, self.armed = self.armed, None
        if action is None:
            return self.inner.handle_request(request)
        self.used.add(action)
        if action == "drop_request":
            raise httpx.ConnectError("fault proxy: the request was dropped", request=request)
        if action == "delay":
            time.sleep(DELAY_SECONDS)  # the fault itself, not a synchronisation
            return self.inner.handle_request(request)
        request.read()
        first = self.inner.handle_request(request)
        first.read()
        first.close()
        if action == "drop_response":
            raise httpx.ReadError("fault proxy: the response was dropped", request=request)
        return self.inner.handle_request(request)  # duplicate: the second delivery answers

    def close(self) -> None:
        self.inner.close()
