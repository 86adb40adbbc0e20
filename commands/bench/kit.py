"""``waypost bench kit``: the kit's pace against the sqlite target, near and far. Each run is
one kit run under a timing wrapper around every HTTP exchange: steps and checks per second,
total time, where the time goes; with ``--rtt MS`` a second run puts the target that far away
through the bench's latency proxy, with as many workers as the kit picks for that distance.
The machine, its load, and a baseline measured in the same run (describe round trips on the
same server) are in the JSON."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx

from waypost.bench.latency_proxy import at_distance
from waypost.bench.machine import baseline, machine
from waypost.conformance import runner
from waypost.conformance.profiles import PROFILES
from waypost.conformance.targets import open_target
from waypost.conformance.workers import default_workers, round_trip, shares
from waypost.properties.wire import http as kit_http
from waypost.properties.wire.bound_values import MAX_CONNECTIONS
from waypost.properties.wire.bounds import network_transport


def bench_kit(profile: str, seed: int, out: Path | None, rtts: tuple[float, ...] = (0,),
              workers: int | None = None, test_hooks: bool = True) -> dict[str, Any]:
    """One kit run per round trip in ``rtts`` (milliseconds), each against a fresh reference
    (with its test hooks, or as a deployment runs without them); ``workers`` as given, else as
    the kit picks for the measured distance."""
    runs = [_one_run(profile, seed, rtt, workers, test_hooks) for rtt in rtts]
    result = {"benchmark": "kit", "machine": machine(), "profile": profile, "seed": seed,
              "test_hooks": test_hooks, "runs": runs,
              "failed": any(run["failed"] for run in runs)}
    text = json.dumps(result, indent=2)
    if out is not None:
        out.write_text(text + "\n")
    print(text)
    return result


def _one_run(profile: str, seed: int, rtt_ms: float, workers: int | None,
             test_hooks: bool) -> dict[str, Any]:
    spent: dict[str, float] = defaultdict(float)
    calls: Counter[str] = Counter()
    original = kit_http.Session.call
    lock = threading.Lock()  # the kit's workers time their requests at once

    def timed(self: kit_http.Session, method: str, path: str, **kwargs: Any) -> kit_http.Answer:
        started = time.perf_counter()
        try:
            return original(self, method, path, **kwargs)
        finally:
            kind = f"{method} {_route(path)}"
            with lock:
                spent[kind] += time.perf_counter() - started  # workers add up: time in flight
                calls[kind] += 1

    # every request of the run is timed: the kit's one HTTP method, wrapped for the run
    kit_http.Session.call = timed  # type: ignore[method-assign]
    load_before, cpu_before = os.getloadavg(), os.times()
    try:
        with open_target("sqlite", None, test_hooks=test_hooks) as target, \
                at_distance(target.url, rtt_ms) as url, \
                httpx.Client(base_url=url, timeout=60,
                             transport=network_transport(url, MAX_CONNECTIONS)) as client:
            measured = round_trip(client)
            chosen = workers or default_workers(measured, MAX_CONNECTIONS)
            print(f"waypost bench kit: the baseline, then the kit ({profile}, seed {seed}, "
                  f"{rtt_ms:g} ms round trip, {chosen} workers) on {url}", file=sys.stderr)
            ceiling = baseline(client, requests=300 if rtt_ms < 5 else 20)
            started = time.monotonic()
            planned = sum(share.examples
                          for share in shares(seed, PROFILES[profile].examples, chosen))
            report = runner.run("sqlite", client, target.admin_token, profile=profile,
                                seed=seed, workers=chosen,
                                progress=runner.Progress(sys.stderr, planned))
            total = time.monotonic() - started
    finally:
        kit_http.Session.call = original  # type: ignore[method-assign]
    cpu_after = os.times()
    http_seconds = sum(spent.values())
    checks = sum(outcome.checks for outcome in report.outcomes)
    return {
        "rtt_ms": rtt_ms, "measured_rtt_ms": round(1000 * measured, 2), "workers": chosen,
        "baseline": ceiling,
        "examples": report.examples, "steps": report.steps, "checks": checks,
        "seconds": round(total, 3), "phases_seconds": round(report.seconds, 3),
        "steps_per_second": round(report.steps / max(report.seconds, 1e-9), 1),
        "checks_per_second": round(checks / max(total, 1e-9), 1),
        "failed": report.failed,
        "load": {"loadavg_before": [round(x, 2) for x in load_before],
                 "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                 "kit_cpu_seconds": round((cpu_after.user - cpu_before.user)
                                          + (cpu_after.system - cpu_before.system), 2)},
        "requests": sum(calls.values()),
        "requests_per_step": round(sum(calls.values()) / max(report.steps, 1), 2),
        "time": {
            "http_seconds_in_flight": round(http_seconds, 3),
            "by_request": {kind: {"calls": calls[kind], "seconds": round(spent[kind], 3),
                                  "ms_each": round(1000 * spent[kind] / calls[kind], 2)}
                           for kind in sorted(spent, key=spent.__getitem__, reverse=True)[:15]},
        },
    }


def _route(path: str) -> str:
    """``/v1/messages/msg_x`` → ``/v1/messages/{id}`` (group timings by route)."""
    parts = path.split("/")
    if path.startswith("/admin/"):
        return "/admin/v1/…/" + parts[-1] if len(parts) > 4 else path
    if len(parts) > 3:
        return "/".join(parts[:3]) + "/{id}"
    return path
