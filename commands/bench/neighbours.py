"""``waypost bench neighbours``: no actor slows the others.

The reference (``waypost serve``, ``--max-connections`` the most waiters + 500), then its floor
(:mod:`waypost.bench.neighbours_floor`: polls parked on an event per actor, no storage), each
through the same patterns in the same run:

- **hostile bodies**: a token with no scope keeps 4 POSTs in flight of a 1 MiB ``[{},{},…]``,
  then of a send with ~1 MiB of float metadata (a process of its own), while another client
  times ``GET /v1/describe`` one after another: the event loop's lag, seen from outside; then
  the same bodies from alice, whose token has the scope (``scoped_…``: the body is read and
  parsed before it is refused);
- **timeout herd**: W long polls (``wait=5``) parked at once, then each one's re-poll from its
  ``next_cursor`` parked at once: for the re-polls (the first round's figures beside them), the
  server's CPU from parking to the last answer, and each answer's lateness after its deadline;
- **wake-ups**: with 0, then each count W of idle long polls (``wait=30`` of 16 idle actors,
  re-parked when they return), S sends from alice to bob while bob's long poll is parked: the
  server's CPU per send (bob's re-poll included), the time from each send's answer to bob's;
- **broadcast**: with the most idle polls parked, one send to 64 actors each with a parked poll:
  the time from its answer to the last poll answer.

Server CPU comes from Linux' /proc: each thread's schedstat (nanoseconds), beside the process's
10 ms ticks. Polls run on raw asyncio streams (:class:`~waypost.bench.wire.Connection`); every
wait is bounded, the whole bench by :data:`DEADLINE_SECONDS`.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import secrets
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import httpx

from waypost.bench.machine import machine
from waypost.bench.neighbours_floor import (
    CROWD,
    HOSTILE_BODIES,
    HOSTILE_SENDERS,
    IDLE,
    BenchError,
    Subject,
    subjects,
    summary,
    verdicts,
)
from waypost.bench.wire import Connection, millis
from waypost.collector import THRESHOLDS

WAIT, HERD_WAIT = 30, 5  # the published maximum; the herd's short wait
PARK_SECONDS = 0.05  # after a poll is sent, before the send it waits for
BROADCAST_REPEATS, HOSTILE_SECONDS, IN_FLIGHT, REST_DESCRIBES = 5, 4.0, 4, 300
BATCH = 100  # connections opened at once
DEADLINE_SECONDS = 1200.0


def _send_body(recipients: Sequence[str]) -> dict[str, Any]:
    return {"request_id": f"nb-{secrets.token_hex(8)}", "recipient_ids": list(recipients),
            "thread": {"new": True}, "kind": "info", "subject": "neighbours",
            "body": {"text": "wake up"}}


async def _send(subject: Subject, connection: Connection, recipients: Sequence[str]) -> float:
    """One send from alice; the time of its answer."""
    status, body = await asyncio.wait_for(connection.request(
        "POST", "/v1/messages", subject.tokens["alice"], _send_body(recipients)), 60)
    if status != 201:
        raise BenchError(f"{subject.name}: a send answered {status}: {body[:300]!r}")
    return time.perf_counter()


def _feed_path(wait: int, cursor: str | None) -> str:
    """A long poll's request target: ``wait`` seconds, after ``cursor`` (None: the checkpoint)."""
    return f"/v1/feed?wait={wait}" + (
        "" if cursor is None else "&cursor=" + urllib.parse.quote(cursor, safe=""))


async def _poll(connection: Connection, token: str, cursor: str | None = None,
                wait: int = WAIT) -> tuple[float, dict[str, Any]]:
    """A long poll, parked again each time it returns empty, until a page with items: the
    time of its answer and the page."""
    while True:
        status, body = await asyncio.wait_for(
            connection.request("GET", _feed_path(wait, cursor), token), wait + 60)
        if status != 200:
            raise BenchError(f"a long poll answered {status}: {body[:300]!r}")
        page: dict[str, Any] = json.loads(body)
        if page["items"]:
            return time.perf_counter(), page
        cursor = page["next_cursor"]


