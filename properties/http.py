"""The kit's only way to reach a server: HTTP through httpx, every exchange recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from waypost.properties.proxy import FaultProxy

if TYPE_CHECKING:
    from waypost.properties.fixtures import Fixtures

#: The status of an exchange whose connection closed without an HTTP answer.
DROPPED = 0


class NeedsAdmin(RuntimeError):
    """A command needs the admin API (the control plane or a test hook), and the run has
    none: it goes through fixtures. Raised before any request is sent."""


@dataclass
class Exchange:
    """One request and its answer, as a replay file shows it."""

    method: str
    path: str
    who: str
    body: Any
    params: dict[str, Any] | None
    status: int
    answer: Any
    replayed: bool

    def as_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "as": self.who, "body": self.body,
                "params": self.params, "status": self.status, "answer": self.answer,
                "replayed": self.replayed}


@dataclass
class Answer:
    status: int
    json: Any
    replayed: bool

    @property
    def code(self) -> str | None:
        """The error code of an envelope, else None."""
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), dict):
            code = self.json["error"].get("code")
            return code if isinstance(code, str) else None
        return None


@dataclass
class Content:
    status: int
    data: bytes
    etag: str


@dataclass
class Session:
    """A target's HTTP client plus the admin token; ``trace`` keeps the exchanges of one run."""

    client: httpx.Client
    admin_token: str
    trace: list[Exchange] = field(default_factory=list)
    record: bool = True
    proxy: FaultProxy | None = None  # network faults for targets without fault points
    hook_faults: int = 0  # faults armed through /_test/faults
    fixtures: Fixtures | None = None  # a run without an admin API: its pre-provisioned sets

    def call(self, method: str, path: str, *, bearer: str, who: str, body: Any = None,
             params: dict[str, Any] | None = None, may_drop: bool = False,
             raw: bytes | None = None) -> Answer:
        """One request. With ``may_drop`` (a fault was armed), a connection that closes
        without an answer is :data:`DROPPED` (status 0) instead of an error of the run.
        ``raw`` is a JSON body sent byte for byte (its length matters), in place of ``body``."""
        headers = {"Authorization": f"Bearer {bearer}"}
        if raw is not None:
            headers["Content-Type"] = "application/json"
        try:
            if raw is None:
                response = self.client.request(method, path, json=body, params=params,
                                               headers=headers)
            else:
                response = self.client.request(method, path, content=raw, params=params,
                                               headers=headers)
                body = f"<{len(raw)} bytes>"
        except httpx.TransportError:
            if not may_drop:
                raise
            if self.record:
                self.trace.append(Exchange(method, path, who, body, params, DROPPED, None,
                                           False))
            return Answer(DROPPED, None, False)
        try:
            payload: Any = response.json()
        except ValueError:
            payload = {"unparsed": response.text[:500]}
            if may_drop and response.status_code >= 500:
                # No envelope: a proxy's or an in-process server's stand-in for a connection
                # that closed without an answer.
                if self.record:
                    self.trace.append(Exchange(method, path, who, body, params, DROPPED,
                                               payload, False))
                return Answer(DROPPED, None, False)
        answer = Answer(response.status_code, payload,
                        response.headers.get("waypost-replayed") == "true")
        if self.record:
            shown = payload
            if isinstance(payload, dict) and isinstance(payload.get("token"), str):
                shown = {**payload, "token": "<redacted>"}  # replay files carry no secrets
            self.trace.append(Exchange(method, path, who, body, params, answer.status, shown,
                                       answer.replayed))
        return answer

    def put(self, path: str, data: bytes, *, bearer: str, who: str) -> Answer:
        """A raw-bytes PUT (upload content)."""
        response = self.client.put(path, content=data,
                                   headers={"Authorization": f"Bearer {bearer}",
                                            "Content-Type": "application/octet-stream"})
        try:
            payload: Any = response.json()
        except ValueError:
            payload = {"unparsed": response.text[:500]}
        answer = Answer(response.status_code, payload, False)
        if self.record:
            self.trace.append(Exchange("PUT", path, who, f"<{len(data)} bytes>", None,
                                       answer.status, payload, False))
        return answer

    def get_bytes(self, path: str, *, bearer: str, who: str) -> Content:
        """A GET whose answer is bytes (blob content)."""
        response = self.client.get(path, headers={"Authorization": f"Bearer {bearer}"})
        if self.record:
            self.trace.append(Exchange("GET", path, who, None, None, response.status_code,
                                       f"<{len(response.content)} bytes>", False))
        return Content(response.status_code, response.content, response.headers.get("etag", ""))

    def admin(self, method: str, path: str, body: Any = None) -> Answer:
        """A request with the admin token; without one (a run through fixtures) nothing is
        sent and :class:`NeedsAdmin` says what needed it."""
        if not self.admin_token:
            raise NeedsAdmin(f"needs the admin API ({method} {path})")
        return self.call(method, path, bearer=self.admin_token, who="admin", body=body)

    def describe(self) -> Answer:
        """``GET /v1/describe``, which needs no credential (WP-AUTH-1)."""
        response = self.client.get("/v1/describe")
        try:
            payload: Any = response.json()
        except ValueError:
            payload = {"unparsed": response.text[:500]}
        if self.record:
            self.trace.append(Exchange("GET", "/v1/describe", "anyone", None, None,
                                       response.status_code, payload, False))
        return Answer(response.status_code, payload, False)
