"""Where the kit sends its requests: the embedded reference started here, or any URL.

A target yields a base URL and an admin token; the kit provisions its own spaces through the
control plane and touches nothing else.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from waypost.properties.wire.untrusted import visible


@dataclass(frozen=True)
class Target:
    """A running deployment the kit can reach."""

    name: str
    url: str
    admin_token: str


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ChildProcess:
    """A ``waypost`` command (or another module of the package) as a child process. Its output
    is drained by a thread, which also tells when a line says it is ready (no polling, no
    sleeps)."""

    what = "the child process"
    start_seconds = 60.0
    stop_seconds = 10.0

    def __init__(self, arguments: list[str], env: dict[str, str],
                 module: str = "waypost.cli", python: str = sys.executable) -> None:
        self.log: list[str] = []
        self.ready = threading.Event()
        self.process = subprocess.Popen(
            [python, "-m", module, *arguments], env={**os.environ, **env},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)  # with any children (the gateway's workerd): one group
        threading.Thread(target=self._drain, daemon=True).start()
        if not self.ready.wait(timeout=self.start_seconds) or self.process.poll() is not None:
            self.stop()
            raise RuntimeError(f"{self.what} did not start:\n" + "".join(self.log))

    def is_ready(self, line: str) -> bool:
        """Whether this line of output says the process is ready."""
        raise NotImplementedError

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.log.append(line)
            if not self.ready.is_set() and self.is_ready(line):
                self.ready.set()
        self.ready.set()

    def stop(self) -> None:
        """SIGTERM; if it has not ended in time, SIGKILL to its whole process group."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=self.stop_seconds)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


class ServerProcess(ChildProcess):
    """``waypost serve`` on loopback, ready when uvicorn says it is listening."""

    what = "the reference server"

    def __init__(self, data_dir: Path, admin_token: str, *extra: str,
                 env: dict[str, str] | None = None, python: str = sys.executable) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        super().__init__(["serve", "--data-dir", str(data_dir), "--port", str(self.port),
                          "--log-level", "info", *extra],
                         {**(env or {}), "WAYPOST_ADMIN_TOKEN": admin_token}, python=python)

    def is_ready(self, line: str) -> bool:
        return "Uvicorn running on" in line


@contextmanager
def sqlite_target(test_hooks: bool = True) -> Iterator[Target]:
    """The embedded reference (SQLite + files) in a temporary data directory."""
    admin_token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="waypost-kit-") as data_dir:
        server = ServerProcess(Path(data_dir) / "data", admin_token, "--no-access-log",
                               "--synchronous", "normal",
                               *(["--test-hooks"] if test_hooks else []))
        try:
            yield Target("sqlite", server.url, admin_token)
        finally:
            server.stop()


class GatewayProcess(ChildProcess):
    """``waypost gateway`` (the D1/R2 gateway Worker on local workerd), ready when it prints
    ``{"url": …}``."""

    what = "the D1 gateway"
    start_seconds = 600.0  # the first start runs npm ci
    stop_seconds = 30.0

    def __init__(self, state_dir: Path, secret: str) -> None:
        self.url = ""
        super().__init__(["gateway", "--state", str(state_dir)],
                         {"WAYPOST_GATEWAY_SECRET": secret})

    def is_ready(self, line: str) -> bool:
        if line.startswith('{"url"'):
            self.url = str(json.loads(line)["url"])
        return bool(self.url)


@contextmanager
def d1_target(test_hooks: bool = True) -> Iterator[Target]:
    """The reference on D1 and R2: the gateway Worker on local workerd, then the server."""
    admin_token, secret = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="waypost-kit-d1-") as work:
        gateway = GatewayProcess(Path(work) / "d1", secret)
        try:
            server = ServerProcess(Path(work) / "data", admin_token, "--no-access-log",
                                   *(["--test-hooks"] if test_hooks else []),
                                   "--storage", "d1", "--gateway", gateway.url,
                                   env={"WAYPOST_GATEWAY_SECRET": secret})
            try:
                yield Target("d1", server.url, admin_token)
            finally:
                server.stop()
        finally:
            gateway.stop()


@contextmanager
def open_target(name: str, admin_token: str | None, fixtures: bool = False,
                test_hooks: bool = True) -> Iterator[Target]:
    """``sqlite``, ``d1`` or a base URL (``http://…``) of any deployment; the reference
    started here runs with its test hooks unless ``test_hooks`` is false; with ``fixtures``
    the URL's admin token is never used (none is needed)."""
    if name in ("sqlite", "d1"):
        with (sqlite_target(test_hooks) if name == "sqlite" else d1_target(test_hooks)) \
                as target:
            yield target
        return
    if not name.startswith(("http://", "https://")):
        raise ValueError(f"unknown target {name!r}: use sqlite, d1 or a URL such as "
                         "http://127.0.0.1:8787")
    if fixtures:
        yield Target("url", name.rstrip("/"), "")
        return
    if not admin_token:
        raise ValueError("a URL target needs --admin-token (or WAYPOST_ADMIN_TOKEN) to "
                         "provision its own spaces, or --fixtures")
    yield Target("url", name.rstrip("/"), admin_token)


@dataclass(frozen=True)
class Identity:
    """What a target's ``/v1/describe`` says it is (WP-HTTP-9): its protocol and its server
    (name and version, e.g. ``waypost-reference/0.1.0``); None where it says nothing usable.
    Both are the target's words: bounded and made visible here, escaped where shown."""

    protocol: str | None = None
    server: str | None = None


#: The most characters of a target's self-description a report keeps.
IDENTITY_CHARS = 200


def identity(client: httpx.Client) -> Identity:
    """The target's protocol and server as its ``/v1/describe`` names them; an answer that is
    missing, not JSON or out of the kit's bounds names nothing (the run's checks say why)."""
    try:
        answer = client.get("/v1/describe")
        described = answer.json() if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError):  # OutOfBounds is a TransportError
        return Identity()
    if not isinstance(described, dict):
        return Identity()

    def said(key: str) -> str | None:
        value = described.get(key)
        return visible(value)[:IDENTITY_CHARS] if isinstance(value, str) and value else None
    return Identity(said("protocol"), said("server"))


class TargetError(RuntimeError):
    """The target cannot serve a run: unreachable, or its admin token is refused."""


def check_target(client: httpx.Client, admin_token: str) -> None:
    """Fail fast, and say why, before a run: the target must answer, and accept the admin
    token (asked with a read of a space no run creates; no token, as a run through fixtures
    has none: nothing is asked)."""
    try:
        client.get("/v1/describe")
        if not admin_token:
            return
        answer = client.get("/admin/v1/spaces/zz-kit-preflight",
                            headers={"Authorization": f"Bearer {admin_token}"})
    except httpx.TransportError as error:
        raise TargetError(f"cannot reach the target at {client.base_url}: "
                          f"{error or type(error).__name__}") from None
    if answer.status_code in (401, 403):
        raise TargetError(f"the target at {client.base_url} refused the admin token "
                          f"({answer.status_code}): pass the deployment's token with "
                          "--admin-token or WAYPOST_ADMIN_TOKEN")
