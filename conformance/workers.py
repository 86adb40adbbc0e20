"""The exploration's workers (``--workers N``): independent state machines run at once, each
in its own spaces with a seed derived from the run's, their results merged into one report.

A far target spends most of a step waiting on the network; N workers wait together. Worker
``i`` of ``N`` explores its share of the profile's examples with :func:`worker_seed`, so
``--workers N --worker i`` reruns that worker alone, the same draws. What the workers share is
in ``properties/commands/server_wide.py``: where a command moves the whole server (its clock,
a fault, a restart) it waits for every other command to end, and holds the others back. The
ledger is shared (its counts are kept under a lock). Hypothesis supports running tests in
several threads since 6.136.9."""

from __future__ import annotations

import ast
import hashlib
import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from waypost.properties.rules.machine import KitRun

R = TypeVar("R")

#: The most workers a run starts on its own (``--workers`` may ask for more).
MOST_WORKERS = 8
#: Below this round trip a run keeps one worker: the kit's own time dominates.
NEAR_SECONDS = 0.005
#: The simplest examples Hypothesis begins a run with (see :func:`shares`).
HYPOTHESIS_PROBES = 2
#: The connections a worker may hold at once (a step's parallel retries: 4).
CONNECTIONS_PER_WORKER = 4


@dataclass(frozen=True)
class Share:
    """One worker's part of the exploration."""

    index: int
    workers: int
    seed: int
    examples: int

    @property
    def prefix(self) -> str:
        """What its spaces' names add to the run's (none for a run of one worker)."""
        return "" if self.workers == 1 else f"w{self.index}"


def worker_seed(seed: int, index: int, workers: int) -> int:
    """The seed of worker ``index`` of ``workers`` (the run's own when there is one)."""
    if workers == 1:
        return seed
    digest = hashlib.sha256(f"waypost-worker/{seed}/{index}/{workers}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def shares(seed: int, examples: int, workers: int, only: int | None = None) -> list[Share]:
    """The workers' shares of ``examples`` (all of them, or worker ``only`` alone). Hypothesis
    begins every run with its simplest examples (every step the first rule with the same
    seed, then a setup alone): a run of one worker counts them among its examples, as it always
    did; each of several workers adds them to its share, so that the workers together explore
    at least what one would."""
    probes = HYPOTHESIS_PROBES if workers > 1 else 0
    every = [Share(i, workers, worker_seed(seed, i, workers),
                   examples // workers + (1 if i < examples % workers else 0) + probes)
             for i in range(workers)]
    return every if only is None else [every[only]]


def round_trip(client: httpx.Client, tries: int = 3) -> float:
    """The target's round trip in seconds: the fastest of a few ``GET /v1/describe`` (after one
    that opens the connection)."""
    times = []
    for n in range(tries + 1):
        started = time.monotonic()
        client.get("/v1/describe")
        if n:
            times.append(time.monotonic() - started)
    return min(times)


def default_workers(rtt: float, max_connections: int) -> int:
    """Workers for a target ``rtt`` seconds away: one when it is near, else one per 6.25 ms
    of round trip (8 at 50 ms), never more than the connections allow."""
    if rtt < NEAR_SECONDS:
        return 1
    wanted = min(MOST_WORKERS, max(2, math.ceil(rtt / 0.00625)))
    return max(1, min(wanted, max_connections // CONNECTIONS_PER_WORKER))


def run_workers(kit: KitRun, plans: list[Share], explore: Callable[[KitRun, Share], R],
                on_example: Callable[[KitRun], None] | None) -> list[tuple[KitRun, R]]:
    """Run ``explore`` once per share, at once, each with a kit of its own (its session, its
    prefix, the run's ledger and server-wide gate); ``kit`` then holds the totals."""
    lock = threading.Lock()
    kits = [worker_kit(kit, share) for share in plans]
    finished = itertools.count(1)

    def tally(_: KitRun) -> None:  # an example of a worker ended: the run's progress
        with lock:
            kit.examples = next(finished)
            kit.steps = sum(k.steps for k in kits)
            if on_example is not None:
                on_example(kit)

    for worker in kits:
        worker.on_example = tally
    with ThreadPoolExecutor(len(plans), thread_name_prefix="waypost-kit-worker") as pool:
        found = list(pool.map(explore, kits, plans))
    kit.examples = sum(k.examples for k in kits)
    kit.steps = sum(k.steps for k in kits)
    if kit.trace is not None:
        kit.trace = [example for worker in kits for example in worker.trace or []]
    kit.session.hook_faults += sum(worker.session.hook_faults for worker in kits)
    return list(zip(kits, found, strict=True))


def worker_kit(kit: KitRun, share: Share) -> KitRun:
    """A worker's kit: the run's choices, a session of its own over the same client."""
    return KitRun(kit.session.for_another_thread(), kit.prefix + share.prefix, kit.ledger,
                  kit.rules, kit.selected, trace=[] if kit.trace is not None else None, shared=kit.shared,
                  skip_simplest=share.workers > 1)


@contextmanager
def one_ast_at_a_time() -> Iterator[None]:
    """While a run's threads explore at once: ``ast.parse`` one call at a time. CPython 3.11
    builds an AST's Python objects with one interpreter-wide recursion counter (gh-106905), so
    two threads parsing at once (Hypothesis parses the source of lambdas, filters and modules
    as it draws) can fail with ``SystemError: AST constructor recursion depth mismatch``: one
    far run in CI did, reported as a kit error."""
    original = ast.parse
    lock = threading.RLock()  # re-entered where a parse's collection runs code that parses

    def parse(*args: Any, **kwargs: Any) -> ast.AST:
        with lock:
            tree: ast.AST = original(*args, **kwargs)
        return tree
    setattr(ast, "parse", parse)  # noqa: B010 (the module's own attribute, as callers look it up)
    try:
        yield
    finally:
        setattr(ast, "parse", original)  # noqa: B010

