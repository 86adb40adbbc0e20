"""The servers ``waypost bench neighbours`` measures, and what they are judged by: its floor
(the least a server on the same parts can do to park long polls and wake them), the reference
beside it with its provisioned space, each one's CPU, and the targets.

The floor: the same uvicorn (its h11 protocol) and Starlette as ``waypost serve``, no storage. The
bearer token names the actor. ``GET /v1/feed?wait=N&cursor=C`` answers at once when the actor
has had sends after position ``C`` (an in-memory count per actor; no cursor is position 0),
else parks on the actor's :class:`asyncio.Event` until a send sets it or ``N`` seconds pass.
``POST /v1/messages`` parses its JSON body on the event loop (a body that is not an object is
answered 400), counts one send for each of its ``recipient_ids``, sets their events and
answers 201. ``GET /v1/describe`` answers a small constant object. No auth, no scopes, no
validation beyond that: whatever ``waypost serve`` spends above this is Waypost's own.

Run as ``python -m waypost.bench.neighbours_floor --port N``; :func:`subjects` starts it after
the reference. The bench imports this module too: uvicorn and Starlette load only where the
floor runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import tempfile
from collections.abc import Generator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waypost.bench.wire import cpu_per_request, thread_cpu_seconds
from waypost.conformance.targets import ChildProcess, ServerProcess, free_port

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

#: What the floor's describe publishes: the few limits the bench reads.
LIMITS = {"request_bytes": 1024 * 1024, "wait_seconds": 30, "recipients": 64, "page_limit": 100}
#: What the issue asks of the reference (docs/performance.md, "Noisy neighbours").
TARGETS = {"wakeup_cpu_over_empty": 2.0, "wakeup_p50_ms": 5.0, "wakeup_p99_ms": 20.0,
           "broadcast_last_answer_ms": 30.0, "herd_cpu_over_floor": 1.5,
           "hostile_p99_over_rest_p99": 5.0}
IDLE = [f"idle-{n:02}" for n in range(1, 17)]
CROWD = [f"crowd-{n:02}" for n in range(1, 65)]  # a send names at most 64 recipients
ACTORS = ["alice", "bob", "hostile", *IDLE, *CROWD]
#: Who posts the hostile bodies of ``waypost bench neighbours``, and the prefix of their
#: figures: the token without any scope (refused before its body), then alice's, which may
#: send (the body is read and parsed).
HOSTILE_SENDERS = (("", "hostile"), ("scoped_", "alice"))
HOSTILE_BODIES = ("empty_objects", "float_metadata")
#: The hostile-body figures: each body from each sender.
HOSTILE_FIGURES = tuple(prefix + body for prefix, _ in HOSTILE_SENDERS for body in HOSTILE_BODIES)
READ = ["message.read", "event.subscribe"]


class BenchError(Exception):
    """A server answered what the bench did not expect."""


@dataclass
class Subject:
    """A server under test: its port, its pid, each actor's bearer token."""

    name: str
    port: int
    pid: int
    tokens: dict[str, str]

    def cpu(self) -> Cpu:
        """CPU seconds so far: each live thread's from its schedstat (nanoseconds, where the
        ticks of :func:`thread_cpu_seconds` are 10 ms) and, in ticks, the process's."""
        threads = {}
        for task in Path(f"/proc/{self.pid}/task").glob("*"):
            with contextlib.suppress(OSError, ValueError):  # a thread that just ended
                threads[task.name] = int((task / "schedstat").read_text().split()[0]) / 1e9
        return Cpu(str(self.pid), threads, thread_cpu_seconds(self.pid))


@dataclass
class Cpu:
    """A server's CPU at one moment (:meth:`Subject.cpu`)."""

    main: str
    threads: dict[str, float]
    ticks: dict[str, float] | None

    def total(self) -> float:
        return sum(self.threads.values())

    def until(self, after: Cpu, count: int) -> dict[str, float | None] | None:
        """Milliseconds per ``count`` from here to ``after``: the event loop (the main
        thread), the other threads (those that ended meanwhile not counted), their total,
        and the process's total in ticks."""
        if not count or self.main not in self.threads or self.main not in after.threads:
            return None
        loop = after.threads[self.main] - self.threads[self.main]
        others = sum(seconds - self.threads.get(task, 0.0)
                     for task, seconds in after.threads.items() if task != self.main)
        ticks = cpu_per_request(self.ticks, after.ticks, count)
        return {"event_loop": round(1000 * loop / count, 4),
                "other_threads": round(1000 * others / count, 4),
                "total": round(1000 * (loop + others) / count, 4),
                "total_in_ticks": None if ticks is None else ticks["total"]}


