"""``waypost conformance``: its command line. The runs are ``kit_run``'s (and each lazy
sub-command's module's), imported only when one runs: this module loads no HTTP client and no
Hypothesis."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from pathlib import Path

from waypost.conformance.arguments import add_target, later
from waypost.conformance.compare_command import add_command as add_compare
from waypost.conformance.profiles import PROFILES
from waypost.properties.bound_values import SECONDS

#: Where the kit's own runs are.
RUN = "waypost.conformance.kit_run"
#: Sub-commands whose modules are heavy to import: module and help (their modules register
#: them, with the same help, when they are the one being run).
LAZY = {
    "consumer-matrix": ("waypost.conformance.consumer_matrix_command",
                        "P17: the reference consumer killed at each of its fault points"),
    "hostile": ("waypost.conformance.hostile", "only the hostile-input checks"),
    "load": ("waypost.conformance.load_command",
             "concurrent clients, then every view re-read and the history checked"),
    "fixtures": ("waypost.conformance.fixtures",
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
                    "hostile-input tables, and last the requirement table's summary line; exit "
                    "status 1 on any failure. Failures are written as replay files.")
    add_target(kit)
    kit.add_argument("--profile", choices=sorted(PROFILES), default="ci",
                     help="how much to explore: quick (no fuzz phase), ci (default; its fuzz "
                          "phase runs fuzz's small dev budget), thorough (fuzz's thorough "
                          "budget, 10,000+ requests)")
    kit.add_argument("--seed", type=int, default=None, help="seed (default: random, printed)")
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
    """``--timeout``: the deadline of each of the kit's calls (properties/bounds.py)."""
    parser.add_argument("--timeout", type=float, default=SECONDS, metavar="SECONDS",
                        help="the deadline of each call to the target: connecting, sending and "
                             "the whole answer (a long poll adds its wait); an answer that "
                             f"misses it fails the call's property (default: {SECONDS:g})")
