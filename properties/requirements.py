"""Requirement coverage: the requirement ids of docs/protocol.md that each check of the kit
exercises, besides the P-number it reports under, and the ids the kit does not check, each
with why.

A *check* is named by its kind and its name, the name a run counts it under:

- ``command <name>``: a command of the state machine (``properties/commands.py``), with every
  check made while it runs (``World.run``), also the re-reads that end an example;
- ``invariant <name>``: an invariant of the machine (``properties/machine.py``);
- ``revoked token``, ``disabled actor``: a request of a dead credential, within any command;
- ``limit <name>``: the limit phase's check of one published limit (``properties/limits.py``);
- ``consumer matrix``: P17's matrix of the reference consumer (``consumer_matrix.py``);
- ``crash matrix <operation>``: the cells of one write in ``waypost conformance crash-matrix``
  (a command of its own: those ids show ``not run`` in a plain run, with where they are checked);
- ``hostile <name>``: a check of the hostile-input phase (``properties/hostile_*.py``, run by
  ``conformance/hostile.py``), counted by its inputs when it ran;
- ``vectors <file>``: a vector file of ``conformance/vectors/`` that the kit's own code
  reproduces (the test suite runs them, not a target).

Tagging a new check (hostile inputs, a fuzz phase, …) takes one call, at import time of the
module that defines it::

    from waypost.properties.requirements import register
    register("hostile unknown-member", ("WP-VAL-1", "WP-ERR-1"))

and its checks are counted under that name while they run, through the run's ledger::

    with ledger.checking("hostile unknown-member"):
        ledger.check("P05", ok, "what differed", answer=...)

A phase that keeps results of its own (no ledger checks) adds them to the run's ledger when it
ends: ``ledger.by_check[name] += checks_made`` and, for a failure,
``ledger.failed_checks.setdefault(name, pid)`` (the consumer matrix does so).

``where`` tells a check that a plain ``waypost conformance`` run does not make (``"crash
matrix"``, ``"test suite"``): its ids then read ``not run`` with where they are checked, never
``pass``. ``tests/test_requirements.py`` keeps the registry honest: every id it names exists in
docs/protocol.md, and every id there has a check or a line in :data:`NOT_CHECKED` (an id that
gains a check must lose its line). The requirement table itself (text, checks run, result) is
``waypost.conformance.requirements``.
"""

from __future__ import annotations

from dataclasses import dataclass

from waypost.properties import hostile_http, hostile_values
from waypost.properties.unchecked import NOT_CHECKED as NOT_CHECKED


@dataclass(frozen=True)
class Check:
    """A check of the kit and the requirement ids it exercises."""

    name: str
    requirements: tuple[str, ...]
    where: str = "run"  # run (waypost conformance), crash matrix, test suite


CHECKS: dict[str, Check] = {}


def register(name: str, requirements: tuple[str, ...] | list[str],
             where: str = "run") -> Check:
    """Tag the check ``name`` with ``requirements`` (ids of docs/protocol.md); a second call
    for one name adds its ids to the first's."""
    known = CHECKS.get(name)
    ids = tuple(dict.fromkeys((*(known.requirements if known else ()), *requirements)))
    CHECKS[name] = check = Check(name, ids, known.where if known else where)
    return check


def checks_of(requirement: str) -> list[Check]:
    """The checks tagged with ``requirement``, in registration order."""
    return [check for check in CHECKS.values() if requirement in check.requirements]


_ENVELOPE = ("WP-ERR-1", "WP-HTTP-3")
_WRITE_AUTHORITY = ("WP-AUTH-1", "WP-AUTH-2", "WP-AUTH-10", "WP-AUTH-14")

