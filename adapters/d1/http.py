"""Talking to the gateway Worker: one HTTP client carrying its shared secret, and what its
answers mean to the reference. D1 and R2 go through the same client and the same rule."""

from __future__ import annotations

from typing import Any

import httpx

from waypost.reference.domain.errors import StorageUnavailable


def gateway_client(url: str, secret: str, *, timeout: float = 60.0) -> httpx.AsyncClient:
    """An HTTP client for the gateway Worker, carrying its shared secret."""
    return httpx.AsyncClient(base_url=url.rstrip("/"), timeout=timeout,
                             headers={"authorization": f"Bearer {secret}"})


async def send(client: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """One request to the gateway. Unreachable, ``5xx`` (D1 or R2 failing for now, the Worker
    down) or ``429`` (throttled) is :class:`StorageUnavailable`: the request may be retried; a
    write may or may not have happened, and callers look their key up on retry."""
    try:
        response = await client.request(method, path, **kwargs)
    except httpx.TransportError as error:
        raise StorageUnavailable(f"gateway unreachable: {error!r}") from None
    if response.status_code >= 500 or response.status_code == 429:
        raise StorageUnavailable(f"gateway answered {response.status_code} to {method} {path}")
    return response
