"""The kit's in-process runs: an httpx transport straight into the app on a TestClient's event
loop. The TestClient itself crosses threads once per ASGI message, several times a request,
which took a third of a kit run's time; this crosses once per request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import httpx
from starlette.testclient import TestClient

#: A front end: the app it stands in front of → the app the kit reaches.
Front = Callable[[Any], Any]


class PortalTransport(httpx.BaseTransport):
    """Each request is one ASGI call on the client's loop. A response the app starts and never
    finishes (a request abandoned at a fault point) is a dropped connection, as over real HTTP:
    ``httpx.RemoteProtocolError``."""

    def __init__(self, client: TestClient, front: Front | None = None) -> None:
        if client.portal is None:
            raise RuntimeError("enter the TestClient first: it runs the app's lifespan")
        self.portal = client.portal
        self.app = client.app if front is None else front(client.app)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": request.method, "scheme": request.url.scheme,
            "path": request.url.path, "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query, "root_path": "",
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "client": ("127.0.0.1", 50000), "server": (request.url.host, request.url.port or 80),
        }

        async def exchange() -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
            sent: dict[str, Any] = {"status": 0, "headers": [], "body": [], "done": False}
            delivered, answered = False, anyio.Event()

            async def receive() -> dict[str, Any]:
                nonlocal delivered
                if delivered:  # the client stays until it has its answer (long polls wait)
                    await answered.wait()
                    return {"type": "http.disconnect"}
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    sent["status"], sent["headers"] = message["status"], message.get("headers", [])
                elif message["type"] == "http.response.body":
                    sent["body"].append(message.get("body", b""))
                    sent["done"] = not message.get("more_body", False)
                    if sent["done"]:
                        answered.set()

            await self.app(scope, receive, send)
            return sent["status"], sent["headers"], b"".join(sent["body"]), sent["done"]

        status, headers, content, done = self.portal.call(exchange)
        if not done:
            raise httpx.RemoteProtocolError("the server closed the connection without a "
                                            "complete response", request=request)
        kept = [(k, v) for k, v in headers if k.lower() not in (b"content-length",
                                                                  b"transfer-encoding")]
        return httpx.Response(status, headers=kept, content=content, request=request)


def kit_client(client: TestClient, front: Front | None = None) -> httpx.Client:
    """A client for ``runner.run`` / ``runner.replay_file`` into the app ``client`` serves;
    ``front`` wraps the app in a front end of the test's (a cache, a proxy that rewrites)."""
    return httpx.Client(transport=PortalTransport(client, front), base_url="http://testserver",
                        timeout=60)
