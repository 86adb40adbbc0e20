"""``waypost conformance consumer-matrix``: P17's crash matrix on its own, with its table."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from waypost.conformance.consumer_matrix import (
    DEFAULT_COMMAND,
    FLOWS,
    POINTS,
    consumer_matrix,
    reachable,
)
from waypost.conformance.targets import open_target


def _subset(text: str | None, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    if not text:
        return known
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [part for part in chosen if part not in known]
    if unknown or not chosen:
        raise ValueError(f"unknown {what} {unknown} (known: {', '.join(known)})")
    return chosen


def _run(args: argparse.Namespace) -> int:
    command = tuple(shlex.split(args.consumer_command)) if args.consumer_command \
        else DEFAULT_COMMAND
    try:
        flows = _subset(args.flows, FLOWS, "flows")
        points = _subset(args.points, POINTS, "fault points")
        token = args.admin_token or os.environ.get("WAYPOST_ADMIN_TOKEN")
        with open_target(args.target, token) as target:
            if not reachable(target.url):
                raise ValueError(f"cannot reach the target at {target.url}")
            matrix = consumer_matrix(target.url, target.admin_token, command=command,
                                     flows=flows, points=points)
    except (ValueError, RuntimeError) as exc:
        print(f"waypost conformance consumer-matrix: {exc}", file=sys.stderr)
        return 2
    print(matrix.table())
    if args.json is not None:
        args.json.write_text(json.dumps([c.__dict__ for c in matrix.cells], indent=2) + "\n")
    print(matrix.verdict())
    return 0 if matrix.green else 1


def add_command(kit_commands: Any) -> None:
    """Register ``consumer-matrix`` under ``waypost conformance``."""
    matrix: argparse.ArgumentParser = kit_commands.add_parser(
        "consumer-matrix", help="P17: the reference consumer killed at each of its fault points",
        description="For every consumer fault point × flow (sync, done, outbound): provision a "
                    "fresh space on the target, run the consumer as a real process with the "
                    "point armed (WAYPOST_CONSUMER_FAULT: the process ends there), check the "
                    "server's receipts against its local file, restart it (sync) and check that "
                    "no item was lost, no completed work is handed out again and every "
                    "outbound write exists once with its original request_id. Prints the table "
                    "(not reached / recovered / FAIL); exit 1 if any cell fails. Also part of "
                    "every 'waypost conformance' run (P17).")
    matrix.add_argument("--target", default="sqlite", help="sqlite (default), d1 or a base URL")
    matrix.add_argument("--admin-token", default=None,
                        help="admin token of a URL target (default: $WAYPOST_ADMIN_TOKEN)")
    matrix.add_argument("--flows", default=None, help=f"subset of {','.join(FLOWS)}")
    matrix.add_argument("--points", default=None, help="subset of the fault points, e.g. "
                                                       "sync.after_commit,ack.after_submit")
    matrix.add_argument("--consumer-command", default=None, metavar="COMMAND",
                        help="the consumer to check, as a shell-quoted command line speaking "
                             "the 'waypost consumer' commands and keeping the same local tables "
                             "(default: python -m waypost.consumer_cli)")
    matrix.add_argument("--json", type=Path, default=None, help="also write the cells as JSON")
    matrix.set_defaults(run=_run)
