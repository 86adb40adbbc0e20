"""The gate the workers of a run pass: a command that moves the whole server (its clock,
faults, a restart) runs only while no other command is in flight, and none starts meanwhile;
the server clock one worker moved is the one every worker's model reads."""

from __future__ import annotations

import threading
from collections.abc import Callable

from waypost.properties.commands import blobs, faults, timing
from waypost.properties.commands.server_wide import ServerWide, is_server_wide

WAIT = 10  # seconds: a bound on a wait that a correct gate ends at once


def _in_thread(gate: ServerWide, alone: bool, log: list[str], name: str,
               inside: Callable[[], None] = lambda: None) -> threading.Thread:
    def command() -> None:
        with gate.command(alone):
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
    with gate.command(alone=True), gate.command(alone=False):
        log.append("nested")
    assert log == ["nested"]


def test_the_commands_that_move_the_whole_server_are_marked() -> None:
    assert all(is_server_wide(c) for c in (blobs.advance_clock, timing.restart,
                                           timing.late_retry, faults.fault_send,
                                           faults.fault_publish))
    assert not is_server_wide(timing.long_polls)


def test_the_clock_read_by_any_worker_only_moves_forward() -> None:
    gate = ServerWide()
    gate.clock_read(5_000)
    gate.clock_read(4_000)  # an older reading of another worker
    assert gate.now_ms == 5_000
