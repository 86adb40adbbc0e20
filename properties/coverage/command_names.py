"""Every command of the kit by name, for replay files, which list what an example performed by
name (the rules and phases call the functions themselves). Each is a function of the
:class:`~waypost.properties.commands.world.World` and concrete arguments, in the module of its
area; a command's name is its function's ``__name__``."""

from __future__ import annotations

from waypost.properties.commands import (
    acks,
    blobs,
    control,
    faults,
    feed,
    memory,
    messages,
    revisions,
    submissions,
    timing,
)
from waypost.properties.commands.world import Command
from waypost.properties.limits import registry as limit_registry

#: The commands in the order of their areas; a replay names each by its function's name.
ALL: tuple[Command, ...] = (
    # control plane
    control.setup, control.provision, control.rotate, control.regrant, control.revoke,
    control.disable, control.change_view,
    # messages, the feed, receipts
    messages.send, messages.read_message, feed.read_feed, feed.check_view, feed.tamper,
    acks.ack, acks.ack_limits, acks.probe_foreign,
    # idempotency
    submissions.retry, submissions.conflict, submissions.lookup, submissions.reuse_key,
    # uploads and blobs
    blobs.prepare, blobs.put, blobs.seal, blobs.read_blob, blobs.advance_clock,
    # memory
    memory.publish, memory.race, memory.revision_limit, revisions.read_collection,
    revisions.read_revision, revisions.cursor_elsewhere,
    # faults and concurrency; timing: long polls, restarts, late retries
    faults.fault_send, faults.fault_publish, faults.parallel_retries, faults.concurrent_sends,
    timing.long_polls, timing.restart, timing.late_retry,
    # published limits at their boundary
    limit_registry.check_limit,
)
COMMANDS: dict[str, Command] = {command.__name__: command for command in ALL}