async def _open(port: int, count: int) -> list[Connection]:
    opened: list[Connection] = []
    while len(opened) < count:
        opened += await asyncio.gather(*(Connection.open(port)
                                         for _ in range(min(BATCH, count - len(opened)))))
    return opened


async def _settle(subject: Subject, seconds: float = 30.0) -> None:
    """Until the server takes at most 5 ms of CPU in 0.2 s: the polls are parked."""
    end, last = time.monotonic() + seconds, subject.cpu().total()
    while time.monotonic() < end:
        await asyncio.sleep(0.2)
        now = subject.cpu().total()
        if now - last <= 0.005:
            return
        last = now


class Crowd:
    """Long polls (``wait=30``) of the idle actors, each parked again when it returns."""

    def __init__(self, subject: Subject) -> None:
        self.subject = subject
        self.connections: list[Connection] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.answers = self.failures = 0
        self.stopping = False

    async def grow(self, total: int) -> None:
        while len(self.tasks) < total:
            for connection in await _open(self.subject.port, min(BATCH, total - len(self.tasks))):
                token = self.subject.tokens[IDLE[len(self.tasks) % len(IDLE)]]
                self.connections.append(connection)
                self.tasks.append(asyncio.create_task(self._park(connection, token)))

    async def _park(self, connection: Connection, token: str) -> None:
        while not self.stopping:
            try:
                status, _ = await connection.request("GET", _feed_path(WAIT, None), token)
            except (OSError, asyncio.IncompleteReadError):
                status = 0
            self.answers += 1
            if status != 200:
                self.failures += 1
                return

    async def release(self) -> None:
        """One send to every idle actor answers every parked poll; then the connections close."""
        self.stopping = True
        if self.tasks:
            alice = await Connection.open(self.subject.port)
            await _send(self.subject, alice, IDLE)
            alice.close()
            await asyncio.wait(self.tasks, timeout=WAIT + 10)
        for connection in self.connections:
            connection.close()


async def _wakeups(subject: Subject, crowd: Crowd, levels: Sequence[int],
                   sends: int) -> list[dict[str, Any]]:
    bob = await Connection.open(subject.port)
    poll = asyncio.create_task(_poll(bob, subject.tokens["bob"]))
    rows: list[dict[str, Any]] = []
    for level in [0, *levels]:
        await crowd.grow(level)
        await _settle(subject)
        alice = await Connection.open(subject.port)
        latencies, first, answers = [], 0, crowd.answers
        before = subject.cpu()
        for _ in range(sends):
            answered = await _send(subject, alice, ["bob"])
            woke, page = await poll
            first += woke < answered
            latencies.append(max(woke - answered, 0.0))
            poll = asyncio.create_task(_poll(bob, subject.tokens["bob"], page["next_cursor"]))
            await asyncio.sleep(PARK_SECONDS)
        after = subject.cpu()
        if level == max(levels):  # bob's last poll is answered, not left parked
            await _send(subject, alice, ["bob"])
            await poll
        alice.close()
        rows.append({"waiters": level, "sends": sends,
                     "server_cpu_ms_per_send": before.until(after, sends),
                     "send_answer_to_poll_answer": millis(latencies),
                     "poll_answered_before_the_send": first,
                     "idle_poll_answers_meanwhile": crowd.answers - answers,
                     "idle_poll_failures": crowd.failures})
    bob.close()
    empty = (rows[0]["server_cpu_ms_per_send"] or {}).get("total")
    for row in rows:
        mine = (row["server_cpu_ms_per_send"] or {}).get("total")
        row["cpu_over_empty_space"] = None if not empty or mine is None else round(
            mine / empty, 2)
    return rows


