"""``waypost verify``: read every stored object back whole and hold it to the size and SHA-256
it was sealed with (sealed blobs, revision manifests), on the SQLite data directory or D1 and
R2. Nothing is changed; a line per damaged or missing object, progress on stderr, exit 1 if
any."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from waypost.serve_start import (
    storage_arguments,
    storage_failures,
    storage_problem,
    storage_settings,
)

#: Seconds between two progress lines on a long verification.
PROGRESS_SECONDS = 2.0


def add_verify(commands: Any) -> None:
    """Register ``waypost verify`` on the command line's subcommands."""
    verify = commands.add_parser(
        "verify", help="check every stored object against the SHA-256 it was sealed with",
        description="Read every sealed blob and every committed revision manifest back whole "
                    "from the blob store and compare its size and SHA-256 with what the "
                    "database recorded when it was sealed (after a power cut, a disk error, "
                    "or a restore from backup). Changes nothing. Prints one line per damaged "
                    "or missing object and a summary; exit status 1 if there is any, 0 if all "
                    "are whole.")
    verify.add_argument("--data-dir", default="./waypost-data",
                        help="the server's data directory (default: ./waypost-data)")
    storage_arguments(verify)
    verify.set_defaults(run=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    import asyncio

    from waypost.reference.server import DATABASE, Settings, open_context
    from waypost.reference.service.verify import Verified, verify

    storage = storage_settings(args, "verify")
    if storage is None:
        return 2
    if storage["storage"] == "sqlite" and not (Path(args.data_dir) / DATABASE).exists():
        print(f"waypost verify: {args.data_dir} holds no Waypost database ({DATABASE}); give "
              "the server's --data-dir (or --storage d1 --gateway URL)", file=sys.stderr)
        return 2
    shown = [time.monotonic()]

    def progress(found: Verified) -> None:
        if time.monotonic() - shown[0] >= PROGRESS_SECONDS:
            shown[0] = time.monotonic()
            print(f"waypost verify: {found.checked} objects checked…", file=sys.stderr)

    async def check() -> Verified:
        async with open_context(Settings(Path(args.data_dir), sweep_seconds=0,
                                         **storage)) as ctx:
            return await verify(ctx, progress)

    try:
        found = asyncio.run(check())
    except storage_failures() as error:
        print(f"waypost verify: {storage_problem(error)}", file=sys.stderr)
        return 1
    for kind, lines in (("damaged", found.damaged), ("missing", found.missing)):
        for line in lines:
            print(f"{kind}: {line}")
    print(f"waypost verify: {found.checked} objects checked, {len(found.damaged)} damaged, "
          f"{len(found.missing)} missing")
    return 1 if found.damaged or found.missing else 0