#: The state machine's commands (``command <name>``).
_COMMANDS: dict[str, tuple[str, ...]] = {
    "setup": ("WP-CTRL-1", "WP-CTRL-3", "WP-CTRL-6", "WP-CTRL-11", "WP-AUTH-8",
              "WP-HTTP-9", "WP-HOOK-3"),
    "provision": ("WP-AUTH-6", "WP-AUTH-7", "WP-AUTH-8", "WP-CTRL-8", "WP-CTRL-11",
                  "WP-VIS-1", "WP-VIS-2"),
    "rotate": ("WP-AUTH-8", "WP-AUTH-9", "WP-CUR-5"),
    "regrant": ("WP-AUTH-8", "WP-CUR-4", "WP-RCPT-10"),
    "revoke": ("WP-CTRL-13", "WP-AUTH-2"),
    "disable": ("WP-CTRL-10", "WP-CTRL-15", "WP-AUTH-2"),
    "change_view": ("WP-CTRL-9", "WP-CUR-4", "WP-RCPT-10"),
    "send": (*_WRITE_AUTHORITY, *_ENVELOPE, "WP-MSG-1", "WP-MSG-2", "WP-MSG-3", "WP-MSG-4",
             "WP-MSG-5", "WP-MSG-6", "WP-MSG-8", "WP-MSG-9", "WP-HTTP-10", "WP-IDEM-1",
             "WP-IDEM-7", "WP-AUTH-13", "WP-FEED-9", "WP-CTRL-15"),
    "read_message": ("WP-MSG-10", "WP-MSG-11", "WP-MSG-12", "WP-HTTP-11", "WP-AUTH-13",
                     "WP-AUTH-14", "WP-VIS-4"),
    "read_feed": ("WP-FEED-2", "WP-FEED-4", "WP-FEED-5", "WP-FEED-6", "WP-HTTP-12",
                  "WP-HTTP-13", "WP-VAL-9", "WP-CUR-1", "WP-CUR-4", "WP-CUR-5", "WP-VIS-1",
                  "WP-AUTH-2", "WP-CTRL-9"),
    "check_view": ("WP-VIS-1", "WP-VIS-2", "WP-VIS-3", "WP-VIS-4", "WP-FEED-1", "WP-FEED-2",
                   "WP-FEED-3", "WP-FEED-8", "WP-FEED-9", "WP-HTTP-12", "WP-MEM-29",
                   "WP-MEM-30", "WP-RCPT-7", "WP-MSG-9", "WP-RCPT-5"),
    "tamper": ("WP-VAL-23", "WP-CUR-2"),
    "ack": (*_WRITE_AUTHORITY, *_ENVELOPE, "WP-RCPT-1", "WP-RCPT-2", "WP-RCPT-3", "WP-RCPT-4",
            "WP-RCPT-5", "WP-RCPT-6", "WP-RCPT-7", "WP-RCPT-8", "WP-RCPT-11", "WP-RCPT-12",
            "WP-HTTP-14", "WP-CUR-4"),
    "ack_limits": ("WP-RCPT-2", "WP-LIM-3"),
    "probe_foreign": ("WP-AUTH-13", "WP-RCPT-3", "WP-CUR-3"),
    "retry": ("WP-IDEM-6", "WP-IDEM-8", "WP-IDEM-10", "WP-ERR-4"),
    "conflict": ("WP-IDEM-4", "WP-IDEM-9"),
    "lookup": ("WP-IDEM-2", "WP-IDEM-3", "WP-IDEM-13", "WP-IDEM-14", "WP-VAL-12"),
    "reuse_key": ("WP-IDEM-1", "WP-IDEM-14"),
    "prepare": ("WP-UPL-1", "WP-UPL-2", "WP-HTTP-15", "WP-VAL-22"),
    "put": ("WP-UPL-3", "WP-UPL-4", "WP-UPL-5", "WP-UPL-6", "WP-UPL-7"),
    "seal": ("WP-UPL-2", "WP-UPL-7", "WP-UPL-8", "WP-UPL-11", "WP-HTTP-15"),
    "read_blob": ("WP-UPL-9", "WP-UPL-10", "WP-VAL-21", "WP-MSG-8", "WP-MEM-26",
                  "WP-AUTH-13"),
    "advance_clock": ("WP-HOOK-3", "WP-UPL-7", "WP-UPL-8"),
    "publish": (*_WRITE_AUTHORITY, *_ENVELOPE, "WP-MEM-1", "WP-MEM-2", "WP-MEM-4", "WP-MEM-5",
                "WP-MEM-7", "WP-MEM-8", "WP-MEM-9", "WP-MEM-10", "WP-MEM-11", "WP-MEM-12",
                "WP-MEM-14", "WP-MEM-15", "WP-MEM-16", "WP-MEM-17", "WP-MEM-19", "WP-MEM-27",
                "WP-HTTP-16", "WP-IDEM-10"),
    "race": ("WP-MEM-18", "WP-LOAD-3"),
    "revision_limit": ("WP-VAL-7", "WP-VAL-8"),
    "read_collection": ("WP-MEM-2", "WP-MEM-20", "WP-HTTP-17"),
    "read_revision": ("WP-MEM-21", "WP-MEM-22", "WP-MEM-23", "WP-MEM-24", "WP-MEM-25",
                      "WP-MEM-26", "WP-HTTP-17", "WP-MEM-3"),
    "cursor_elsewhere": ("WP-CUR-6",),
    "fault_send": ("WP-IDEM-5", "WP-IDEM-11", "WP-ERR-7", "WP-LOAD-5", "WP-HOOK-4",
                   "WP-HOOK-5", "WP-HOOK-6", "WP-HOOK-7", "WP-AUTH-11"),
    "fault_publish": ("WP-IDEM-5", "WP-IDEM-10", "WP-IDEM-11", "WP-ERR-7", "WP-HOOK-4",
                      "WP-HOOK-6", "WP-HOOK-7"),
    "parallel_retries": ("WP-IDEM-12", "WP-IDEM-6"),
    "concurrent_sends": ("WP-FEED-1", "WP-FEED-3", "WP-LOAD-3"),
}

