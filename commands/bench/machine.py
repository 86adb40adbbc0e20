"""What every benchmark reports beside its figures: the machine it ran on, and the baseline
of a describe round trip. A module of its own, light: the benchmarks of the base install
import it without the kit."""

from __future__ import annotations

import os
import platform
import time
from typing import Any

import httpx


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "system": platform.system(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "processor": platform.processor() or None}


def baseline(client: httpx.Client, requests: int = 300) -> dict[str, float]:
    """Round trips per second of the cheapest request (``GET /v1/describe``) on the same
    server and connection: the ceiling any step rate is measured against."""
    started = time.perf_counter()
    for _ in range(requests):
        client.get("/v1/describe").raise_for_status()
    seconds = time.perf_counter() - started
    return {"requests": requests, "seconds": round(seconds, 3),
            "round_trips_per_second": round(requests / seconds, 1)}
