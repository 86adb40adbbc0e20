"""The floor of ``waypost bench neighbours``, the least a server on the same parts can do to park
long polls and wake them, and the targets the reference is judged by beside it.

The same uvicorn (its h11 protocol) and Starlette as ``waypost serve``, and no storage. The
bearer token names the actor. ``GET /v1/feed?wait=N&cursor=C`` answers at once when the actor
has had sends after position ``C`` (an in-memory count per actor; no cursor is position 0),
else parks on the actor's :class:`asyncio.Event` until a send sets it or ``N`` seconds pass.
``POST /v1/messages`` parses its JSON body on the event loop (a body that is not an object is
answered 400), counts one send for each of its ``recipient_ids``, sets their events and
answers 201. ``GET /v1/describe`` answers a small constant object. No auth, no scopes, no
validation beyond that: whatever ``waypost serve`` spends above this is Waypost's own.

Run as ``python -m waypost.bench.neighbours_floor --port N``; ``waypost bench neighbours``
starts it (:class:`FloorProcess`) after the reference. The bench imports this module for
:func:`verdicts` and :func:`summary`: uvicorn and Starlette load only where the floor runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any

from waypost.conformance.targets import ChildProcess, free_port

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


def verdicts(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target of the reference beside its measure and the floor's."""
    found: dict[str, dict[str, Any]] = {}
    waits, floor_waits = (_figure(result, "wakeups", who) or [] for who in ("reference", "floor"))
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
    last = ("broadcast", "{}", "send_answer_to_last_poll_answer")
    found["broadcast_last_answer_ms"] = _verdict(
        _figure(result, *last[:1], "reference", *last[2:], "max_ms"),
        TARGETS["broadcast_last_answer_ms"], judged_on="the slowest repeat",
        median=_figure(result, *last[:1], "reference", *last[2:], "p50_ms"),
        floor=_figure(result, *last[:1], "floor", *last[2:], "max_ms"))
    herd = [_figure(result, "timeout_herd", who, "server_cpu_ms", "total")
            for who in ("reference", "floor")]
    found["herd_cpu_over_floor"] = _verdict(
        None if None in herd or not herd[1] else round(herd[0] / herd[1], 2),
        TARGETS["herd_cpu_over_floor"], reference_ms=herd[0], floor_ms=herd[1])
    for body in ("empty_objects", "float_metadata"):
        found[f"hostile_{body}_p99_over_rest_p99"] = _verdict(
            _figure(result, "hostile_bodies", "reference", body, "p99_over_rest_p99"),
            TARGETS["hostile_p99_over_rest_p99"],
            floor=_figure(result, "hostile_bodies", "floor", body, "p99_over_rest_p99"))
    return found


def summary(result: dict[str, Any]) -> list[str]:
    """One line per pattern, reference beside floor."""
    def both(*path: str | int) -> str:
        return " / ".join(str(_figure(result, path[0], who, *path[1:]))
                          for who in ("reference", "floor"))
    lines = []
    for n, row in enumerate(_figure(result, "wakeups", "reference") or []):
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
    for body in ("empty_objects", "float_metadata"):
        lines.append(f"hostile {body} (reference / floor): describe p99 "
                     f"{both('hostile_bodies', body, 'describe', 'p99_ms')} ms, "
                     f"{both('hostile_bodies', body, 'p99_over_rest_p99')} x at rest")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m waypost.bench.neighbours_floor",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    import uvicorn

    uvicorn.run(neighbours_floor_app(), host="127.0.0.1", port=args.port, http="h11",
                ws="none", access_log=False, log_level="info")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
