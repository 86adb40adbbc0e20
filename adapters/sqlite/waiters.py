"""How the SQLite threads answer their callers: a caller on an event loop waits on an asyncio
future that the thread settles on that loop, every answer of one batch in one hand-over (one
wake-up of the loop however many callers it has); a caller without a loop (maintenance, tests)
waits on a :class:`concurrent.futures.Future`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LoopWaiter:
    """An asyncio future of ``loop``, to be settled from another thread."""

    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]

    @classmethod
    def here(cls) -> LoopWaiter:
        """A fresh future of the running loop."""
        loop = asyncio.get_running_loop()
        return cls(loop, loop.create_future())


Waiter = Future[Any] | LoopWaiter
#: A waiter with its result, or with the error it gets instead.
Answer = tuple[Waiter, Any, BaseException | None]


def settle(answers: Sequence[Answer]) -> None:
    """Answer every waiter: a concurrent future at once, asyncio futures on their loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any,
                                                        BaseException | None]]] = {}
    for waiter, result, error in answers:
        if isinstance(waiter, LoopWaiter):
            by_loop.setdefault(waiter.loop, []).append((waiter.future, result, error))
            continue
        # A cancelled future cannot be set: that must not end the thread, nor leave the
        # other waiters of the batch unanswered.
        with contextlib.suppress(InvalidStateError):
            if error is not None:
                waiter.set_exception(error)
            else:
                waiter.set_result(result)
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(_settle_on_loop, settled)


def _settle_on_loop(settled: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for future, result, error in settled:
        if future.done():  # its caller was cancelled meanwhile
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
