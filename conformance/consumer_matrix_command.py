"""``waypost conformance consumer-matrix``: P17's crash matrix on its own, with its table."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from waypost.conformance.arguments import add_target, admin_token, subset
from waypost.conformance.consumer_matrix import (
    DEFAULT_COMMAND,
    FLOWS,
    POINTS,
    consumer_matrix,
    reachable,
)
from waypost.conformance.targets import open_target


def _run(args: argparse.Namespace) -> int:
    command = tuple(shlex.split(args.consumer_command)) if args.consumer_command \
        else DEFAULT_COMMAND
    try:
        flows = subset(args.flows, FLOWS, "flows")
        points = subset(args.points, POINTS, "fault points")
        with open_target(args.target, admin_token(args)) as target:
            if not reachable(target.url):
                raise ValueError(f"cannot reach the target at {target.url}")
            matrix = consumer_matrix(target.url, target.admin_token, command=command,
                                     flows=flows, points=points, power_loss=args.power_loss)
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
    add_target(matrix)
    matrix.add_argument("--flows", default=None, help=f"subset of {','.join(FLOWS)}")
    matrix.add_argument("--points", default=None, help="subset of the fault points, e.g. "
                                                       "sync.after_commit,ack.after_submit")
    matrix.add_argument("--consumer-command", default=None, metavar="COMMAND",
                        help="the consumer to check, as a shell-quoted command line speaking "
                             "the 'waypost consumer' commands and keeping the same local tables "
                             "(default: python -m waypost.consumer_command)")
    matrix.add_argument("--json", type=Path, default=None, help="also write the cells as JSON")
    matrix.add_argument("--power-loss", action="store_true",
                        help="each crash of the consumer is a power cut: its local file is "
                             "opened through the power-cut simulator (WAYPOST_CONSUMER_POWER_"
                             "CUTS), so what it wrote but did not sync is lost with the crash")
    matrix.set_defaults(run=_run)