#: The limit phase (``limit <name>``): every limit at N and N + 1.
_LIMIT = ("WP-LIM-1", "WP-LIM-3")
_LIMITS: dict[str, tuple[str, ...]] = {
    "ack_items": (*_LIMIT, "WP-RCPT-2"),
    "recipients": (*_LIMIT, "WP-MSG-2"),
    "attachments": (*_LIMIT, "WP-MSG-8"),
    "subject_bytes": (*_LIMIT, "WP-VAL-17", "WP-LIM-2"),
    "body_text_bytes": (*_LIMIT, "WP-MSG-7"),
    "metadata_bytes": (*_LIMIT, "WP-VAL-18", "WP-LIM-2"),
    "request_bytes": (*_LIMIT, "WP-LIM-4"),
    "inline_items_per_publish": (*_LIMIT, "WP-MEM-6"),
    "memory_entries_per_revision": (*_LIMIT, "WP-MEM-13", "WP-MEM-28"),
    "manifest_input_bytes": (*_LIMIT, "WP-MEM-28"),
    "upload_bytes": (*_LIMIT, "WP-UPL-1"),
    "page_limit": (*_LIMIT, "WP-FEED-6", "WP-MEM-23"),
    "wait_seconds": (*_LIMIT, "WP-FEED-7"),
}

#: ``waypost conformance crash-matrix``: every fault point of each write, crash and 503.
_CRASH = ("WP-IDEM-5", "WP-IDEM-6", "WP-IDEM-11", "WP-ERR-7", "WP-LOAD-5", "WP-HOOK-4",
          "WP-HOOK-5", "WP-HOOK-6", "WP-HOOK-7")
_CRASH_OPERATIONS = ("message.send", "receipt.ack", "blob.prepare", "blob.put", "blob.commit",
                     "memory.publish")

#: Vector files the kit's own code reproduces (tests/test_vectors.py).
_VECTORS: dict[str, tuple[str, ...]] = {
    "request_fingerprints.json": ("WP-IDEM-2", "WP-IDEM-3"),
    "grant_fingerprints.json": ("WP-AUTH-8", "WP-AUTH-9"),
    "memory_states.json": ("WP-MEM-14", "WP-MEM-24"),
    "validation.json": ("WP-VAL-4", "WP-VAL-6", "WP-VAL-7", "WP-VAL-12", "WP-VAL-15",
                        "WP-VAL-16", "WP-VAL-17", "WP-VAL-20"),
    "errors.json": ("WP-ERR-1", "WP-ERR-2", "WP-ERR-3"),
}

for _name, _ids in _COMMANDS.items():
    register(f"command {_name}", _ids)
register("invariant sequences_never_reused", ("WP-FEED-1",))
#: A request of a dead credential, inside whichever command made it (``World.dead``).
register("revoked token", ("WP-AUTH-2", "WP-CTRL-13", "WP-AUTH-10"))
register("disabled actor", ("WP-AUTH-2", "WP-CTRL-10", "WP-AUTH-10"))
for _name, _ids in _LIMITS.items():
    register(f"limit {_name}", _ids)
register("consumer matrix", ("WP-IDEM-6", "WP-RCPT-6", "WP-RCPT-11"))
for _name in _CRASH_OPERATIONS:
    register(f"crash matrix {_name}", _CRASH, where="crash matrix")
for _name, _ids in _VECTORS.items():
    register(f"vectors {_name}", _ids, where="test suite")
for _hostile in (*hostile_values.CHECKS, *hostile_http.CHECKS):
    register(f"hostile {_hostile.name}", _hostile.requirements)
