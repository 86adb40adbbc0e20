"""Driving ``waypost mcp`` as a real process through the MCP SDK's own client, over stdio or
Streamable HTTP, against a real ``waypost serve``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from waypost.conformance.targets import ServerProcess

#: Seconds a single MCP round may take before a test fails instead of hanging.
ROUND_SECONDS = 120.0


@contextmanager
def reference_server(data_dir: Path, admin_token: str) -> Iterator[str]:
    """A real ``waypost serve`` for MCP tests (access log off, ``synchronous=normal``); its URL."""
    process = ServerProcess(data_dir, admin_token, "--no-access-log", "--synchronous", "normal")
    try:
        yield process.url
    finally:
        process.stop()


def command(url: str, db: Path, *extra: str) -> list[str]:
    """``waypost mcp`` for one agent (``python -m waypost.cli mcp``: the real console entry)."""
    return [sys.executable, "-m", "waypost.cli", "mcp", "--server", url, "--db", str(db), *extra]


@asynccontextmanager
async def over_stdio(url: str, db: Path, token: str, errlog: TextIO,
                     fault: str | None = None, extra: tuple[str, ...] = ()
                     ) -> AsyncIterator[Client]:
    """An MCP client session with ``waypost mcp`` (``extra``: more of its options) over its
    stdin/stdout (stderr to errlog)."""
    program, *arguments = command(url, db, *extra)
    env = {"WAYPOST_TOKEN": token, **({"WAYPOST_CONSUMER_FAULT": fault} if fault else {})}
    params = StdioServerParameters(command=program, args=arguments, env=env)
    async with Client(stdio_client(params, errlog=errlog),
                      read_timeout_seconds=ROUND_SECONDS) as client:
        yield client


@contextmanager
def http_process(url: str, db: Path, token: str, errlog: TextIO) -> Iterator[str]:
    """``waypost mcp --http --port 0`` running; yields its endpoint URL once it listens."""
    process = subprocess.Popen(command(url, db, "--http", "--port", "0"),
                               env={**os.environ, "WAYPOST_TOKEN": token},
                               stdout=subprocess.PIPE, stderr=errlog, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line, f"waypost mcp --http ended with {process.wait()}"
        yield str(json.loads(line)["url"])
    finally:
        process.terminate()
        process.wait(timeout=30)


@asynccontextmanager
async def over_http(endpoint: str, token: str) -> AsyncIterator[Client]:
    """An MCP client session with ``waypost mcp --http``, sending the agent's token."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                              timeout=httpx2.Timeout(30, read=ROUND_SECONDS))
    async with http, Client(streamable_http_client(endpoint, http_client=http),
                            read_timeout_seconds=ROUND_SECONDS) as client:
        yield client


def text(result: Any) -> str:
    (content,) = result.content
    return str(content.text)


async def ok(client: Client, tool: str, **arguments: Any) -> Any:
    """Call a tool that must succeed; its JSON answer, the same as text and as structured
    content (which the SDK's client has checked against the tool's output schema)."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}: {text(result)}"
    answer = json.loads(text(result))
    assert result.structured_content == answer, tool
    return answer


async def refused(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must fail; the error member of its envelope."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} succeeded: {text(result)}"
    envelope = json.loads(text(result))
    assert set(envelope) == {"error"}
    error: dict[str, Any] = envelope["error"]
    assert set(error) == {"code", "message", "details"}
    return error


def run(main: Callable[[], Awaitable[None]]) -> None:
    """``anyio.run`` with a failure inside the client's task groups raised as itself (not
    wrapped in exception groups), so a failed assertion reads as one."""
    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
            leaf = leaf.exceptions[0]
        raise leaf from None


@asynccontextmanager
async def agent(transport: str, url: str, db: Path, token: str,
                errlog: TextIO) -> AsyncIterator[Client]:
    """A client session with one agent's ``waypost mcp``, over ``stdio`` or ``http``."""
    if transport == "stdio":
        async with over_stdio(url, db, token, errlog) as client:
            yield client
        return
    with http_process(url, db, token, errlog) as endpoint:
        async with over_http(endpoint, token) as client:
            yield client


class Relay:
    """A TCP relay on loopback in front of a server (``url``). It passes bytes both ways until
    :meth:`stall`; from then on it takes every request and passes none on, so no answer ever
    comes (a deployment hung on the network). ``held`` is set once it holds a request;
    :meth:`close` drops every connection."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stalled, self.held = threading.Event(), threading.Event()
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self) -> None:
        self.stalled.set()

    def close(self) -> None:
        for sock in self.sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.sockets.append(client)
            upstream = None
            if not self.stalled.is_set():
                upstream = socket.create_connection(self.target)
                self.sockets.append(upstream)
                threading.Thread(target=self._pump, args=(upstream, client, False),
                                 daemon=True).start()
            threading.Thread(target=self._pump, args=(client, upstream, True),
                             daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket | None, requests: bool) -> None:
        try:
            while data := source.recv(1 << 16):
                if sink is None or self.stalled.is_set():
                    if requests:
                        self.held.set()  # taken, never passed on
                    continue
                sink.sendall(data)
        except OSError:
            return


@contextmanager
def relay(url: str) -> Iterator[Relay]:
    """A :class:`Relay` in front of ``url`` for the block."""
    front = Relay(url)
    try:
        yield front
    finally:
        front.close()
