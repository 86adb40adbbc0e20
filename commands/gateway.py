"""The gateway Worker on local workerd: installed with ``npm ci`` from its lockfile, started with
``node serve.mjs`` on loopback, its D1 and R2 state persisted in a directory.

The installation lives in a cache directory named after the lockfile's digest (the package
itself may be read-only), so ``npm ci`` runs once per lockfile and machine.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from waypost.reference.server import Settings

SOURCES = ("worker.mjs", "serve.mjs", "package.json", "package-lock.json")


class GatewayError(RuntimeError):
    """The gateway could not be installed or started; the message says what node/npm printed."""


def _source_dir() -> Path:
    return Path(str(resources.files("waypost.adapters.d1") / "gateway"))


def cache_root() -> Path:
    """Where installs go: ``$WAYPOST_CACHE``, else ``$XDG_CACHE_HOME/waypost``, else ``~/.cache``."""
    if os.environ.get("WAYPOST_CACHE"):
        return Path(os.environ["WAYPOST_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "waypost"


def install() -> Path:
    """The gateway with its ``node_modules``, installed by ``npm ci`` if not yet there."""
    source = _source_dir()
    lock = (source / "package-lock.json").read_bytes()
    digest = hashlib.sha256(lock + (source / "worker.mjs").read_bytes()
                            + (source / "serve.mjs").read_bytes()).hexdigest()[:16]
    home = cache_root() / f"d1-gateway-{digest}"
    if shutil.which("node") is None:
        raise GatewayError("the D1 gateway runs on Node.js 20+: no `node` on PATH")
    if (home / "node_modules" / ".package-lock.json").exists():
        return home
    if shutil.which("npm") is None:
        raise GatewayError("installing the D1 gateway needs npm (it comes with Node.js) on PATH")
    home.parent.mkdir(parents=True, exist_ok=True)
    # One install at a time per machine (parallel test workers all want it on a cold cache).
    with open(home.parent / f"{home.name}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if not (home / "node_modules" / ".package-lock.json").exists():
            _npm_ci(source, home)
    return home


def _npm_ci(source: Path, home: Path) -> None:
    print(f"waypost: installing the D1 gateway (npm ci: miniflare and workerd, about 170 MB) "
          f"into {home}", file=sys.stderr, flush=True)
    staging = home.with_name(f"{home.name}.{secrets.token_hex(4)}")
    staging.mkdir(parents=True)
    try:
        for name in SOURCES:
            shutil.copyfile(source / name, staging / name)
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                              cwd=staging, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise GatewayError(f"npm ci failed:\n{done.stdout}{done.stderr}")
        shutil.rmtree(home, ignore_errors=True)  # a half install an interrupted run left
        staging.rename(home)
    except subprocess.TimeoutExpired:
        raise GatewayError("npm ci took more than 15 minutes") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def prepare(state_dir: Path, port: int = 0) -> tuple[Path, list[str]]:
    """Install the gateway if needed and make its state directory; return the directory to
    run it in (workerd refuses a script path that climbs out of its working directory) and the
    command line (``GATEWAY_SECRET`` goes in its environment)."""
    home = install()
    state_dir.mkdir(parents=True, exist_ok=True)
    return home, ["node", str(home / "serve.mjs"), "--state", str(state_dir.resolve()),
                  "--port", str(port)]


class LocalGateway:
    """``node serve.mjs`` as a child process; :attr:`url` once it listens. Its output is drained
    by a thread, which also reads the ready line (no polling)."""

    def __init__(self, state_dir: Path, secret: str, *, port: int = 0) -> None:
        home, argv = prepare(state_dir, port)
        self.log: list[str] = []
        self.url = ""
        self._ready = threading.Event()
        self.process = subprocess.Popen(
            argv, cwd=home, env={**os.environ, "GATEWAY_SECRET": secret},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)  # node and its workerd: one group, stopped together
        threading.Thread(target=self._drain, daemon=True).start()
        if not self._ready.wait(timeout=120) or not self.url:
            self.stop()
            raise GatewayError("the D1 gateway did not start:\n" + "".join(self.log))

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.log.append(line)
            if not self.url and line.startswith('{"url"'):
                self.url = str(json.loads(line)["url"])
                self._ready.set()
        self._ready.set()

    def stop(self) -> None:
        """SIGTERM (node stops workerd itself); past 15 s, SIGKILL to the whole group."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@contextmanager
def local_d1(root: Path, admin_token: str | None) -> Iterator[Settings]:
    """Settings of the reference on a fresh local gateway whose state lives under ``root``
    (the server's own data directory too); the gateway stops afterwards."""
    secret = secrets.token_urlsafe(16)
    gateway = LocalGateway(root / "gateway", secret)
    try:
        yield Settings(root / "data", admin_token, storage="d1", gateway_url=gateway.url,
                       gateway_secret=secret, sweep_seconds=0)
    finally:
        gateway.stop()