async def _broadcast(subject: Subject, idle: int) -> dict[str, Any]:
    connections = await _open(subject.port, len(CROWD))
    alice = await Connection.open(subject.port)

    def park(cursors: Sequence[str | None]) -> list[asyncio.Task[tuple[float, dict[str, Any]]]]:
        return [asyncio.create_task(_poll(c, subject.tokens[actor], cursor))
                for c, actor, cursor in zip(connections, CROWD, cursors, strict=True)]
    polls = park([None] * len(CROWD))
    last: list[float] = []
    first: list[float] = []
    before = subject.cpu()
    for _ in range(BROADCAST_REPEATS + 1):  # the last one only answers the polls
        await _settle(subject)
        answered = await _send(subject, alice, CROWD)
        pages = await asyncio.gather(*polls)
        if len(last) == BROADCAST_REPEATS:
            break
        last.append(max(max(woke for woke, _ in pages) - answered, 0.0))
        first.append(max(min(woke for woke, _ in pages) - answered, 0.0))
        polls = park([page["next_cursor"] for _, page in pages])
    after = subject.cpu()
    for connection in [alice, *connections]:
        connection.close()
    return {"idle_waiters": idle, "polls": len(CROWD), "repeats": BROADCAST_REPEATS,
            "send_answer_to_last_poll_answer": millis(last),
            "send_answer_to_first_poll_answer": millis(first),
            "each_repeat_last_ms": [round(1000 * s, 3) for s in last],
            "server_cpu_ms_per_broadcast": before.until(after, BROADCAST_REPEATS + 1)}


async def _herd(subject: Subject, waiters: int) -> dict[str, Any]:
    """W polls (``wait=5``) written at once on their own connections, all timing out together,
    then each one's re-poll from its answer's ``next_cursor`` (as a client that keeps a feed
    open does), timing out together again: the re-polls are the herd the target judges (a
    server knows waiters that were parked before); the first round's figures, every poll's
    first contact, stand beside them."""
    connections = await _open(subject.port, waiters)
    await _settle(subject)
    tokens = [subject.tokens[IDLE[n % len(IDLE)]] for n in range(waiters)]
    first = await _herd_round(subject, connections, tokens, [None] * waiters)
    await _settle(subject)
    again = await _herd_round(subject, connections, tokens, first.pop("cursors"))
    again.pop("cursors")
    for connection in connections:
        connection.close()
    return {"waiters": waiters, "wait_seconds": HERD_WAIT, **again, "first_contact": first}


async def _herd_round(subject: Subject, connections: Sequence[Connection],
                      tokens: Sequence[str], cursors: Sequence[str | None]) -> dict[str, Any]:
    async def timed(connection: Connection, token: str,
                    cursor: str | None) -> tuple[float, float, int, bytes]:
        written = time.perf_counter()
        status, body = await asyncio.wait_for(
            connection.request("GET", _feed_path(HERD_WAIT, cursor), token), HERD_WAIT + 120)
        return written, time.perf_counter(), status, body
    before = subject.cpu()
    answers = await asyncio.gather(*(timed(*polled)
                                     for polled in zip(connections, tokens, cursors, strict=True)))
    after = subject.cpu()
    pages = [json.loads(body) if status == 200 else {} for _, _, status, body in answers]
    late = [answered - written - HERD_WAIT for written, answered, _, _ in answers]
    last = max(range(len(answers)), key=lambda n: answers[n][1])
    return {"answered_200_empty": sum(s == 200 and not p.get("items")
                                      for (_, _, s, _), p in zip(answers, pages, strict=True)),
            "parking_span_ms": round(1000 * (max(a[0] for a in answers)
                                             - min(a[0] for a in answers)), 3),
            "answer_after_its_deadline": millis(late),
            "last_answer_after_its_deadline_ms": round(1000 * late[last], 3),
            "server_cpu_ms": before.until(after, 1),
            "server_cpu_ms_per_waiter": before.until(after, len(answers)),
            "cursors": [p.get("next_cursor") for p in pages]}


