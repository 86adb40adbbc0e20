"""The target of ``waypost conformance crash-matrix``: the reference started here with
``--crash-mode exit`` (restarted whenever a crash ends it), or a running server with test hooks
(restarted through ``/_test/restart``), with a provisioned space, and the few hooks the matrix
uses (fault points, the clock). HTTP only: nothing of the reference is imported.
"""

from __future__ import annotations

import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from waypost.conformance.targets import GatewayProcess, ServerProcess
from waypost.properties.model.matching import epoch_ms
from waypost.properties.protocol.constants import CRASH_EXIT, listed_fault_points


class Reference:
    """A server with test hooks: by default the reference on one data directory, started here
    with ``--crash-mode exit`` and restarted whenever a crash ends it; or (``url`` given) a
    running server in ``abandon`` mode, restarted through ``/_test/restart``."""

    def __init__(self, data_dir: Path, url: str | None = None, admin_token: str = "",
                 gateway: GatewayProcess | None = None, gateway_secret: str = "",
                 power_loss: bool = False) -> None:
        self.data_dir = data_dir
        self.admin_token = admin_token or secrets.token_urlsafe(16)
        # On D1 the gateway outlives every crash of the reference: the data is there. A
        # process crash loses nothing SQLite wrote (normal is enough); a power cut loses what
        # was not synced (full, behind the simulator: commands/power_cut.py).
        self.storage: tuple[str, ...] = ("--synchronous", "normal")
        if gateway is not None:
            self.storage = ("--storage", "d1", "--gateway", gateway.url)
        elif power_loss:
            self.storage = ("--synchronous", "full", "--simulate-power-cuts")
        self.env = {"WAYPOST_GATEWAY_SECRET": gateway_secret} if gateway else {}
        self.fixed_url = url
        self.process = None if url else self._start()
        self.tokens: dict[str, str] = {}
        self.space = f"crash-{secrets.token_hex(4)}"  # a running server may hold earlier runs

    def _start(self) -> ServerProcess:
        return ServerProcess(self.data_dir, self.admin_token, "--test-hooks", "--crash-mode",
                             "exit", "--no-access-log", *self.storage, env=self.env)

    @property
    def url(self) -> str:
        if self.process is None:
            assert self.fixed_url is not None
            return self.fixed_url
        return self.process.url

    def recover(self) -> None:
        """After a dropped connection: restart (a real process, or through the hook)."""
        if self.process is None:
            answer = self.admin("POST", "/_test/restart", {})
            if answer.status_code != 200:
                raise RuntimeError(f"restart: {answer.status_code} {answer.text}")
            return
        self.restart_after_crash()

    def restart_after_crash(self) -> None:
        """The connection dropped: the process must be ending with the crash status; start a
        new one on the same data directory."""
        assert self.process is not None
        try:
            code = self.process.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise RuntimeError("the connection dropped but the server did not end") from None
        if code != CRASH_EXIT:
            raise RuntimeError(f"the server ended with status {code}:\n"
                               + "".join(self.process.log[-20:]))
        self.process = self._start()

    def listed_points(self) -> tuple[str, ...]:
        """The fault points the target lists (``GET /_test/faults``), validated."""
        answer = self.admin("GET", "/_test/faults")
        try:
            return listed_fault_points(json_object(answer) if answer.status_code == 200 else None)
        except ValueError as error:
            raise RuntimeError(f"the target's fault points: {error} "
                               f"({answer.status_code} {answer.text[:200]!r})") from None

    def armed(self, point: str) -> bool | None:
        """Whether ``point`` is still armed; None when the connection failed (in the crash
        mode: the process died, and it has been restarted)."""
        try:
            answer = self.admin("GET", "/_test/faults")
        except httpx.TransportError:
            if self.process is None:
                raise RuntimeError("the running target stopped answering") from None
            self.restart_after_crash()
            return None
        armed = json_object(answer).get("armed")
        if answer.status_code != 200 or not isinstance(armed, list):
            raise RuntimeError(f"GET /_test/faults: {answer.status_code} {answer.text[:200]!r}")
        return any(isinstance(a, dict) and a.get("point") == point for a in armed)

    def disarm(self) -> None:
        """``DELETE /_test/faults``; a process that ended meanwhile (the sweeper passed an
        armed crash point) is restarted, with nothing armed."""
        try:
            self.admin("DELETE", "/_test/faults")
        except httpx.TransportError:
            if self.process is None:
                raise RuntimeError("the running target stopped answering") from None
            self.restart_after_crash()

    def expire(self, expires_at: Any) -> None:
        """Move the target's clock (``/_test/clock``) one second past ``expires_at``."""
        clock = self.admin("GET", "/_test/clock")
        now, until = epoch_ms(json_object(clock).get("now")), epoch_ms(expires_at)
        if clock.status_code != 200 or now is None or until is None:
            raise RuntimeError(f"GET /_test/clock: {clock.status_code} {clock.text[:200]!r}")
        if until >= now:
            moved = self.admin("POST", "/_test/clock", {"advance_ms": until - now + 1000})
            if moved.status_code != 200:
                raise RuntimeError(f"POST /_test/clock: {moved.status_code} {moved.text[:200]}")

    def admin(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return httpx.request(method, self.url + path, json=body, timeout=30,
                             headers={"Authorization": f"Bearer {self.admin_token}"})

    def call(self, who: str, method: str, path: str, body: Any = None,
             content: bytes | None = None) -> httpx.Response | None:
        """A data-plane request; ``None`` when the connection dropped (a crash)."""
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        try:
            return httpx.request(method, self.url + path, json=body, content=content,
                                 headers=headers, timeout=30)
        except httpx.TransportError:
            return None

    def must(self, who: str, method: str, path: str, body: Any = None,
             content: bytes | None = None) -> dict[str, Any]:
        answer = self.call(who, method, path, body, content)
        if answer is None or answer.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {None if answer is None else answer.text}")
        data: dict[str, Any] = answer.json()
        return data

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


def json_object(answer: httpx.Response) -> dict[str, Any]:
    """The answer's JSON object, or ``{}`` when it is not one."""
    try:
        data = answer.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def provision(ref: Reference) -> None:
    """A space with alice (writer of collection notes) and bob, an inbox and a token each."""
    def ok(path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = ref.admin("POST", path, body)
        if answer.status_code not in (200, 201):
            raise RuntimeError(f"provisioning {path}: {answer.text}")
        data: dict[str, Any] = answer.json()
        return data

    space = ref.space
    ok("/admin/v1/spaces", {"request_id": f"{space}-s", "space_id": space,
                            "display_name": space, "source_uri": f"waypost-crash://{space}",
                            "default_actor": {"actor_id": "alice", "kind": "agent",
                                              "display_name": "alice"}})
    ok(f"/admin/v1/spaces/{space}/actors", {"request_id": f"{space}-b", "actor_id": "bob",
                                            "kind": "agent", "display_name": "bob"})
    ok(f"/admin/v1/spaces/{space}/collections", {
        "request_id": f"{space}-c", "collection_id": "notes", "source_actor_id": "alice",
        "scope": "notes"})
    for actor in ("alice", "bob"):
        ok(f"/admin/v1/spaces/{space}/consumers", {
            "request_id": f"{space}-c-{actor}", "consumer_id": f"{actor}-in",
            "actor_id": actor, "view": "inbox"})
        issued = ok(f"/admin/v1/spaces/{space}/tokens", {
            "request_id": f"{space}-t-{actor}", "actor_id": actor,
            "consumer_id": f"{actor}-in",
            "scopes": ["message.send", "message.read", "receipt.write", "blob.write",
                       "memory.write", "memory.read"],
            "recipients": {"mode": "any"}, "blob_references": [],
            "collections": [{"collection_id": "notes", "actions": ["read", "write"]}]})
        ref.tokens[actor] = issued["token"]


@contextmanager
def reference(url: str | None = None, admin_token: str = "",
              target: str = "sqlite", power_loss: bool = False) -> Iterator[Reference]:
    """The reference started here on ``target`` (sqlite, or d1 behind a local gateway), or
    the running server at ``url``; ``power_loss``: sqlite behind the power-cut simulator."""
    with tempfile.TemporaryDirectory(prefix="waypost-crash-") as scratch:
        gateway, secret = None, secrets.token_urlsafe(16)
        if target == "d1" and url is None:
            gateway = GatewayProcess(Path(scratch) / "d1", secret)
        try:
            ref = Reference(Path(scratch) / "data", url, admin_token, gateway, secret,
                            power_loss)
            try:
                provision(ref)
                yield ref
            finally:
                ref.stop()
        finally:
            if gateway is not None:
                gateway.stop()
