"""Load for ``waypost bench send``: ``wrk`` when it is installed (Debian: ``apt-get install
wrk``), else the bench's own asyncio client, which tops out near 400 requests/s on a small
machine and so makes a fast server look slow. Either way every request is a message.send with
a request_id of its own, and only 201 answers count."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from waypost.bench.wire import Connection

#: The send each request carries (its request_id made unique per request).
SEND = {"recipient_ids": ["bob"], "thread": {"new": True}, "kind": "info", "subject": "load",
        "body": {"text": "bench"}}

_SCRIPT = """
ok, other, counter, first_other = 0, 0, 0, 0
local threads = {}

function setup(thread)
  thread:set("index", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  prefix = args[1] .. "-" .. index .. "-"
  if args[2] ~= "" then wrk.headers["Authorization"] = "Bearer " .. args[2] end
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  return wrk.format("POST", "/v1/messages", nil,
                    '{"request_id":"' .. prefix .. counter .. '",' .. REST)
end

function response(status, headers, body)
  if status == 201 then
    ok = ok + 1
  else
    other = other + 1
    if first_other == 0 then first_other = status end
  end
end

function done(summary, latency, requests)
  local good, bad, status = 0, 0, 0
  for _, thread in ipairs(threads) do
    good = good + thread:get("ok")
    bad = bad + thread:get("other")
    if status == 0 then status = thread:get("first_other") end
  end
  local e = summary.errors
  io.write(string.format('WRK-RESULT {"ok":%d,"other":%d,"first_other":%d,' ..
    '"socket_errors":%d,"us":%d,"p50_us":%d,"p99_us":%d}\\n', good, bad, status,
    e.connect + e.read + e.write + e.timeout, summary.duration, latency:percentile(50),
    latency:percentile(99)))
end
"""


def client_name() -> str:
    """``wrk`` when it is on the PATH, else ``python``."""
    return "wrk" if shutil.which("wrk") else "python"


def drive(port: int, connections: int, seconds: float, token: str, label: str,
          client: str = "wrk") -> dict[str, Any]:
    """``connections`` keep-alive connections sending for ``seconds``: sends answered 201,
    sends per second and the client's latency percentiles; ``client`` is ``wrk`` (where
    :func:`client_name` says it is installed) or ``python``. Any other answer, or none at all,
    is an error naming the first."""
    if client == "wrk" and client_name() == "wrk":
        found = _wrk(port, connections, seconds, token, label)
    else:
        found = asyncio.run(_python(port, connections, seconds, token, label))
    if found["other_answers"] or not found["ok"]:
        raise RuntimeError(f"{found['other_answers']} of {found['ok'] + found['other_answers']}"
                           f" sends were not answered 201 (the first: {found['first_other']})")
    return found


def _wrk(port: int, connections: int, seconds: float, token: str, label: str) -> dict[str, Any]:
    rest = json.dumps(SEND, separators=(",", ":"))[1:]
    with tempfile.TemporaryDirectory(prefix="waypost-wrk-") as work:
        script = Path(work) / "send.lua"
        script.write_text(f"REST = {json.dumps(rest)}\n" + _SCRIPT)
        done = subprocess.run(
            ["wrk", "-t", str(min(2, connections)), "-c", str(connections),
             "-d", f"{max(1, round(seconds))}s", "--timeout", "30s", "-s", str(script),
             f"http://127.0.0.1:{port}", "--", label, token],
            capture_output=True, text=True, timeout=seconds + 120, check=False)
    line = next((line for line in done.stdout.splitlines() if line.startswith("WRK-RESULT ")),
                None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr[-500:]}"
                           f"{done.stdout[-500:]}")
    found = json.loads(line.removeprefix("WRK-RESULT "))
    elapsed = found["us"] / 1e6
    return {"client": "wrk", "connections": connections, "ok": found["ok"],
            "other_answers": found["other"], "first_other": found["first_other"] or None,
            "socket_errors": found["socket_errors"],
            "seconds": round(elapsed, 3), "per_second": round(found["ok"] / elapsed, 1),
            "p50_ms": round(found["p50_us"] / 1000, 3), "p99_ms": round(found["p99_us"] / 1000, 3)}


async def _python(port: int, connections: int, seconds: float, token: str,
                  label: str) -> dict[str, Any]:
    stop = time.perf_counter() + seconds
    keys = itertools.count()
    counts = {"ok": 0, "other": 0}
    first_other: list[str] = []
    latencies: list[float] = []

    async def worker() -> None:
        connection = await Connection.open(port)
        try:
            while time.perf_counter() < stop:
                started = time.perf_counter()
                status, body = await connection.request(
                    "POST", "/v1/messages", token, {"request_id": f"{label}-{next(keys)}", **SEND})
                latencies.append(time.perf_counter() - started)
                counts["ok" if status == 201 else "other"] += 1
                if status != 201 and not first_other:
                    first_other.append(f"{status} {body[:300]!r}")
        finally:
            connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {"client": "python", "connections": connections, "ok": counts["ok"],
            "other_answers": counts["other"], "first_other": first_other[0] if first_other else None,
            "socket_errors": 0, "seconds": round(elapsed, 3),
            "per_second": round(counts["ok"] / elapsed, 1),
            "p50_ms": round(1000 * latencies[len(latencies) // 2], 3) if latencies else None,
            "p99_ms": round(1000 * latencies[int(len(latencies) * 0.99)], 3) if latencies
            else None}
