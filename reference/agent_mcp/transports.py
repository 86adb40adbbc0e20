"""Serving the MCP server: stdio (one client, the default), or Streamable HTTP on a socket
whose clients must present the agent's own token as a bearer token."""

from __future__ import annotations

import hashlib
import hmac
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from mcp.server import Server
from mcp.server.stdio import stdio_server
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

PATH = "/mcp"


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on stdin/stdout until it closes them."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class BearerGuard:
    """Let through only HTTP requests that carry ``Authorization: Bearer <token>`` (compared
    as SHA-256 digests in constant time); others get 401 in the error envelope."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.digest = hashlib.sha256(token.encode()).digest()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"authorization", b"")
            given = header[7:] if header[:7].lower() == b"bearer " else b""
            if not hmac.compare_digest(hashlib.sha256(given).digest(), self.digest):
                refusal = JSONResponse({"error": {
                    "code": "UNAUTHENTICATED", "details": {},
                    "message": "send the agent's Waypost token as a bearer token"}},
                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound and listening on host:port (port 0: any free one)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(128)
    return sock


def serve_http(server: Server[Any], token: str, host: str, port: int,
               ready: Callable[[str], None]) -> None:
    """Serve Streamable HTTP at ``/mcp`` until interrupted; ``ready`` gets the endpoint's URL
    once the socket listens."""
    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    app = BearerGuard(server.streamable_http_app(streamable_http_path=PATH, host=host), token)
    shown = f"[{host}]" if ":" in host else host
    ready(f"http://{shown}:{bound}{PATH}")
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                  lifespan="on")).run(sockets=[sock])
