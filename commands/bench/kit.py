"""``waypost bench kit``: state-machine steps per second against the sqlite target, with the
machine, a baseline measured in the same run, and where the time goes."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx

from waypost.bench.machine import baseline, machine
from waypost.conformance import runner
from waypost.conformance.profiles import PROFILES
from waypost.conformance.targets import open_target
from waypost.properties.wire import http as kit_http


def bench_kit(profile: str, seed: int, out: Path | None) -> dict[str, Any]:
    """Run the kit once under a timing wrapper around every HTTP exchange."""
    spent: dict[str, float] = defaultdict(float)
    calls: Counter[str] = Counter()
    original = kit_http.Session.call

    def timed(self: kit_http.Session, method: str, path: str, **kwargs: Any) -> kit_http.Answer:
        started = time.perf_counter()
        try:
            return original(self, method, path, **kwargs)
        finally:
            kind = f"{method} {_route(path)}"
            spent[kind] += time.perf_counter() - started
            calls[kind] += 1

    # every request of the run is timed: the kit's one HTTP method, wrapped for the run
    kit_http.Session.call = timed  # type: ignore[method-assign]
    try:
        with open_target("sqlite", None) as target, \
                httpx.Client(base_url=target.url, timeout=60) as client:
            print(f"waypost bench kit: the baseline, then the kit ({profile}, seed {seed}) on "
                  f"{target.url}", file=sys.stderr)
            ceiling = baseline(client)
            report = runner.run("sqlite", client, target.admin_token, profile=profile, seed=seed,
                                progress=runner.Progress(sys.stderr,
                                                         PROFILES[profile].examples))
    finally:
        kit_http.Session.call = original  # type: ignore[method-assign]
    http_seconds = sum(spent.values())
    result = {
        "benchmark": "kit", "machine": machine(), "profile": profile, "seed": seed,
        "baseline": ceiling,
        "examples": report.examples, "steps": report.steps,
        "seconds": round(report.seconds, 3),
        "steps_per_second": round(report.steps / report.seconds, 1),
        "failed": report.failed,
        "requests": sum(calls.values()),
        "requests_per_step": round(sum(calls.values()) / max(report.steps, 1), 2),
        "time": {
            "http_seconds": round(http_seconds, 3),
            "http_share": round(http_seconds / report.seconds, 3),
            "model_and_hypothesis_seconds": round(report.seconds - http_seconds, 3),
            "by_request": {kind: {"calls": calls[kind], "seconds": round(spent[kind], 3),
                                  "ms_each": round(1000 * spent[kind] / calls[kind], 2)}
                           for kind in sorted(spent, key=spent.__getitem__, reverse=True)},
        },
    }
    text = json.dumps(result, indent=2)
    if out is not None:
        out.write_text(text + "\n")
    print(text)
    return result


def _route(path: str) -> str:
    """``/v1/messages/msg_x`` → ``/v1/messages/{id}`` (group timings by route)."""
    parts = path.split("/")
    if path.startswith("/admin/"):
        return "/admin/v1/…/" + parts[-1] if len(parts) > 4 else path
    if len(parts) > 3:
        return "/".join(parts[:3]) + "/{id}"
    return path
