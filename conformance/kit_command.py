"""``waypost conformance``: its command line, and what a run shows on stderr while it runs
(:class:`Progress`). The runs are ``kit_run``'s (and each lazy sub-command's module's), imported
only when one runs: this module loads no HTTP client and no Hypothesis."""

from __future__ import annotations

import argparse
import importlib
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from waypost.conformance.arguments import add_target, later
from waypost.conformance.compare_command import add_command as add_compare
from waypost.conformance.profiles import PROFILES
from waypost.properties.wire.bound_values import MAX_CONNECTIONS, SECONDS

if TYPE_CHECKING:
    from waypost.conformance.consumer_matrix import Cell
    from waypost.properties.rules.machine import KitRun

#: Where the kit's own runs are.
RUN = "waypost.conformance.kit_run"
#: Sub-commands whose modules are heavy to import: module and help (their modules register
#: them, with the same help, when they are the one being run).
LAZY = {
    "consumer-matrix": ("waypost.conformance.consumer_matrix_command",
                        "P17: the reference consumer killed at each of its fault points"),
    "hostile": ("waypost.conformance.hostile_phase", "only the hostile-input checks"),
    "load": ("waypost.conformance.load_command",
             "concurrent clients, then every view re-read and the history checked"),
    "fixtures": ("waypost.conformance.fixtures_file",
                 "provision a fixtures file (for a run with --fixtures) through the admin API"),
    "fuzz": ("waypost.conformance.fuzz_command",
             "Schemathesis against the published contract (the kit's OpenAPI document)"),
}


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                 words: Sequence[str] = ()) -> None:
    """Register ``conformance`` on the top-level parser with its sub-commands: ``replay`` and
    ``crash-matrix`` in full, the others (:data:`LAZY`) in full only when ``words`` (the command
    line) names them, else by name and help, so that ``waypost conformance --help`` loads none
    of the kit's machinery."""
    kit = commands.add_parser(
        "conformance", help="run the conformance kit (P01–P18) against a target",
        description="Run the conformance kit: a stateful model of Waypost/1 drives the target "
                    "over HTTP and checks every answer. Target 'sqlite' starts the embedded "
                    "reference in a temporary directory; 'd1' starts the D1/R2 gateway Worker "
                    "on local workerd (npm ci on first use; needs Node.js 20+) and the "
                    "reference on it; a URL targets any deployment (its "
                    "admin token provisions fresh spaces prefixed by the run id; without an "
                    "admin API, --fixtures names pre-provisioned ones). Prints the property "
                    "table (P01–P18, then the hostile-input phase HOSTILE and, in the ci and "
                    "thorough profiles, the contract fuzz phase FUZZ), the limits and "
                    "hostile-input tables, the requirement table's summary line, and last the "
                    "verdict (PASS or FAIL, the rows, the seed); exit status 1 on any failure. "
                    "Failures are written as replay files.")
    add_target(kit)
    kit.add_argument("--profile", choices=sorted(PROFILES), default="ci",
                     help="how much to explore: quick (no fuzz phase), ci (default; its fuzz "
                          "phase runs fuzz's small dev budget), thorough (fuzz's thorough "
                          "budget, 10,000+ requests)")
    kit.add_argument("--seed", type=int, default=None, help="seed (default: random, printed)")
    kit.add_argument("--workers", type=int, default=None, metavar="N",
                     help="state machines exploring at once, each in its own spaces with its "
                          "share of the examples and a seed derived from --seed (default: 1 "
                          "for sqlite, d1, a run through --fixtures and a URL under 5 ms away, "
                          "else one per 6.25 ms of round trip, at most 8; where a command "
                          "moves the whole server, the others wait)")
    kit.add_argument("--worker", type=int, default=None, metavar="I",
                     help="run only worker I (from 0) of --workers: a worker's failure alone, "
                          "with the same draws")
    kit.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS, metavar="N",
                     help="the most connections the kit opens to the target at once "
                          f"(default {MAX_CONNECTIONS}; for a deployment that documents a lower "
                          "limit, "
                          "WP-LOAD-4); each worker needs 4")
    kit.add_argument("--shrink-seconds", type=float, default=None, metavar="SECONDS",
                     help="how long Hypothesis may shrink a failure to its shortest replay "
                          "(default: the profile's, " + ", ".join(
                              f"{name} {profile.shrink_seconds:g}"
                              for name, profile in PROFILES.items()) + "; 0 reports a failure "
                          "as first found)")
    kit.add_argument("--only", default=None,
                     help="only these properties, e.g. P03,P06: the rules whose checks name "
                          "their requirement ids run; the others are skipped; a selected "
                          "property no check of which ran is 'not run', one some of whose "
                          "requirement ids did not run 'incomplete'")
    kit.add_argument("--expected-failures", type=Path, default=None,
                     help="JSON list of {property, reason} known to fail on this target "
                          "(default for --target sqlite or d1: conformance/expected_failures/"
                          "TARGET.json; none for a URL)")
    kit.add_argument("--report-json", type=Path, default=None,
                     help="write the JSON report (docs/report.md), which compare reads")
    kit.add_argument("--html", type=Path, default=None,
                     help="write the run as one self-contained HTML page")
    kit.add_argument("--junit", type=Path, default=None, help="write a JUnit XML report")
    kit.add_argument("--report-md", type=Path, default=None,
                     help="write the requirement table (every requirement id of "
                          "docs/protocol.md: text, checks run, result) as Markdown")
    kit.add_argument("--requirements", action="store_true",
                     help="print the whole requirement table at the end (a run prints only "
                          "its summary line otherwise)")
    kit.add_argument("--replay-dir", type=Path, default=Path("waypost-replays"),
                     help="where failure replays are written (default: ./waypost-replays)")
    kit.add_argument("--trace", type=Path, default=None,
                     help="write the commands of every example, one JSON list per line "
                          "(a seed reruns the same ones)")
    add_timeout(kit)
    kit.add_argument("--fixtures", type=Path, default=None,
                     help="pre-provisioned spaces, actors, consumers, collections and tokens "
                          "(JSON or TOML; docs/porting.md) for a URL target whose admin API "
                          "the kit cannot reach: no admin request is sent, properties that "
                          "need one are reported not run")
    kit.set_defaults(run=later(RUN, "conformance"))
    kit_commands = kit.add_subparsers(dest="kit_command", metavar="COMMAND")
    replay = kit_commands.add_parser(
        "replay", help="rerun a replay file deterministically",
        description="Rerun the commands of a replay file against a target; exit 1 if the "
                    "recorded violation (or another) still happens.")
    replay.add_argument("file", type=Path, help="a replay file written by a failing run")
    add_target(replay)
    replay.add_argument("--fixtures", type=Path, default=None,
                        help="the fixtures file of the failing run (its set provisioned afresh)")
    add_timeout(replay)
    replay.set_defaults(run=later(RUN, "replay"))
    matrix = kit_commands.add_parser(
        "crash-matrix", help="every fault point × every write with a real crash and restart",
        description="Start the embedded reference with --test-hooks --crash-mode exit and, for "
                    "every write operation and fault point, arm a crash there, perform the "
                    "write (the process ends on the spot), restart the process on the same "
                    "data, look the submission up and retry it: the retry must succeed, repeat "
                    "on a second retry and the write must take effect exactly once; with the "
                    "action unavailable the point answers 503 and must never leave a final "
                    "failure. Prints the table of outcomes (not reached / committed / resumed "
                    "/ not committed / stored); "
                    "exit 1 if any cell fails. Targets sqlite and d1 (the reference on D1 behind "
                    "the local gateway, which outlives the crashes), or a server started with "
                    "--test-hooks: a deployment has no fault points.")
    add_target(matrix, "sqlite (default) or d1, started here; or the URL of a running server "
                       "with test hooks (its crashes abandon the request and /_test/restart "
                       "stands in for the restart)")
    matrix.add_argument("--operations", default=None,
                        help="comma-separated subset, e.g. message.send,memory.publish")
    matrix.add_argument("--actions", default="crash,unavailable",
                        help="fault actions to try at each point (default: crash,unavailable)")
    matrix.add_argument("--json", type=Path, default=None, help="also write the cells as JSON")
    matrix.add_argument("--power-loss", action="store_true",
                        help="sqlite: every crash is a power cut — the server runs with "
                             "--synchronous full behind the power-cut simulator, so what it "
                             "wrote but did not sync is lost with the crash (docs/spec.md)")
    matrix.set_defaults(run=later(RUN, "crash_matrix"))
    chosen = _sub_command(words)
    for name, (module, help_text) in LAZY.items():
        if name == chosen:
            importlib.import_module(module).add_command(kit_commands)
        else:
            kit_commands.add_parser(name, help=help_text)
    add_compare(kit_commands)  # light: it loads what it compares with when it runs


