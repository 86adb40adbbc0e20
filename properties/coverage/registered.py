"""Requirement coverage of the checks that do not name their ids where they are made, and the
ids the kit does not check (``properties/coverage/unchecked.py``).

The state machine's commands, its invariant, the dead-token checks, the limit phase and the
consumer matrix name their requirement ids in every check they make
(``world.check(("WP-RCPT-6", …), …)``): a run counts each id where it is checked
(``Ledger.by_requirement``), and ``properties/coverage/check_sites.py`` reads from the source which ids
each of them may check. The phases that keep results of their own are tagged here instead, one
call per check at import time of the module that defines it::

    from waypost.properties.coverage.registered import register
    register("hostile unknown-member", ("WP-VAL-1", "WP-ERR-1"))

and a run adds their counts to its ledger when the phase ends (``ledger.by_check[name] +=
checks_made``; for a failure ``ledger.failed_checks.setdefault(name, row)``):

- ``crash matrix <operation>``: the cells of one write in ``waypost conformance crash-matrix``
  (a command of its own: those ids show ``not run`` in a plain run, with where they are checked);
- ``hostile <name>``: a check of the hostile-input phase (``properties/hostile/``, run by
  ``conformance/hostile_phase.py``), counted by its inputs when it ran;
- ``fuzz <name>``: a check of contract fuzzing (``conformance/fuzz_rules.py``);
- ``vectors <file>``: a vector file of ``conformance/vectors/`` that the kit's own code
  reproduces (the test suite runs them, not a target).

``where`` tells a check that a plain ``waypost conformance`` run does not make (``"crash
matrix"``, ``"test suite"``): its ids then read ``not run`` with where they are checked, never
``pass``. ``tests/properties/coverage/test_requirements.py`` keeps the registry honest: every
id it names exists in docs/protocol.md, and every id there has a check or a line in
:data:`NOT_CHECKED` (an id that gains a check must lose its line). The requirement table itself
(text, checks run, result) is ``waypost.conformance.requirement_table``.
"""

from __future__ import annotations

from dataclasses import dataclass

from waypost.properties.coverage.unchecked import NOT_CHECKED as NOT_CHECKED
from waypost.properties.hostile import http as hostile_http
from waypost.properties.hostile import text as hostile_text
from waypost.properties.hostile import values as hostile_values
from waypost.properties.hostile import wire as hostile_wire


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


#: ``waypost conformance crash-matrix``: every fault point of each write, crash and 503.
_CRASH = ("WP-IDEM-5", "WP-IDEM-6", "WP-IDEM-11", "WP-ERR-7", "WP-LOAD-5", "WP-HOOK-4",
          "WP-HOOK-5", "WP-HOOK-6", "WP-HOOK-7")
_CRASH_OPERATIONS = ("message.send", "receipt.ack", "blob.prepare", "blob.put", "blob.commit",
                     "memory.publish")

#: Vector files the kit's own code reproduces (tests/properties/protocol/test_vectors.py).
_VECTORS: dict[str, tuple[str, ...]] = {
    "request_fingerprints.json": ("WP-IDEM-2", "WP-IDEM-3"),
    "grant_fingerprints.json": ("WP-AUTH-8", "WP-AUTH-9"),
    "memory_states.json": ("WP-MEM-14", "WP-MEM-24"),
    "validation.json": ("WP-VAL-4", "WP-VAL-6", "WP-VAL-7", "WP-VAL-12", "WP-VAL-15",
                        "WP-VAL-16", "WP-VAL-17", "WP-VAL-20"),
    "errors.json": ("WP-ERR-1", "WP-ERR-2", "WP-ERR-3"),
}

for _name in _CRASH_OPERATIONS:
    register(f"crash matrix {_name}", _CRASH, where="crash matrix")
for _name, _ids in _VECTORS.items():
    register(f"vectors {_name}", _ids, where="test suite")
for _hostile in (*hostile_values.CHECKS, *hostile_text.CHECKS, *hostile_http.CHECKS,
                 *hostile_wire.CHECKS):
    register(f"hostile {_hostile.name}", _hostile.requirements)