def neighbours_floor_app() -> Starlette:
    """Long polls parked on an event per actor, woken by sends that name the actor."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    sent: dict[str, int] = {}  # sends per recipient: the floor's whole feed
    events: dict[str, asyncio.Event] = {}  # per actor, replaced once set

    def actor_of(request: Request) -> str:
        return request.headers.get("authorization", "").removeprefix("Bearer ").strip()

    def page(actor: str, position: int) -> Response:
        last = sent.get(actor, 0)
        items = [{"sequence": str(n)} for n in range(position + 1, min(last, position + 50) + 1)]
        return JSONResponse({"items": items, "has_more": last > position + 50,
                             "next_cursor": str(position + len(items))})

    async def feed(request: Request) -> Response:
        actor = actor_of(request)
        try:
            wait = int(request.query_params.get("wait", "0"))
            position = int(request.query_params.get("cursor", "0"))
        except ValueError:
            return JSONResponse({"error": {"code": "INVALID_REQUEST"}}, status_code=400)
        if wait and sent.get(actor, 0) <= position:
            event = events.setdefault(actor, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), min(wait, LIMITS["wait_seconds"]))
        return page(actor, position)

    async def send(request: Request) -> Response:
        document = json.loads(await request.body())
        if not isinstance(document, dict):
            return JSONResponse({"error": {"code": "INVALID_REQUEST"}}, status_code=400)
        recipients = document.get("recipient_ids") or []
        for actor in recipients:
            sent[actor] = sent.get(actor, 0) + 1
            event = events.pop(actor, None)
            if event is not None:
                event.set()
        return JSONResponse({"message_id": f"m{sum(sent.values())}"}, status_code=201)

    async def describe(request: Request) -> Response:
        return JSONResponse({"protocol": "floor", "limits": LIMITS})

    return Starlette(routes=[Route("/v1/feed", feed, methods=["GET"]),
                             Route("/v1/messages", send, methods=["POST"]),
                             Route("/v1/describe", describe, methods=["GET"])])


class FloorProcess(ChildProcess):
    """The floor app as a child process."""

    what = "the neighbours floor app"

    def __init__(self) -> None:
        self.port = free_port()
        super().__init__(["--port", str(self.port)], {}, module="waypost.bench.neighbours_floor")

    def is_ready(self, line: str) -> bool:
        return "Uvicorn running on" in line


def _provision(url: str, admin_token: str) -> dict[str, str]:
    """Space ``crowd``: alice (sends), bob, the idle actors, the crowd, and ``hostile`` whose
    token has no scope; each an inbox consumer and a token."""
    import httpx

    tokens = {}
    with httpx.Client(base_url=url, timeout=60,
                      headers={"Authorization": f"Bearer {admin_token}"}) as client:
        def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            answer = client.post(f"/admin/v1{path}", json={"request_id": secrets.token_hex(8),
                                                           **body})
            if answer.status_code not in (200, 201):
                raise BenchError(f"POST {path} answered {answer.status_code}: {answer.text}")
            found: dict[str, Any] = answer.json()
            return found
        post("/spaces", {"space_id": "crowd", "display_name": "Crowd", "source_uri":
                         "waypost://bench/crowd", "default_actor": {
                             "actor_id": "alice", "kind": "agent", "display_name": "Alice"}})
        for actor in ACTORS:
            if actor != "alice":
                post("/spaces/crowd/actors", {"actor_id": actor, "kind": "agent",
                                              "display_name": actor})
            post("/spaces/crowd/consumers", {"consumer_id": f"{actor}-inbox", "actor_id": actor,
                                             "view": "inbox"})
            scopes = {"alice": ["message.send", *READ], "hostile": []}.get(actor, READ)
            tokens[actor] = str(post("/spaces/crowd/tokens", {
                "actor_id": actor, "consumer_id": f"{actor}-inbox", "scopes": scopes,
                "recipients": {"mode": "any"}, "collections": [],
                "blob_references": []})["token"])
    return tokens


def subjects(waiters: int) -> Generator[Subject, None, None]:
    """The reference (``--max-connections`` ``waiters`` + 500, its space provisioned), then the
    floor; each stopped once the next is asked for, or when the bench ends."""
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="waypost-bench-") as work:
        admin_token = secrets.token_urlsafe(24)
        server = ServerProcess(Path(work) / "data", admin_token, "--no-access-log",
                               "--synchronous", "full", "--max-connections", str(waiters + 500))
        stack.callback(server.stop)
        yield Subject("reference", server.port, server.process.pid,
                      _provision(server.url, admin_token))
        server.stop()
        floor = FloorProcess()
        stack.callback(floor.stop)
        yield Subject("floor", floor.port, floor.process.pid, {a: a for a in ACTORS})


def _verdict(measured: float | None, limit: float, **beside: Any) -> dict[str, Any]:
    verdict = "not measured" if measured is None else "met" if measured <= limit else "not met"
    return {"verdict": verdict, "measured": measured, "at_most": limit, **beside}


def _figure(found: Any, *path: str | int) -> Any:
    """``found[path[0]][path[1]]…``, None where a pattern did not finish."""
    for key in path:
        try:
            found = found[key]
        except (KeyError, IndexError, TypeError):
            return None
    return found


def _rows(result: dict[str, Any], who: str) -> list[dict[str, Any]]:
    """The wake-up rows of ``who``; none where the pattern did not finish."""
    rows = _figure(result, "wakeups", who)
    return rows if isinstance(rows, list) else []


def verdicts(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target of the reference beside its measure and the floor's."""
    found: dict[str, dict[str, Any]] = {}
    waits, floor_waits = (_rows(result, who) for who in ("reference", "floor"))
    for n, row in enumerate(waits):
        at, theirs = row["waiters"], floor_waits[n] if n < len(floor_waits) else {}
        if at:
            found[f"wakeup_cpu_over_empty_at_{at}"] = _verdict(
                row["cpu_over_empty_space"], TARGETS["wakeup_cpu_over_empty"],
                floor=_figure(theirs, "cpu_over_empty_space"))
        for share in ("p50", "p99"):
            found[f"wakeup_{share}_ms_at_{at}"] = _verdict(
                row["send_answer_to_poll_answer"][f"{share}_ms"], TARGETS[f"wakeup_{share}_ms"],
                floor=_figure(theirs, "send_answer_to_poll_answer", f"{share}_ms"))

    def last(who: str, figure: str) -> Any:
        return _figure(result, "broadcast", who, "send_answer_to_last_poll_answer", figure)
    found["broadcast_last_answer_ms"] = _verdict(
        last("reference", "max_ms"), TARGETS["broadcast_last_answer_ms"],
        judged_on="the slowest repeat", median=last("reference", "p50_ms"),
        floor=last("floor", "max_ms"))
    herd = [_figure(result, "timeout_herd", who, "server_cpu_ms", "total")
            for who in ("reference", "floor")]
    found["herd_cpu_over_floor"] = _verdict(
        None if None in herd or not herd[1] else round(herd[0] / herd[1], 2),
        TARGETS["herd_cpu_over_floor"], reference_ms=herd[0], floor_ms=herd[1])
    for body in HOSTILE_FIGURES:
        found[f"hostile_{body}_p99_over_rest_p99"] = _verdict(
            _figure(result, "hostile_bodies", "reference", body, "p99_over_rest_p99"),
            TARGETS["hostile_p99_over_rest_p99"],
            floor=_figure(result, "hostile_bodies", "floor", body, "p99_over_rest_p99"))
    return found


