"""The gate the workers of a run pass: where a command moves the whole server (its clock, an
armed fault, a restart) it holds the gate alone, only while no other command is in flight, and
none starts meanwhile; the server clock one worker moved is the one every worker's model
reads."""

from __future__ import annotations

import threading
from collections.abc import Callable

from waypost.properties.commands.server_wide import ServerWide

WAIT = 10  # seconds: a bound on a wait that a correct gate ends at once


def _in_thread(gate: ServerWide, alone: bool, log: list[str], name: str,
               inside: Callable[[], None] = lambda: None) -> threading.Thread:
    def command() -> None:
        with gate.command():
            if alone:
                with gate.alone():
                    log.append(f"{name} in")
                    inside()
                    log.append(f"{name} out")
            else:
                log.append(f"{name} in")
                inside()
                log.append(f"{name} out")

    thread = threading.Thread(target=command)
    thread.start()
    return thread


def test_a_server_wide_command_waits_for_the_commands_in_flight() -> None:
    gate, log = ServerWide(), []
    started, release = threading.Event(), threading.Event()
    shared = _in_thread(gate, False, log, "send",
                        lambda: (started.set(), release.wait(WAIT)))
    assert started.wait(WAIT)
    restart = _in_thread(gate, True, log, "restart")
    late = _in_thread(gate, False, log, "read")  # a shared command arriving meanwhile
    release.set()
    for thread in (shared, restart, late):
        thread.join(WAIT)
    assert log.index("restart in") > log.index("send out")  # it waited for the one in flight
    # and nothing ran beside it: the read before it or after it, whole
    at = log.index("restart in")
    assert log[at + 1] == "restart out"
    assert sorted(log) == sorted(["send in", "send out", "restart in", "restart out", "read in",
                                  "read out"])


def test_commands_of_the_same_thread_pass_through_the_gate_they_hold() -> None:
    gate, log = ServerWide(), []
    with gate.command(), gate.command(), gate.alone():
        log.append("nested")
    with gate.command():  # the shared hold is back after the alone block, and then released
        log.append("again")
    assert log == ["nested", "again"]


def test_two_workers_asking_to_be_alone_at_once_take_turns() -> None:
    gate, log = ServerWide(), []
    threads = [_in_thread(gate, True, log, name) for name in ("a", "b")]
    for thread in threads:
        thread.join(WAIT)
    assert sorted(log) == ["a in", "a out", "b in", "b out"]
    assert log[0][0] == log[1][0]  # one whole before the other


def test_the_clock_read_by_any_worker_only_moves_forward() -> None:
    gate = ServerWide()
    gate.clock_read(5_000)
    gate.clock_read(4_000)  # an older reading of another worker
    assert gate.now_ms == 5_000


def test_a_world_learns_the_clock_moves_of_the_others_only() -> None:
    gate, mine, theirs = ServerWide(), object(), object()
    gate.clock_moved(10_000, 3_600_001, theirs)
    gate.clock_moved(20_000, 1_000, mine)
    seen, moves = gate.moves_since(0, mine)
    assert (seen, moves, gate.now_ms) == (2, [3_600_001], 20_000)
    assert gate.moves_since(seen, mine) == (2, [])
