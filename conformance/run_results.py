"""What a run of the kit produces: a row per property, the report that holds every phase's
rows (written as a file by :mod:`~waypost.conformance.report_file`, shown by
:mod:`~waypost.conformance.report`), and a replay file per failure."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waypost.conformance import hostile_phase
from waypost.conformance import requirement_table as coverage
from waypost.conformance.report_file import PHASE_NAMES
from waypost.conformance.targets import Identity
from waypost.properties.commands.world import World
from waypost.properties.coverage.catalogue import Property
from waypost.properties.verdicts.violations import PropertyViolation
from waypost.properties.wire.untrusted import excerpt

if TYPE_CHECKING:
    from waypost.conformance.fuzz import FuzzReport
    from waypost.conformance.workers import Share

#: The row of the hostile-input phase, beside the properties'.
HOSTILE = Property("HOSTILE", PHASE_NAMES["HOSTILE"])
#: A failure a phase found, by the property it breaks (``ERROR``: outside any property): the
#: violation (None for an error of the kit or the server), what was raised, its replay file.
Failures = dict[str, tuple[PropertyViolation | None, BaseException, Path]]


@dataclass
class LimitOutcome:
    """One row of the report's limits table."""

    name: str
    value: int | None  # None: the target publishes no value
    properties: tuple[str, ...]
    at_limit: str  # accepted, FAIL, not reached, or "" when not checked
    over_limit: str  # refused, FAIL, not reached, or ""
    result: str  # pass, fail, xfail, not published, not checked, skipped
    note: str = ""
    replay: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"limit": self.name, "value": self.value, "properties": list(self.properties),
                "accepted_at_limit": self.at_limit or None,
                "refused_above_limit": self.over_limit or None, "result": self.result,
                "note": self.note, "replay": self.replay}


@dataclass
class PropertyResult:
    """One property's result in a run."""

    prop: Property
    result: str  # pass, fail, xfail, xpass, incomplete, skipped, not run
    checks: int = 0  # checks of it made in this run
    message: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    replay: str | None = None
    expected_reason: str = ""
    failed: int = 0  # of its checks, those that failed


@dataclass
class Report:
    target: str
    profile: str
    seed: int
    run_id: str
    examples: int = 0
    steps: int = 0
    seconds: float = 0.0
    outcomes: list[PropertyResult] = field(default_factory=list)
    fault_sources: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)  # the rules the run's steps drew from
    limits: list[LimitOutcome] = field(default_factory=list)  # the limit phase, by limit
    commands: list[list[str]] | None = None  # per example, its commands (when traced)
    hostile: list[hostile_phase.HostileRow] = field(default_factory=list)  # the hostile-input phase
    fuzz: FuzzReport | None = None  # the fuzz phase (ci and thorough runs of the CLI)
    requirements: list[coverage.Row] = field(default_factory=list)  # by requirement id
    #: the consumer's fault points P17 sampled (a quick run), or None: all of them
    consumer_sample: tuple[str, ...] | None = None
    workers: int = 1  # the exploration's workers
    started: str = ""  # when the run started: UTC, ISO 8601 to the second
    identity: Identity = field(default_factory=Identity)  # what its /v1/describe says it is

    @property
    def failed(self) -> bool:
        return any(o.result == "fail" for o in self.outcomes) or bool(
            self.fuzz and self.fuzz.failed)



def leaf_failures(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaf_failures(inner)]
    return [error]


#: What a replay says of a failure Hypothesis could not make happen again from the same draws.
TIMING = ("the same draws passed when Hypothesis ran them again: the failure depends on timing "
          "(the order of concurrent requests, a long poll's moment). Its commands may need a few "
          "runs to fail again")


def write_replay(directory: Path, report: Report, violation: PropertyViolation | None,
                 error: BaseException, world: World | None, name: str = "",
                 worker: Share | None = None, timing: bool = False) -> Path:
    """The failing example as a JSON replay: its commands (rerun deterministically) and the
    HTTP exchanges it made, with the model's complaint; ``name`` tells a limit check's file
    from the exploration's; ``worker`` is the exploration's worker that found it (of several),
    ``timing`` says that the failure did not happen again from the same draws."""
    directory.mkdir(parents=True, exist_ok=True)
    pid = violation.pid if violation else "ERROR"
    path = directory / f"{report.run_id}-{name}{pid}.json"
    evidence = violation.evidence if violation else {}
    path.write_text(json.dumps({  # bounded: a server's answers are excerpts, never whole
        "format": "waypost-replay/1",
        "property": pid,
        "message": excerpt(violation.message if violation else repr(error)),
        "evidence": {key: excerpt(value) for key, value in evidence.items()},
        "target": report.target, "profile": report.profile, "seed": report.seed,
        **({"worker": worker.index, "workers": worker.workers, "worker_seed": worker.seed}
           if worker is not None and worker.workers > 1 else {}),
        **({"timing": TIMING} if timing else {}),
        "commands": violation.commands if violation else (world.commands if world else []),
        "exchanges": violation.exchanges if violation else (
            [e.as_json() for e in world.session.trace] if world else []),
    }, indent=2, default=str) + "\n")
    return path


