"""What changed against a baseline run (``waypost conformance compare --baseline``): per
property (with the HOSTILE and FUZZ phases), requirement id, limit and hostile-input check,
whether a later run got worse or better.

Results are ordered fail < expected failure < not run (in any way, or absent) < pass; a row
whose result moved down that order got worse, up it got better. So a row that no longer runs
got worse (what was verified no longer is), and one that fails where it was an expected
failure got worse too. Moves within a class (pass to XPASS, skipped to not run) are no
change."""

from __future__ import annotations

from dataclasses import dataclass

from waypost.conformance.comparison import ABSENT, FAIL, NONE, PASS, XFAIL, short, verdict
from waypost.conformance.report_file import Run, RunRow

RANK = {FAIL: 0, XFAIL: 1, NONE: 2, PASS: 3}
#: The rows compared, by the report's list and the word a change names them with.
KINDS = (("properties", "property"), ("requirements", "requirement"), ("limits", "limit"),
         ("hostile", "hostile-input check"))


@dataclass(frozen=True)
class Change:
    """One row whose result moved between the baseline and a later run."""

    kind: str
    key: str
    name: str
    before: str
    after: str
    message: str = ""  # the later run's message or note

    @property
    def worse(self) -> bool:
        return RANK[verdict(self.after).kind] < RANK[verdict(self.before).kind]

    def line(self) -> str:
        """``worse  property P07 Cursor integrity: pass → FAIL``."""
        label = "worse " if self.worse else "better"
        return (f"{label} {self.kind} {self.key} {short(self.name, 70)}: "
                f"{verdict(self.before).label} → "
                f"{verdict(self.after).label}")


@dataclass(frozen=True)
class Changes:
    """Every change of one run against the baseline, worse ones first."""

    baseline: Run
    run: Run
    changes: tuple[Change, ...]

    @property
    def worse(self) -> tuple[Change, ...]:
        return tuple(change for change in self.changes if change.worse)

    @property
    def failing(self) -> tuple[Change, ...]:
        """The worse rows that now fail (or fail as expected)."""
        return tuple(change for change in self.worse if verdict(change.after).kind != NONE)

    @property
    def unchecked(self) -> tuple[Change, ...]:
        """The worse rows that no longer run: what was verified no longer is."""
        return tuple(change for change in self.worse if verdict(change.after).kind == NONE)

    @property
    def better(self) -> tuple[Change, ...]:
        return tuple(change for change in self.changes if not change.worse)

    @property
    def notes(self) -> list[str]:
        """How the two runs differ in what they ran: a row one profile leaves out shows
        as not run."""
        differ = [f"{what} {_shown(before)} → {_shown(after)}" for what, before, after in (
            ("profile", self.baseline.profile, self.run.profile),
            ("kit", self.baseline.kit, self.run.kit)) if before != after]
        return [f"the runs differ in {', '.join(differ)}: a check one of them did not run "
                "shows as not run"] if differ else []


def _shown(value: str | None) -> str:
    return value if value is not None else "unknown"


def changes(baseline: Run, run: Run) -> Changes:
    """What got worse and what got better in ``run`` against ``baseline``."""
    found = []
    for kind, word in KINDS:
        before, after = baseline.by_key(kind), run.by_key(kind)
        for key in [*before, *(key for key in after if key not in before)]:
            old, new = before.get(key), after.get(key)
            if _kind(old) != _kind(new):
                shown = new or old
                assert shown is not None
                found.append(Change(word, key, shown.name, _result(old), _result(new),
                                    new.message if new is not None else ""))
    found.sort(key=_order)  # stable: in report order within each rank
    return Changes(baseline, run, tuple(found))


def _order(change: Change) -> tuple[int, int]:
    """Worse first, those that now fail before those no longer checked; better after."""
    return (0, RANK[verdict(change.after).kind]) if change.worse else (1, 0)


def _result(outcome: RunRow | None) -> str:
    return outcome.result if outcome is not None else ABSENT


def _kind(outcome: RunRow | None) -> str:
    return verdict(_result(outcome)).kind
