"""What changed against a baseline run (``waypost conformance compare --baseline``): per
property (with the HOSTILE and FUZZ phases), requirement id, limit and hostile-input check,
whether a later run got worse or better, and where the two runs differ in what they checked.

A run *checked* a row when its result there is a verdict: pass (or XPASS), expected failure or
fail. Of the rows both runs checked, results are ordered fail < expected failure < pass; a row
whose result moved down that order got worse, up it got better (pass to XPASS is no change).
Only those are regressions, and ``compare`` exits 1 only on a row that got worse.

A row one run checked and the other did not (skipped by ``--only``, not run, not covered, not
checked, not published, not applicable, absent: a phase the profile leaves out) is a coverage
difference, neither worse nor better: *narrower* where the baseline checked it and the later
run did not, *wider* the other way. A run of fewer properties is no regression, and a run of
more is no improvement. The ERROR row (the kit or the server raised outside any check) is
checked by every run and written only when it fails: a run without it passed it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from waypost.conformance.comparison import ABSENT, FAIL, NONE, PASS, XFAIL, short, verdict
from waypost.conformance.report_file import Run, RunRow

RANK = {FAIL: 0, XFAIL: 1, NONE: 2, PASS: 3}
#: The rows compared, by the report's list and the word a change names them with.
KINDS = (("properties", "property"), ("requirements", "requirement"), ("limits", "limit"),
         ("hostile", "hostile-input check"))
#: Rows every run checks and writes only when they fail: absent, they passed.
ALWAYS_CHECKED = frozenset({("property", "ERROR")})
#: The most rows of each coverage difference the page and the Markdown list (the matrices
#: show every row).
COVERAGE_ROWS = 100

WORSE, BETTER, NARROWER, WIDER = "worse", "better", "narrower", "wider"
#: How the page and the Markdown mark each kind of change.
ARROWS = {WORSE: "▼ worse", BETTER: "▲ better", NARROWER: "− narrower", WIDER: "+ wider"}


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
    def classes(self) -> tuple[str, str]:
        """The class (pass, fail, xfail, none) of the baseline's result and the later one's."""
        return _class(self.kind, self.key, self.before), _class(self.kind, self.key, self.after)

    @property
    def what(self) -> str:
        """worse or better (a row both runs checked), narrower (the baseline checked it, the
        later run did not) or wider (the other way)."""
        before, after = self.classes
        if NONE in (before, after):
            return NARROWER if after == NONE else WIDER
        return WORSE if RANK[after] < RANK[before] else BETTER

    @property
    def worse(self) -> bool:
        """Whether both runs checked the row and the later result is worse: a regression."""
        return self.what == WORSE

    def line(self) -> str:
        """``worse  property P07 Cursor integrity: pass → FAIL``."""
        label = {WORSE: "worse ", BETTER: "better"}.get(self.what, self.what)
        return f"{label} {self.row()}"

    def row(self) -> str:
        """``property P07 Cursor integrity: pass → FAIL``."""
        return (f"{self.kind} {self.key} {short(self.name, 70)}: "
                f"{verdict(self.before).label} → {verdict(self.after).label}")


@dataclass(frozen=True)
class Changes:
    """Every change of one run against the baseline: worse ones first, then better ones, then
    the coverage differences (narrower, then wider)."""

    baseline: Run
    run: Run
    changes: tuple[Change, ...]

    def _of(self, what: str) -> tuple[Change, ...]:
        return tuple(change for change in self.changes if change.what == what)

    @property
    def worse(self) -> tuple[Change, ...]:
        """The rows both runs checked that got worse: what ``compare`` gates on."""
        return self._of(WORSE)

    @property
    def failing(self) -> tuple[Change, ...]:
        """The worse rows, each failing (or failing as expected) in the later run."""
        return self.worse

    @property
    def better(self) -> tuple[Change, ...]:
        """The rows both runs checked that got better."""
        return self._of(BETTER)

    @property
    def narrower(self) -> tuple[Change, ...]:
        """The rows the baseline checked and the later run did not: not a regression."""
        return self._of(NARROWER)

    @property
    def wider(self) -> tuple[Change, ...]:
        """The rows the later run checked and the baseline did not: not an improvement."""
        return self._of(WIDER)

    @property
    def coverage(self) -> list[tuple[str, tuple[Change, ...]]]:
        """Each way the runs' coverage differs (narrower, then wider), as one line that counts
        the rows by what the run that did not check them says (and, wider, by what the later
        run found), with its rows."""
        found = []
        if self.narrower:
            found.append((f"narrower: {_rows(len(self.narrower))} the baseline checked "
                          f"{_were(len(self.narrower))} not checked in this run "
                          f"({_tally(change.after for change in self.narrower)})",
                          self.narrower))
        if self.wider:
            found.append((f"wider: {_rows(len(self.wider))} this run checked "
                          f"{_were(len(self.wider))} not checked in the baseline "
                          f"({_tally(change.before for change in self.wider)}); in this run: "
                          f"{_tally(change.after for change in self.wider)}", self.wider))
        return found

    @property
    def notes(self) -> list[str]:
        """How the two runs differ in what they ran: a row one profile leaves out is a
        coverage difference."""
        differ = [f"{what} {_shown(before)} → {_shown(after)}" for what, before, after in (
            ("profile", self.baseline.profile, self.run.profile),
            ("kit", self.baseline.kit, self.run.kit)) if before != after]
        return [f"the runs differ in {', '.join(differ)}: a check one of them did not run "
                "is a coverage difference, not a change"] if differ else []


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"


def _were(count: int) -> str:
    return "was" if count == 1 else "were"


def _tally(results: Iterable[str]) -> str:
    """``skipped (--only): 120, not run: 9``: the results' words, most frequent first."""
    counted = Counter(verdict(result).label for result in results)
    return ", ".join(f"{label}: {count}" for label, count in counted.most_common())


def _shown(value: str | None) -> str:
    return value if value is not None else "unknown"


def changes(baseline: Run, run: Run) -> Changes:
    """What got worse and what got better in ``run`` against ``baseline``, and what only one
    of them checked."""
    found = []
    for kind, word in KINDS:
        before, after = baseline.by_key(kind), run.by_key(kind)
        for key in [*before, *(key for key in after if key not in before)]:
            old, new = before.get(key), after.get(key)
            if _class(word, key, _result(old)) != _class(word, key, _result(new)):
                shown = new or old
                assert shown is not None
                found.append(Change(word, key, shown.name, _result(old), _result(new),
                                    new.message if new is not None else ""))
    found.sort(key=_order)  # stable: in report order within each rank
    return Changes(baseline, run, tuple(found))


def _order(change: Change) -> tuple[int, int]:
    """Worse first (what now fails before what now fails as expected), better after, then
    narrower, then wider."""
    what = change.what
    rank = RANK[change.classes[1]] if what == WORSE else 0
    return (WORSE, BETTER, NARROWER, WIDER).index(what), rank


def _result(outcome: RunRow | None) -> str:
    return outcome.result if outcome is not None else ABSENT


def _class(word: str, key: str, result: str) -> str:
    """The class of a row's result; an absent row every run checks passed."""
    if result == ABSENT and (word, key) in ALWAYS_CHECKED:
        return PASS
    return verdict(result).kind
