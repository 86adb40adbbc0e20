"""The garbage collector as a long-running server runs it (``waypost serve``, and the floors
``waypost bench`` measures it beside, so that both run on the same interpreter settings).

A long poll that is parked keeps a few hundred objects alive (its connection, its request, its
task), so with thousands parked CPython's default thresholds (700, 10, 10) collect the young
generation every few hundred allocations and the whole heap every few herds: measured in
``waypost bench neighbours``, a timeout herd of 4,000 polls spent about 40 % of the event
loop's time in the collector, mostly in full collections (~0.1-0.3 s each, all on the loop).
Almost every object is freed by its reference count; the collector is only for cycles.
"""

from __future__ import annotations

import gc

#: Young collections every 10,000 net allocations instead of 700; a full collection at most
#: every 100 middle ones (and, as always, only once a quarter more objects are long-lived).
THRESHOLDS = (10_000, 10, 100)


def tune_collector() -> tuple[int, int, int]:
    """Collect once, move what start-up made (modules, the app, its routes) out of every later
    collection's way (``gc.freeze``), and set :data:`THRESHOLDS`; returns them."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    return THRESHOLDS
