"""What ``waypost serve`` (and ``gc``) check and say before serving: the storage opens, the
port is free (else one line naming ``--port``), and where the API, its OpenAPI document and the
dashboard will be."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
from typing import Any


def storage_failures() -> tuple[type[BaseException], ...]:
    from waypost.adapters.d1.driver import D1Error
    from waypost.reference.domain.errors import StorageUnavailable

    return (StorageUnavailable, D1Error, OSError)


def storage_problem(error: BaseException) -> str:
    """One line saying why the storage could not be used."""
    return f"the storage cannot be used: {error}"


def storage_reachable(settings: Any, command: str) -> bool:
    """Open the storage once (migrations included) before serving, so that a gateway that is
    not listening, or refuses the secret, is one line on stderr instead of a traceback."""
    import asyncio

    from waypost.reference.server import open_context

    async def probe() -> None:
        async with open_context(settings):
            pass

    try:
        asyncio.run(probe())
    except storage_failures() as error:
        print(f"waypost {command}: {storage_problem(error)}", file=sys.stderr)
        return False
    return True


def port_taken(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be served (another process listens there), or None. A probe
    bound and closed at once: uvicorn binds the same way right after."""
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return (f"port {port} on {host} is in use: stop what holds it, or serve on "
                        "another with --port N")
            return f"cannot listen on {host}:{port}: {error.strerror}"
    return None


def where(host: str, port: int, dashboard: bool) -> str:
    """One line: the URLs of the API, its OpenAPI document and (if served) the dashboard."""
    shown = f"[{host}]" if ":" in host else ("127.0.0.1" if host in ("0.0.0.0", "") else host)
    base = f"http://{shown}:{port}"
    line = f"API {base}/v1/describe, OpenAPI {base}/openapi.json"
    return line + (f", dashboard {base}/dashboard/" if dashboard else "")


def storage_arguments(command: argparse.ArgumentParser) -> None:
    """``--storage`` and ``--gateway``, as serve, gc and verify take them."""
    command.add_argument("--storage", choices=["sqlite", "d1"], default="sqlite",
                         help="sqlite: the embedded SQLite file and local objects (default); "
                              "d1: D1 and R2 through the gateway Worker (its secret in "
                              "WAYPOST_GATEWAY_SECRET)")
    command.add_argument("--gateway", default=None, metavar="URL",
                         help="the gateway Worker's base URL (with --storage d1), e.g. one "
                              "started by 'waypost gateway' or deployed to Cloudflare")


def storage_settings(args: argparse.Namespace, command: str) -> dict[str, Any] | None:
    """The storage settings the flags name, or None (after saying why) if incomplete."""
    secret = os.environ.get("WAYPOST_GATEWAY_SECRET") or None
    if args.storage == "d1" and not (args.gateway and secret):
        print(f"waypost {command}: --storage d1 needs --gateway URL and WAYPOST_GATEWAY_SECRET",
              file=sys.stderr)
        return None
    return {"storage": args.storage, "gateway_url": args.gateway, "gateway_secret": secret}
