"""The client of ``waypost bench publish`` (and of its heavy-collection section): the server
under test, its HTTP client, the writer's token and the shared entry blob; every unexpected
answer stops the run with the exact request, response and the tail of the server's log."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from waypost.conformance.targets import ServerProcess


class BenchError(RuntimeError):
    """The server answered something the benchmark cannot go on from; the message holds the
    exact request and response (and the tail of the server's log)."""


@dataclass
class Bench:
    """One run: the server, its HTTP client, the writer's token and the shared entry blob."""

    server: ServerProcess
    client: httpx.Client
    admin_token: str
    token: str = ""
    blob_id: str = ""
    limits: dict[str, Any] = field(default_factory=dict)
    _next: int = 0

    def rid(self) -> str:
        self._next += 1
        return f"bench.{self._next}"

    def call(self, method: str, path: str, *, expect: int | tuple[int, ...],
             body: Any = None, admin: bool = False, **kwargs: Any) -> httpx.Response:
        """One request; any status other than ``expect`` stops the run with the evidence."""
        bearer = self.admin_token if admin else self.token
        headers = {"Authorization": f"Bearer {bearer}", **kwargs.pop("headers", {})}
        response = self.client.request(method, path, json=body, headers=headers, **kwargs)
        expected = (expect,) if isinstance(expect, int) else expect
        if response.status_code not in expected:
            raise BenchError(self.evidence(method, path, body, response, expected))
        return response

    def evidence(self, method: str, path: str, body: Any, response: httpx.Response,
                 expected: tuple[int, ...]) -> str:
        sent = "(streamed bytes)" if body is None else json.dumps(body)
        if len(sent) > 2000:
            sent = sent[:2000] + f"… ({len(sent)} characters in all)"
        log = "".join(self.server.log[-40:]).rstrip()
        return (f"{method} {path} answered {response.status_code}, expected "
                f"{' or '.join(map(str, expected))}\nrequest body: {sent}\n"
                f"response body: {response.text[:4000]}\nserver log (tail):\n{log}")