def _sub_command(words: Sequence[str]) -> str | None:
    """The sub-command ``words`` (the command line) runs: the first of their names after
    ``conformance`` (a report file named ``load`` given to ``compare`` loads nothing)."""
    names = {"replay", "crash-matrix", "compare", *LAZY}
    after = list(words)[list(words).index("conformance") + 1:] if "conformance" in words else []
    return next((word for word in after if word in names), None)


def add_timeout(parser: argparse.ArgumentParser) -> None:
    """``--timeout``: the deadline of each of the kit's calls (properties/wire/bounds.py)."""
    parser.add_argument("--timeout", type=float, default=SECONDS, metavar="SECONDS",
                        help="the deadline of each call to the target: connecting, sending and "
                             "the whole answer (a long poll adds its wait); an answer that "
                             f"misses it fails the call's property (default: {SECONDS:g})")


def duration(seconds: float) -> str:
    """A duration as a person reads it: ``41 s``, ``2 min 41 s``, ``1 h 5 min``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


#: The phases a run may have after its exploration, in their order, as progress names them.
LATER = {"P17": "P17's consumer matrix", "hostile": "hostile-input phase", "fuzz": "fuzz phase"}


class Progress:
    """What a run shows on stderr while it runs: a line per example on a terminal (rewritten
    in place, cut to its width), every tenth elsewhere; one per cell of P17's matrix; one as
    each later phase starts. Each gives the time elapsed and an estimate of what remains: of
    the current phase, from the examples (or cells) done against those planned, then the
    phases still to come, named (``later``: keys of :data:`LATER`; P17's with its ``cells``).
    Shrinking and discarded examples are mentioned only once a check of an enforced property
    failed in the exploration (``runner.run`` calls :meth:`exploring` and :meth:`phase`)."""

    def __init__(self, out: TextIO, planned: int, *, later: Sequence[str] = (), cells: int = 0,
                 shrink_seconds: float | None = None, started: float | None = None) -> None:
        self.out, self.planned, self.tty = out, planned, out.isatty()
        self.started = time.monotonic() if started is None else started
        self.later = [key for key in LATER if key in later]  # the phases still to come
        self.cells, self.shrink_seconds = cells, shrink_seconds
        self.phase_started = time.monotonic()  # the current later phase's
        self.explore_started = time.monotonic()  # the exploration's (phases may run beside it)
        self.lock = threading.RLock()  # the exploration's workers and the phases beside them
        self.baseline: dict[str, int] = {}  # enforced failures before the exploration
        self.failed_at: tuple[int, str] | None = None  # the first failing example, its pids
        self.width = 0  # of the line shown in place (0: none)

    def exploring(self, kit: KitRun) -> None:
        """The exploration starts: its clock, and the failures the limit phase already had."""
        with self.lock:
            self.explore_started, self.baseline = time.monotonic(), _enforced(kit)

    def __call__(self, kit: KitRun) -> None:
        with self.lock:
            self._example(kit)

    def _example(self, kit: KitRun) -> None:
        if self.failed_at is None:
            failed = [pid for pid, n in _enforced(kit).items() if n > self.baseline.get(pid, 0)]
            self.failed_at = (kit.examples, ", ".join(sorted(failed))) if failed else None
        if not self.tty and kit.examples % 10:
            return
        rate = kit.steps / max(time.monotonic() - self.explore_started, 1e-9)
        checks, _ = kit.ledger.counts()
        self._show(f"example {kit.examples} {self.of(kit.examples)}: "
                   f"{self._clock(self._exploration_left(kit.examples))}; {kit.steps} steps, "
                   f"{sum(checks.values())} checks, {rate:.0f} steps/s")

    def phase(self, key: str) -> None:
        """A later phase starts (a key of :data:`LATER`): shown if it was planned."""
        with self.lock:
            if key in self.later:
                self.later.remove(key)
                self.phase_started = time.monotonic()
                self._show(f"{self._name(key)}: {self._clock('')}", rewrite=False)

    def cell(self, done: int, total: int, cell: Cell) -> None:
        """The P17 consumer matrix's progress: one line per cell."""
        with self.lock:
            self._cell(done, total, cell)

    def _cell(self, done: int, total: int, cell: Cell) -> None:
        if done == 1:
            self.phase("P17")
            self._show("", rewrite=False)  # below the examples' line, if one is shown in place
        spent = time.monotonic() - self.phase_started
        left = f"~{duration(spent / done * (total - done))} left in the matrix" \
            if done < total else "the matrix done"
        self._show(f"P17 consumer matrix: cell {done} of {total} ({cell.flow} × {cell.point})"
                   f"{'' if cell.ok else ': FAILED'}; {self._clock(left)}")

    def of(self, examples: int) -> str:
        """Hypothesis also runs examples it discards, and reruns a failure while shrinking it:
        beyond the planned number, say so rather than count past it (shrinking only once
        something failed)."""
        if examples <= self.planned:
            return f"of {self.planned} planned"
        why = "more" if self.failed_at is None else "discarded or shrinking"
        return f"({self.planned} planned + {examples - self.planned} {why})"

    def _exploration_left(self, examples: int) -> str:
        """What remains of the exploration: the examples to come at the pace so far; once
        something failed, its shrinking, bounded by the run's budget."""
        if self.failed_at is not None:
            failed = f"{self.failed_at[1]} failed at example {self.failed_at[0]}"
            if self.shrink_seconds == 0:
                return f"{failed} (not shrunk: --shrink-seconds 0)"
            return f"{failed}: shrinking it" + (
                "" if self.shrink_seconds is None else
                f" for at most {duration(self.shrink_seconds)}")
        if examples >= self.planned:
            return "ending the exploration"
        spent = time.monotonic() - self.explore_started
        return f"~{duration(spent / max(examples, 1) * (self.planned - examples))} left to explore"

    def _clock(self, left: str) -> str:
        """The time elapsed, what remains of the current phase, and the phases to come."""
        then = ", ".join(self._name(key) for key in self.later)
        return ", ".join(part for part in (
            f"{duration(time.monotonic() - self.started)} elapsed", left,
            f"then {then}" if then else "" if left else "the last phase") if part)

    def _name(self, key: str) -> str:
        return f"{LATER[key]} ({self.cells} cells)" if key == "P17" and self.cells else LATER[key]

    def _show(self, line: str, rewrite: bool = True) -> None:
        """On a terminal, ``line`` rewritten in place (cut to its width, padded over the last)
        unless not ``rewrite``; else a line of its own, below any shown in place (an empty
        ``line`` only ends that one)."""
        if self.tty and rewrite:
            line = line[:shutil.get_terminal_size().columns - 1]
            self.out.write("\r" + line.ljust(self.width))
            self.width = len(line)
        else:
            self.out.write(("\n" if self.width else "") + (line + "\n" if line else ""))
            self.width = 0
        self.out.flush()


def _enforced(kit: KitRun) -> dict[str, int]:
    """The failed checks of enforced properties so far (failures of the run), by property."""
    enforced = kit.ledger.enforced
    _, failed = kit.ledger.counts()
    return {pid: n for pid, n in failed.items() if n and (enforced is None or pid in enforced)}