async def _crowd_patterns(subject: Subject, levels: Sequence[int], sends: int,
                          deadline: float, progress: Callable[[str], None]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    crowd = Crowd(subject)

    async def bounded(name: str, work: Awaitable[Any]) -> None:
        try:
            found[name] = await asyncio.wait_for(work, max(deadline - time.monotonic(), 0.1))
        except TimeoutError:
            found[name] = {"unfinished": "the bench's deadline passed"}
        progress(f"{subject.name}: {name} done")
    try:
        await bounded("timeout_herd", _herd(subject, max(levels)))
        await bounded("wakeups", _wakeups(subject, crowd, levels, sends))
        await bounded("broadcast", _broadcast(subject, max(levels)))
    finally:
        await asyncio.wait_for(crowd.release(), WAIT + 30)
    return found


def _hostile_bodies(limit: int) -> dict[str, bytes]:
    """``[{},{},…]`` of exactly ``limit`` bytes; a send whose metadata's one member is an array
    of floats, the whole at most ``limit`` (metadata must be an object: an array alone is
    refused by its type)."""
    empties = (b"[" + b",".join([b"{}"] * ((limit - 1) // 3)) + b"]").ljust(limit)
    head = json.dumps(_send_body(["hostile"]))[:-1] + ', "metadata": {"floats": ['
    floats = ",".join(f"{n * 0.6180339887498949 % 1:.15f}"  # 18 bytes each with its comma
                      for n in range((limit - len(head) - 3) // 18))
    return dict(zip(HOSTILE_BODIES, (empties, f"{head}{floats}]}}}}".encode()), strict=True))


async def _answer(connection: Connection) -> tuple[int, bool]:
    """The status of the answer on ``connection`` and whether the server closes it after."""
    head = (await connection.reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
    await connection.reader.readexactly(
        int(head.split("content-length:", 1)[1].split("\r\n", 1)[0]))
    return int(head.split()[1]), "connection: close" in head


async def _post_loop(port: int, request: bytes, end: float, statuses: dict[int, int],
                     started: Callable[[], None]) -> None:
    connection: Connection | None = None
    while time.monotonic() < end:
        try:
            if connection is None:
                connection = await Connection.open(port)
            connection.writer.write(request)
            status, closing = await asyncio.wait_for(_answer(connection), 60)
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            status, closing = 0, True
        if closing and connection is not None:
            connection.close()
            connection = None
        statuses[status] = statuses.get(status, 0) + 1
        started()
    if connection is not None:
        connection.close()


def _hostile_load(port: int, token: str, body: bytes, seconds: float, out: Any) -> None:
    """In a process of its own: :data:`IN_FLIGHT` POSTs of ``body`` in flight for ``seconds``;
    says ``started`` on ``out`` at the first answer, then the answers by status."""
    request = (f"POST /v1/messages HTTP/1.1\r\nHost: bench\r\nContent-Length: {len(body)}\r\n"
               f"Content-Type: application/json\r\nAuthorization: Bearer {token}\r\n\r\n"
               ).encode() + body
    statuses: dict[int, int] = {}

    def started() -> None:
        if sum(statuses.values()) == 1:
            out.put("started")
    end = time.monotonic() + seconds

    async def load() -> None:
        await asyncio.gather(*(_post_loop(port, request, end, statuses, started)
                               for _ in range(IN_FLIGHT)))
    asyncio.run(load())
    out.put({str(k): v for k, v in sorted(statuses.items())})


async def _describes(port: int, going: Callable[[], bool], minimum: int) -> list[float]:
    connection, end = await Connection.open(port), time.monotonic() + HOSTILE_SECONDS + 60
    taken: list[float] = []
    while (going() or len(taken) < minimum) and time.monotonic() < end:
        started = time.perf_counter()
        status, _ = await asyncio.wait_for(connection.request("GET", "/v1/describe"), 60)
        taken.append(time.perf_counter() - started)
        if status != 200:
            raise BenchError(f"describe answered {status}")
    connection.close()
    return taken


def lag(during: dict[str, float], rest: dict[str, float]) -> dict[str, float]:
    """The event loop's lag seen from outside: how much longer than its median at rest another
    client's describe took (p99 and max), in ms. Nothing is added to the server to measure it:
    a describe answers at once unless the loop is busy."""
    return {"p99_ms": round(max(0.0, during["p99_ms"] - rest["p50_ms"]), 3),
            "max_ms": round(max(0.0, during["max_ms"] - rest["p50_ms"]), 3)}


def _hostile(subject: Subject) -> dict[str, Any]:
    """Describe latency at rest, then under each hostile body; the event loop's busy share."""
    with httpx.Client(base_url=f"http://127.0.0.1:{subject.port}", timeout=60) as client:
        limit = int(client.get("/v1/describe").json()["limits"]["request_bytes"])
    rest = millis(asyncio.run(_describes(subject.port, lambda: False, REST_DESCRIBES)))
    found: dict[str, Any] = {"describe_at_rest": rest, "request_bytes": limit}
    for prefix, who in HOSTILE_SENDERS:
        for name, body in _hostile_bodies(limit).items():
            found[prefix + name] = _hostile_phase(subject, subject.tokens[who], body, rest)
    return found


def _hostile_phase(subject: Subject, token: str, body: bytes,
                   rest: dict[str, float]) -> dict[str, Any]:
    """Describe latency while ``token`` keeps :data:`IN_FLIGHT` POSTs of ``body`` in flight."""
    forked = multiprocessing.get_context("fork")  # its drain threads touch nothing it uses
    out = forked.Queue()
    load = forked.Process(target=_hostile_load, args=(
        subject.port, token, body, HOSTILE_SECONDS, out))
    load.start()
    out.get(timeout=60)
    before, wall = subject.cpu(), time.perf_counter()
    during = millis(asyncio.run(_describes(subject.port, load.is_alive, 50)))
    after, wall = subject.cpu(), time.perf_counter() - wall
    load.join(timeout=60)
    if load.is_alive():
        load.kill()
    busy = (after.threads[after.main] - before.threads[before.main]) / wall
    return {"body_bytes": len(body), "in_flight": IN_FLIGHT, "describe": during,
            "event_loop_lag": lag(during, rest),
            "p99_over_rest_p99": round(during["p99_ms"] / rest["p99_ms"], 2),
            "answers_by_status": out.get(timeout=60), "event_loop_cpu_share": round(busy, 2)}


def bench_neighbours(levels: Sequence[int], sends: int,
                     progress: Callable[[str], None] = lambda text: None) -> dict[str, Any]:
    """Every pattern on the reference, then on the floor; the targets beside their measures."""
    levels = sorted(set(levels))
    load_before, started = os.getloadavg(), time.monotonic()
    deadline = started + DEADLINE_SECONDS

    def say(text: str) -> None:
        progress(f"[{time.monotonic() - started:.0f} s] {text}")
    results: dict[str, dict[str, Any]] = {}
    running = subjects(max(levels))
    try:
        for subject in running:
            if time.monotonic() > deadline:
                break
            say(f"{subject.name}: hostile bodies…")
            found = {"hostile_bodies": _hostile(subject)}
            say(f"{subject.name}: timeout herd, wake-ups, broadcast…")
            found.update(asyncio.run(_crowd_patterns(subject, levels, sends, deadline, say)))
            results[subject.name] = found
            say(f"{subject.name}: done")
    finally:
        running.close()  # stops the server still running
    patterns = {name: {who: results.get(who, {}).get(name) for who in ("reference", "floor")}
                for name in ("wakeups", "broadcast", "timeout_herd", "hostile_bodies")}
    result = {"benchmark": "neighbours", "machine": {
        **machine(), "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "seconds": round(time.monotonic() - started, 1),
        "options": {"waiters": levels, "sends": sends, "wait_seconds": WAIT,
                    "herd_wait_seconds": HERD_WAIT, "broadcast_repeats": BROADCAST_REPEATS,
                    "hostile_seconds": HOSTILE_SECONDS, "idle_actors": len(IDLE),
                    # both servers run with them (waypost.collector)
                    "collector_thresholds": list(THRESHOLDS)},
        **patterns}
    result["targets"] = verdicts(result)
    result["summary"] = summary(result)
    return result
