"""The ``waypost`` command: serve the reference, administer it, run the conformance kit."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from waypost.reference.server import Settings, build_app

    admin_token = os.environ.get("WAYPOST_ADMIN_TOKEN") or None
    if admin_token is None:
        print("waypost: WAYPOST_ADMIN_TOKEN is not set; the control plane (/admin/v1) will "
              "refuse every request", file=sys.stderr)
    app = build_app(Settings(Path(args.data_dir), admin_token, test_hooks=args.test_hooks,
                             synchronous=args.synchronous.upper()))
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                access_log=not args.no_access_log)
    return 0


def _gc(args: argparse.Namespace) -> int:
    import asyncio

    from waypost.reference.server import Settings, open_context
    from waypost.reference.service.blobs import sweep

    async def clean() -> list[str]:
        async with open_context(Settings(Path(args.data_dir))) as ctx:
            return await sweep(ctx)

    cleaned = asyncio.run(clean())
    print(f"waypost gc: cleaned {len(cleaned)} expired upload(s)")
    return 0


def _bootstrap(args: argparse.Namespace) -> int:
    from waypost.reference.bootstrap import bootstrap

    token = args.admin_token or os.environ.get("WAYPOST_ADMIN_TOKEN")
    if not token:
        print("waypost admin bootstrap: pass --admin-token or set WAYPOST_ADMIN_TOKEN",
              file=sys.stderr)
        return 2
    return bootstrap(args.url, token, args.space_id, sys.stdout)


def _bench_kit(args: argparse.Namespace) -> int:
    from waypost.conformance.bench import bench_kit

    result = bench_kit(args.profile, args.seed, args.json)
    return 1 if result["failed"] else 0


def parser() -> argparse.ArgumentParser:
    """The full command-line interface (``waypost --help``)."""
    top = argparse.ArgumentParser(
        prog="waypost",
        description="Waypost/1 reference server and conformance kit.")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve", help="serve the embedded reference (SQLite + files in --data-dir)",
        description="Serve the reference server. The data directory (SQLite database, objects, "
                    "cursor key) is created on first start. The control plane needs "
                    "WAYPOST_ADMIN_TOKEN in the environment.")
    serve.add_argument("--data-dir", default="./waypost-data",
                       help="where the database and objects live (default: ./waypost-data)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8787, help="port to bind (default: 8787)")
    serve.add_argument("--test-hooks", action="store_true",
                       help="enable /_test/… hooks for conformance runs (never in production)")
    serve.add_argument("--log-level", default="info",
                       choices=["critical", "error", "warning", "info", "debug"],
                       help="uvicorn log level (default: info)")
    serve.add_argument("--synchronous", choices=["full", "normal"], default="full",
                       help="SQLite durability: full (default) survives power loss; normal "
                            "survives process crashes only (for throwaway test targets)")
    serve.add_argument("--no-access-log", action="store_true",
                       help="do not log every request (the conformance kit's default)")
    serve.set_defaults(run=_serve)

    gc = commands.add_parser(
        "gc", help="clean expired, unsealed uploads in a data directory",
        description="Claim expired uploads that were never sealed, remove their stored bytes "
                    "and mark them cleaned (a running server does the same every 30 s). A "
                    "claimed upload can no longer be sealed; a sealed one is never touched.")
    gc.add_argument("--data-dir", default="./waypost-data",
                    help="the server's data directory (default: ./waypost-data)")
    gc.set_defaults(run=_gc)

    admin = commands.add_parser("admin", help="control-plane helpers",
                                description="Control-plane helpers over HTTP.")
    admin_commands = admin.add_subparsers(dest="admin_command", required=True, metavar="COMMAND")
    boot = admin_commands.add_parser(
        "bootstrap", help="create a demo space, actors, consumers and tokens, and print them",
        description="Create a demo space with two agents (alice, bob), an inbox consumer and a "
                    "token each, through the control plane of a running server, and print the "
                    "tokens as shell exports (eval \"$(waypost admin bootstrap)\") with a curl "
                    "command to send the first message. Running it again creates nothing new "
                    "and prints no tokens: secrets are shown only the first time.")
    boot.add_argument("--url", default="http://127.0.0.1:8787",
                      help="server base URL (default: http://127.0.0.1:8787)")
    boot.add_argument("--admin-token", default=None,
                      help="admin token (default: $WAYPOST_ADMIN_TOKEN)")
    boot.add_argument("--space-id", default="demo", help="id of the demo space (default: demo)")
    boot.set_defaults(run=_bootstrap)

    from waypost.conformance.cli import add_commands

    add_commands(commands)

    bench = commands.add_parser("bench", help="benchmarks (JSON with the machine and a baseline)",
                                description="Benchmarks. Each prints JSON: the machine, a "
                                            "baseline measured in the same run, the figures.")
    benches = bench.add_subparsers(dest="bench_command", required=True, metavar="COMMAND")
    kit = benches.add_parser("kit", help="state-machine steps per second against the sqlite "
                                         "target, and where the time goes",
                             description="Run the conformance kit once against the embedded "
                                         "reference over real HTTP; report steps per second, "
                                         "requests per step, time in HTTP vs. model and "
                                         "Hypothesis, and describe round trips per second on "
                                         "the same server as a baseline.")
    kit.add_argument("--profile", default="ci", choices=["quick", "ci", "thorough"],
                     help="kit profile (default: ci)")
    kit.add_argument("--seed", type=int, default=1, help="seed (default: 1)")
    kit.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    kit.set_defaults(run=_bench_kit)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``waypost`` console script."""
    args = parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
