"""Every command of the kit by name: what a replay file lists and the state machine performs.
Each is a function of the :class:`~waypost.properties.world.World` and concrete arguments, in
the module of its area; ``docs/spec.md`` maps the properties to these names."""

from __future__ import annotations

from collections.abc import Callable

from waypost.properties import (
    acks,
    blobs,
    control,
    faults,
    feed,
    limit_phase,
    memory,
    messages,
    revisions,
    submissions,
    timing,
)

Command = Callable[..., None]

COMMANDS: dict[str, Command] = {
    # control plane (properties/control.py)
    "setup": control.setup, "provision": control.provision, "rotate": control.rotate,
    "regrant": control.regrant, "revoke": control.revoke, "disable": control.disable,
    "change_view": control.change_view,
    # messages (properties/messages.py)
    "send": messages.send, "read_message": messages.read_message,
    # feed (properties/feed.py)
    "read_feed": feed.read_feed, "check_view": feed.check_view, "tamper": feed.tamper,
    # receipts (properties/acks.py)
    "ack": acks.ack, "ack_limits": acks.ack_limits, "probe_foreign": acks.probe_foreign,
    # idempotency (properties/submissions.py)
    "retry": submissions.retry, "conflict": submissions.conflict,
    "lookup": submissions.lookup, "reuse_key": submissions.reuse_key,
    # uploads and blobs (properties/blobs.py)
    "prepare": blobs.prepare, "put": blobs.put, "seal": blobs.seal,
    "read_blob": blobs.read_blob, "advance_clock": blobs.advance_clock,
    # memory (properties/memory.py, properties/revisions.py)
    "publish": memory.publish, "race": memory.race, "revision_limit": memory.revision_limit,
    "read_collection": revisions.read_collection, "read_revision": revisions.read_revision,
    "cursor_elsewhere": revisions.cursor_elsewhere,
    # faults and concurrency (properties/faults.py)
    "fault_send": faults.fault_send, "fault_publish": faults.fault_publish,
    "parallel_retries": faults.parallel_retries, "concurrent_sends": faults.concurrent_sends,
    # timing: long polls, restarts, late retries (properties/timing.py)
    "long_polls": timing.long_polls, "restart": timing.restart,
    "late_retry": timing.late_retry,
    # published limits at their boundary (properties/limit_phase.py)
    "check_limit": limit_phase.check_limit,
}

