"""The kit for a deployment without a reachable admin API (``--fixtures FILE``): what such a
run leaves out and says it needs, and ``waypost conformance fixtures``, which provisions a
fixtures file through the admin API of a deployment that has one (the format:
``properties/commands/provisioned.py`` and docs/porting.md)."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from pathlib import Path
from typing import Any

import httpx

from waypost.conformance.arguments import add_target, admin_token
from waypost.conformance.targets import check_target
from waypost.properties.commands.control import setup
from waypost.properties.commands.provisioned import dump
from waypost.properties.commands.world import World
from waypost.properties.model.fixture_sets import FORMAT
from waypost.properties.rules import MachineRule
from waypost.properties.verdicts.violations import Ledger
from waypost.properties.wire.bounds import bounded_client
from waypost.properties.wire.http import Session

ADMIN = "the admin API"
HOOKS = "the test hooks, which need the admin token"
#: What a check needs that a run through fixtures does not have, by check name.
NEEDS: dict[str, str] = {
    **{f"command {name}": ADMIN for name in (
        "setup", "provision", "rotate", "regrant", "revoke", "disable", "change_view",
        "ack_limits")},
    "command advance_clock": HOOKS,
    "command restart": HOOKS,
    "consumer matrix": f"{ADMIN} (the consumer matrix provisions its own spaces)",
    "limit recipients": f"{ADMIN} (N + 1 actors)",
}
#: Rules a run through fixtures leaves out: each step of theirs goes through the admin API.
ADMIN_RULES = frozenset({"provision", "change_authority"})


def fixture_rules(rules: tuple[MachineRule, ...]) -> tuple[MachineRule, ...]:
    """The rules a run through fixtures draws from."""
    return tuple(rule for rule in rules if rule.name not in ADMIN_RULES)


def not_run(outcomes: list[Any]) -> None:
    """A property no check of a run through fixtures exercised is ``not run``, with what its
    checks need; one that passed without some of its checks says which did not run."""
    for outcome in outcomes:
        left_out = [name.removeprefix("command ") for name in outcome.prop.checked_by
                    if name in NEEDS]
        wanted = sorted({NEEDS[name] for name in outcome.prop.checked_by if name in NEEDS})
        if outcome.result == "not run":
            outcome.message = "needs " + "; ".join(wanted or ["another fixture set"])
        elif outcome.result == "pass" and left_out:
            outcome.message = f"partly: {', '.join(left_out)} not run (needs {'; '.join(wanted)})"


def provision(client: httpx.Client, admin: str, sets: int, prefix: str) -> dict[str, Any]:
    """A fixtures file of ``sets`` fresh sets, provisioned through the admin API as each
    example's setup would (spaces ``<prefix>-<n>-A`` and ``-B``)."""
    check_target(client, admin)
    session = Session(client, admin, record=False)
    made = []
    for n in range(1, sets + 1):
        world = World(session, f"{prefix}-{n}-", Ledger())
        world.perform(setup, {})
        made.append(dump(world, f"{prefix}-{n}"))
    return {"format": FORMAT, "sets": made}


def add_command(kit_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``waypost conformance fixtures``."""
    command = kit_commands.add_parser(
        "fixtures", help="provision a fixtures file (for a run with --fixtures) through the "
                         "admin API",
        description="Provision SETS fresh fixture sets (each: two spaces with the kit's actors, "
                    "collections, consumers and tokens) through the admin API of a URL target "
                    "and write them as a fixtures file (it holds the tokens' secrets: keep it "
                    "private). A later `waypost conformance --fixtures FILE` runs the kit "
                    "without the admin API; each example and limit check uses one set once.")
    add_target(command, "the base URL of the deployment")
    command.add_argument("--sets", type=int, default=30,
                         help="how many sets (default 30: a quick run takes 13 for its limit "
                              "checks, one per example and one spare)")
    command.add_argument("--output", type=Path, required=True, help="the fixtures file to write")
    command.set_defaults(run=_fixtures)


def _fixtures(args: argparse.Namespace) -> int:
    token = admin_token(args)
    if not args.target.startswith(("http://", "https://")) or not token or args.sets < 1:
        print("waypost conformance fixtures: needs a URL --target, its --admin-token (or "
              "WAYPOST_ADMIN_TOKEN) and --sets of at least 1", file=sys.stderr)
        return 2
    try:
        with bounded_client(args.target.rstrip("/")) as client:
            data = provision(client, token, args.sets, f"fx{secrets.token_hex(3)}")
    except (RuntimeError, httpx.HTTPError) as exc:
        print(f"waypost conformance fixtures: {exc}", file=sys.stderr)
        return 2
    args.output.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.sets} fixture sets to {args.output}", file=sys.stderr)
    return 0
