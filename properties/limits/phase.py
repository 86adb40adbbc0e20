"""The limit phase of a run: every limit the target's ``/v1/describe`` publishes is checked at
its boundary (protocol.md §11), once per run, in a fresh example of its own: input of exactly
the limit, otherwise valid and sent with a token that holds the scope, is accepted and fully
applied; one more is refused (``RESOURCE_LIMIT`` naming the limit) and nothing moves. After each
step every view and revision is re-read against the model.

Each check is one command, ``check_limit {limit, value}``, so a failure's replay file reruns
it; the checks themselves live in ``messages``, ``memory`` and ``manifest``, made of the
parts of ``checking``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from waypost.properties.commands.control import published_limits, setup
from waypost.properties.commands.provisioned import setup_args
from waypost.properties.commands.world import World
from waypost.properties.limits import manifest, memory, messages
from waypost.properties.limits.checking import Limit
from waypost.properties.model.fixture_sets import FixturesExhausted
from waypost.properties.verdicts.violations import Ledger
from waypost.properties.wire.http import NeedsAdmin, Session


def unreachable(name: str, value: int, published: dict[str, int]) -> str | None:
    """Why a published limit cannot be reached through the others, if it cannot: a manifest
    input arrives as an uploaded blob, so one of N + 1 bytes needs ``upload_bytes`` > N."""
    upload = published.get("upload_bytes")
    if name == "manifest_input_bytes" and upload is not None and upload <= value:
        return (f"a manifest of N+1 bytes cannot be uploaded: upload_bytes = {upload}, so "
                "this limit is never the one that refuses")
    if name == "revision_manifest_bytes":
        return manifest.unreachable_manifest(value, published)
    return None


#: Published limits that bound no input (nothing to send N + 1 of), with why.
NOT_INPUT = {"upload_expiry_seconds": "a duration, not an input bound (P15's expiry checks "
                                      "move the clock instead)"}


def registry() -> dict[str, Limit]:
    """Every limit the kit knows how to check, in report order."""
    return {limit.name: limit for limit in (*messages.LIMITS, *memory.LIMITS,
                                            *manifest.LIMITS)}


def check_limit(world: World, limit: str, value: int) -> None:
    """The command: the boundary check of ``limit`` at its published ``value``."""
    registry()[limit].check(world, value)


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


Failed = Callable[[BaseException, "World"], str]  # writes a replay file, returns its path


def limit_phase(session: Session, prefix: str, ledger: Ledger, selected: set[str] | None,
                on_failure: Failed, light: bool = False) -> list[LimitOutcome]:
    """Check every limit the target publishes, each in a fresh example of its own; a limit
    the kit knows and the target does not publish is reported, never guessed. ``light`` (the
    quick profile) leaves the heavy checks to the longer profiles and says so."""
    published = published_limits(session.describe().json)
    known = registry()
    names = [*known, *NOT_INPUT, *sorted(set(published) - set(known) - set(NOT_INPUT))]
    rows = []
    for n, name in enumerate(names):
        limit = known.get(name)
        row = LimitOutcome(name, published.get(name), limit.properties if limit else (), "", "",
                           "not checked", NOT_INPUT.get(name, "the kit has no check for it"))
        if name not in published:
            row.result, row.note = "not published", "describe publishes no value for it"
        elif limit is not None and selected is not None and not selected & set(
                limit.properties):
            row.result, row.note = "skipped", ""
        elif (why := unreachable(name, published[name], published)) is not None:
            row.note = why
        elif limit is not None and limit.heavy and light:
            row.note = (f"{limit.what}: the ci and thorough profiles check it (it moves about "
                        f"{published[name] * 8 // (1 << 20)} MiB)")
        elif limit is not None:
            row.note = limit.what
            world = World(session, f"{prefix}-l{n}-", ledger)
            _check(world, row, on_failure)
        rows.append(row)
    return rows


def _check(world: World, row: LimitOutcome, on_failure: Failed) -> None:
    """Run one limit's check; the row says what each step showed."""
    assert row.value is not None
    try:
        world.perform(setup, setup_args(world))
        world.perform(check_limit, {"limit": row.name, "value": row.value})
    except (NeedsAdmin, FixturesExhausted) as missing:  # a run through fixtures
        row.result, row.note = "not run", str(missing)
        return
    except Exception as error:  # a violation, or an error of the kit or the server
        row.replay = on_failure(error, world)
        row.note = str(error)[:300]
        row.result = "fail"
    marks = {True: "accepted", False: "FAIL", None: "not reached"}
    row.at_limit = marks[world.boundary.get("at")]
    row.over_limit = {**marks, True: "refused"}[world.boundary.get("over")]
    if row.result != "fail":
        row.result = "pass" if all(world.boundary.get(s) for s in ("at", "over")) else "xfail"