def summary(result: dict[str, Any]) -> list[str]:
    """One line per pattern, reference beside floor."""
    def both(*path: str | int) -> str:
        found = [_figure(result, path[0], who, *path[1:]) for who in ("reference", "floor")]
        return " / ".join(str(round(f, 2) if isinstance(f, float) else f) for f in found)
    lines = []
    for n, row in enumerate(_rows(result, "reference")):
        lines.append(f"wake-ups at {row['waiters']} waiters (reference / floor): CPU per send "
                     f"{both('wakeups', n, 'server_cpu_ms_per_send', 'total')} ms, "
                     f"{both('wakeups', n, 'cpu_over_empty_space')} x the empty space's; wake "
                     f"p50 {both('wakeups', n, 'send_answer_to_poll_answer', 'p50_ms')} ms, p99 "
                     f"{both('wakeups', n, 'send_answer_to_poll_answer', 'p99_ms')} ms")
    lines.append("broadcast to 64 (reference / floor): last poll answer after the send's answer, "
                 f"each repeat {both('broadcast', 'each_repeat_last_ms')} ms")
    lines.append("timeout herd (reference / floor): server CPU "
                 f"{both('timeout_herd', 'server_cpu_ms', 'total')} ms, last answer "
                 f"{both('timeout_herd', 'last_answer_after_its_deadline_ms')} ms after its "
                 "deadline")
    for body in HOSTILE_FIGURES:
        lines.append(f"hostile {body} (reference / floor): describe p99 "
                     f"{both('hostile_bodies', body, 'describe', 'p99_ms')} ms (at rest "
                     f"{both('hostile_bodies', 'describe_at_rest', 'p99_ms')} ms), "
                     f"{both('hostile_bodies', body, 'p99_over_rest_p99')} x at rest; event-loop "
                     f"lag p99 {both('hostile_bodies', body, 'event_loop_lag', 'p99_ms')} ms, max "
                     f"{both('hostile_bodies', body, 'event_loop_lag', 'max_ms')} ms")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m waypost.bench.neighbours_floor",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    import uvicorn

    from waypost.collector import tune_collector

    app = neighbours_floor_app()
    tune_collector()  # as waypost serve does: the same interpreter settings
    uvicorn.run(app, host="127.0.0.1", port=args.port, http="h11",
                ws="none", access_log=False, log_level="info")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
