"""The ``waypost`` command: serve the reference, administer it, run the conformance kit."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from waypost import __version__
from waypost.bench.command import add_load_benches
from waypost.conformance.profiles import PROFILES
from waypost.hinting_parser import HintingParser
from waypost.serve_start import (
    port_taken,
    storage_arguments,
    storage_failures,
    storage_problem,
    storage_reachable,
    storage_settings,
    where,
)
from waypost.verify_command import add_verify

#: Shorter admin tokens get a warning when the dashboard is served (docs/dashboard.md).
MIN_ADMIN_TOKEN = 32


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from waypost.collector import tune_collector
    from waypost.reference.domain.sessions import SessionPolicy
    from waypost.reference.http.connection_limits import ConnectionLimits, limited_protocol
    from waypost.reference.server import Settings, build_app

    admin_token = os.environ.get("WAYPOST_ADMIN_TOKEN") or None
    if admin_token is None:
        print("waypost: WAYPOST_ADMIN_TOKEN is not set; the control plane (/admin/v1) will "
              "refuse every request", file=sys.stderr)
    elif args.dashboard and len(admin_token) < MIN_ADMIN_TOKEN:
        print(f"waypost: WAYPOST_ADMIN_TOKEN is shorter than {MIN_ADMIN_TOKEN} characters; the "
              "dashboard's sign-in is rate-limited but the control plane's bearer check is not, "
              "so use a high-entropy token (docs/dashboard.md)", file=sys.stderr)
    if (args.crash_mode == "exit" or args.simulate_power_cuts) and not args.test_hooks:
        print("waypost serve: --crash-mode exit and --simulate-power-cuts need --test-hooks",
              file=sys.stderr)
        return 2
    storage = storage_settings(args, "serve")
    if storage is None:
        return 2
    settings = Settings(Path(args.data_dir), admin_token, test_hooks=args.test_hooks,
                        synchronous=args.synchronous.upper(),
                        exit_on_crash=args.crash_mode == "exit",
                        simulate_power_cuts=args.simulate_power_cuts,
                        dashboard=args.dashboard,
                        sweep_seconds=args.sweep_seconds,
                        sessions=SessionPolicy(args.dashboard_idle * 1000,
                                               args.dashboard_lifetime * 1000), **storage)
    if not storage_reachable(settings, "serve"):
        return 1
    if (taken := port_taken(args.host, args.port)) is not None:
        print(f"waypost serve: {taken}", file=sys.stderr)
        return 1
    app = build_app(settings)
    print(f"waypost serve: {where(args.host, args.port, args.dashboard)}", file=sys.stderr)
    limits = ConnectionLimits(
        header_seconds=args.header_timeout, body_seconds=args.body_timeout,
        body_grace_seconds=args.body_grace, body_min_rate=args.body_min_rate,
        request_seconds=args.request_timeout, send_seconds=args.send_timeout,
        keep_alive_seconds=args.keep_alive_timeout, max_connections=args.max_connections)
    forwarded = args.forwarded_allow_ips.strip()
    tune_collector()
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                access_log=not args.no_access_log, timeout_keep_alive=args.keep_alive_timeout,
                ws="none",  # no WebSocket route: an upgrade request is answered as plain HTTP
                # X-Forwarded-For and -Proto count only from the proxies the operator names
                proxy_headers=bool(forwarded), forwarded_allow_ips=forwarded or None,
                http=limited_protocol(limits))
    return 0


def _gateway(args: argparse.Namespace) -> int:
    from waypost.gateway import GatewayError, prepare

    secret = os.environ.get("WAYPOST_GATEWAY_SECRET")
    if not secret:
        print("waypost gateway: set WAYPOST_GATEWAY_SECRET (the secret the server will send)",
              file=sys.stderr)
        return 2
    try:
        home, argv = prepare(Path(args.state), args.port)
    except GatewayError as error:
        print(f"waypost gateway: {error}", file=sys.stderr)
        return 1
    os.chdir(home)
    os.execvpe(argv[0], argv, {**os.environ, "GATEWAY_SECRET": secret})  # node takes over


def _gc(args: argparse.Namespace) -> int:
    import asyncio

    from waypost.reference.server import Settings, open_context
    from waypost.reference.service.blobs import sweep

    storage = storage_settings(args, "gc")
    if storage is None:
        return 2
    from waypost.reference.server import DATABASE

    if storage["storage"] == "sqlite" and not (Path(args.data_dir) / DATABASE).exists():
        print(f"waypost gc: {args.data_dir} holds no Waypost database ({DATABASE}); give the "
              "server's --data-dir (or --storage d1 --gateway URL for a D1 deployment)",
              file=sys.stderr)
        return 2

    async def clean() -> list[str]:
        async with open_context(Settings(Path(args.data_dir), **storage)) as ctx:
            return await sweep(ctx)

    try:
        cleaned = asyncio.run(clean())
    except storage_failures() as error:
        print(f"waypost gc: {storage_problem(error)}", file=sys.stderr)
        return 1
    print(f"waypost gc: cleaned {len(cleaned)} expired upload(s)")
    return 0


def _bootstrap(args: argparse.Namespace) -> int:
    from waypost.bootstrap import bootstrap

    token = args.admin_token or os.environ.get("WAYPOST_ADMIN_TOKEN")
    if not token:
        print("waypost admin bootstrap: pass --admin-token or set WAYPOST_ADMIN_TOKEN",
              file=sys.stderr)
        return 2
    return bootstrap(args.url, token, args.space_id, sys.stdout, sys.stderr)


def _bench_kit(args: argparse.Namespace) -> int:
    from waypost.bench.kit import bench_kit

    rtts = (0.0, args.rtt) if args.rtt else (0.0,)
    result = bench_kit(args.profile, args.seed, args.json, rtts, args.workers,
                       test_hooks=not args.without_hooks)
    return 1 if result["failed"] else 0


def _bench_publish(args: argparse.Namespace) -> int:
    from waypost.bench.publish import bench_publish
    from waypost.bench.publish_client import BenchError

    try:
        bench_publish(args.sizes, args.repeats, args.upload_mib, args.synchronous, args.json,
                      args.heavy_entries)
    except (BenchError, ValueError) as error:
        print(f"waypost bench publish: {error}", file=sys.stderr)
        return 1
    return 0


def _bench_d1(args: argparse.Namespace) -> int:
    from waypost.bench.d1 import bench_d1
    from waypost.gateway import GatewayError

    try:
        bench_d1(args.repeats, args.json)
    except (GatewayError, RuntimeError) as error:
        print(f"waypost bench d1: {error}", file=sys.stderr)
        return 1
    return 0


def _at_least_two(text: str) -> int:
    """A repeat count a median and a p90 can be taken of."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 2:
        raise argparse.ArgumentTypeError("at least 2 runs are needed for a median and a p90")
    return value


def _sizes(text: str) -> list[int]:
    """``100,1000,10000`` → positive entry counts."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("sizes must be positive integers")
    return sizes


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"not a number of seconds from 0 to 86400: {text!r}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return value


#: Commands whose modules are heavy to import (the kit, the consumer, the MCP SDK): each is
#: registered by its module only when it is the command being run; otherwise it is listed by
#: name and help alone, so that ``waypost --help`` and every other command start at once.
LAZY_COMMANDS = {
    "conformance": ("waypost.conformance.kit_command",
                    "run the conformance kit (P01–P18) against a target"),
    "consumer": ("waypost.consumer_command",
                 "the reference consumer: a crash-safe local mailbox on SQLite"),
    "mcp": ("waypost.mcp_command",
            "serve the reference consumer as MCP tools for an agent (stdio or HTTP)"),
}


def parser(command: str | None = None, words: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command-line interface (``waypost --help``): every command in full, or, given the
    ``command`` about to run, that one in full and the heavy others (:data:`LAZY_COMMANDS`)
    by name and help only; ``words``, the whole command line, lets a lazy command load only
    the sub-command it runs."""
    top = HintingParser(
        prog="waypost",
        description="Waypost/1 reference server and conformance kit.")
    top.add_argument("--version", action="version", version=f"waypost {__version__}")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve", help="serve the reference (SQLite + files in --data-dir, or D1 + R2)",
        description="Serve the reference server. The data directory (SQLite database, objects, "
                    "cursor key) is created on first start. The control plane needs "
                    "WAYPOST_ADMIN_TOKEN in the environment. With --storage d1, metadata and "
                    "blobs live in D1 and R2 behind the gateway Worker at --gateway (its secret "
                    "in WAYPOST_GATEWAY_SECRET); only the cursor key stays in --data-dir.")
    serve.add_argument("--data-dir", default="./waypost-data",
                       help="where the database and objects live (default: ./waypost-data)")
    storage_arguments(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8787, help="port to bind (default: 8787)")
    serve.add_argument("--test-hooks", action="store_true",
                       help="enable /_test/… hooks for conformance runs (never in production)")
    serve.add_argument("--crash-mode", choices=["abandon", "exit"], default="abandon",
                       help="what a 'crash' fault does: abandon the request (default) or end "
                            "the process on the spot (os._exit), for real-crash runs")
    serve.add_argument("--simulate-power-cuts", action="store_true",
                       help="with --test-hooks: nothing SQLite writes reaches the disk until it "
                            "is synced, and the next start undoes the blob files and directory "
                            "entries not synced, so killing the process loses what a power cut "
                            "would (fault injection for test deployments; docs/spec.md)")
    serve.add_argument("--log-level", default="info",
                       choices=["critical", "error", "warning", "info", "debug"],
                       help="uvicorn log level (default: info)")
    serve.add_argument("--synchronous", choices=["full", "normal"], default="full",
                       help="SQLite durability: full (default) survives power loss; normal "
                            "survives process crashes only (for throwaway test targets)")
    serve.add_argument("--no-access-log", action="store_true",
                       help="do not log every request (the conformance kit's default)")
    serve.add_argument("--sweep-seconds", type=_seconds, default=30.0, metavar="SECONDS",
                       help="how often expired uploads are cleaned up (default: 30; 0 turns "
                            "the sweeper off)")
    serve.add_argument("--dashboard", action="store_true",
                       help="serve the operator dashboard under /dashboard/ (sign in with "
                            "WAYPOST_ADMIN_TOKEN; off by default)")
    serve.add_argument("--dashboard-idle", type=_positive, default=1800, metavar="SECONDS",
                       help="a dashboard session ends this long after its last use "
                            "(a use is recorded at most once a minute, or every half of "
                            "this when shorter; default: 1800)")
    serve.add_argument("--dashboard-lifetime", type=_positive, default=43200, metavar="SECONDS",
                       help="and at the latest this long after sign-in (default: 43200)")
    _limit_arguments(serve)
    serve.set_defaults(run=_serve)

    gateway = commands.add_parser(
        "gateway", help="run the D1/R2 gateway Worker locally on workerd (miniflare)",
        description="Install (npm ci, once per lockfile, in $WAYPOST_CACHE, else "
                    "$XDG_CACHE_HOME/waypost, else ~/.cache/waypost) and run the gateway "
                    "Worker on workerd through miniflare, on loopback, with D1 and R2 state "
                    "persisted in --state. Prints one JSON line {\"url\": …} once it listens; "
                    "stops on Ctrl-C or SIGTERM. Needs Node.js 20+ and npm, and the shared "
                    "secret in WAYPOST_GATEWAY_SECRET.")
    gateway.add_argument("--state", default="./waypost-d1",
                         help="where D1 and R2 keep their data (default: ./waypost-d1)")
    gateway.add_argument("--port", type=int, default=0,
                         help="port on 127.0.0.1 (default: 0, any free port)")
    gateway.set_defaults(run=_gateway)

    gc = commands.add_parser(
        "gc", help="clean expired, unsealed uploads (SQLite data directory, or D1 and R2)",
        description="Claim expired uploads that were never sealed, remove their stored bytes "
                    "and mark them cleaned (a running server does the same every 30 s). A "
                    "claimed upload can no longer be sealed; a sealed one is never touched.")
    gc.add_argument("--data-dir", default="./waypost-data",
                    help="the server's data directory (default: ./waypost-data)")
    storage_arguments(gc)
    gc.set_defaults(run=_gc)
    add_verify(commands)

    admin = commands.add_parser("admin", help="control-plane helpers",
                                description="Control-plane helpers over HTTP.")
    admin_commands = admin.add_subparsers(dest="admin_command", required=True, metavar="COMMAND")
    boot = admin_commands.add_parser(
        "bootstrap", help="create a demo space, actors, consumers and tokens, and print them",
        description="Create a demo space with two agents (alice, bob), an inbox consumer and a "
                    "token each, and a memory collection 'notes' that alice publishes and bob "
                    "reads, through the control plane of a running server, and print the "
                    "tokens as shell exports (eval \"$(waypost admin bootstrap)\") with a curl "
                    "command to send the first message. Running it again creates nothing new "
                    "and prints no tokens: secrets are shown only the first time.")
    boot.add_argument("--url", default="http://127.0.0.1:8787",
                      help="server base URL (default: http://127.0.0.1:8787)")
    boot.add_argument("--admin-token", default=None,
                      help="admin token (default: $WAYPOST_ADMIN_TOKEN)")
    boot.add_argument("--space-id", default="demo", help="id of the demo space (default: demo)")
    boot.set_defaults(run=_bootstrap)

    for name, (module, help_text) in LAZY_COMMANDS.items():
        if command is None or command == name:
            importlib.import_module(module).add_commands(commands, words)
        else:
            commands.add_parser(name, help=help_text)

    bench = commands.add_parser("bench", help="benchmarks (JSON with the machine and a baseline)",
                                description="Benchmarks. Each prints JSON: the machine, a "
                                            "baseline measured in the same run, the figures.")
    benches = bench.add_subparsers(dest="bench_command", required=True, metavar="COMMAND")
    kit = benches.add_parser("kit", help="the kit's steps and checks per second against the "
                                         "sqlite target, near and (--rtt) far",
                             description="Run the conformance kit against the embedded "
                                         "reference over real HTTP; report steps and checks "
                                         "per second, total time, requests per step and where "
                                         "the time goes, with describe round trips per second "
                                         "on the same server as a baseline. With --rtt MS, a "
                                         "second run puts the target MS milliseconds away "
                                         "(a latency proxy) with the workers the kit picks "
                                         "for that distance.")
    kit.add_argument("--profile", default="ci", choices=sorted(PROFILES),
                     help="kit profile (default: ci)")
    kit.add_argument("--seed", type=int, default=1, help="seed (default: 1)")
    kit.add_argument("--rtt", type=float, default=0, metavar="MS",
                     help="also run the kit with the target this many milliseconds away "
                          "(round trip, half each way)")
    kit.add_argument("--workers", type=int, default=None, metavar="N",
                     help="the kit's workers (default: as the kit picks for the distance)")
    kit.add_argument("--without-hooks", action="store_true",
                     help="start the reference without test hooks, as a deployment runs (the "
                          "kit's fault proxy then injects the faults)")
    kit.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    kit.set_defaults(run=_bench_kit)

    d1 = benches.add_parser(
        "d1", help="D1 round trips and time per operation, beside the SQLite adapter",
        description="Start the gateway Worker on local workerd (npm ci on first use; needs "
                    "Node.js 20+) and measure, with the reference in-process on D1 + R2 and "
                    "then on SQLite + files: for message.send, a feed read, an ACK, a blob "
                    "upload and a one-entry memory.publish, the median and p90 milliseconds of "
                    "--repeats runs on each adapter, and on D1 the batches each operation sent "
                    "(plans, i.e. atomic business operations, and reads). The baseline in the "
                    "same run is one empty D1 batch round trip. Prints JSON on stdout and a "
                    "table on stderr.")
    d1.add_argument("--repeats", type=_at_least_two, default=30,
                    help="runs per operation, at least 2 (default: 30)")
    d1.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    d1.set_defaults(run=_bench_d1)

    publish = benches.add_parser(
        "publish", help="one-entry delta publish latency as a collection grows, and a streamed "
                        "upload with the server's peak memory",
        description="Start the embedded reference (SQLite + files in a temporary directory) as "
                    "a child process and measure over real HTTP: (1) for each size, fill a "
                    "collection with that many entries (deltas of at most the published "
                    "inline_items_per_publish), then time --repeats one-entry delta publishes, "
                    "each moving one existing entry to a new path so the size stays fixed "
                    "(median, p90 and growth with size); (2) one upload of --upload-mib MiB "
                    "(blob.prepare, the content streamed in 1 MiB chunks, blob.commit) with "
                    "MiB/s and the server process's peak resident memory (VmHWM) before and "
                    "after; (3) as a baseline in the same run, GET /v1/describe round trips "
                    "per second and a one-entry delta publish on an empty collection. Prints "
                    "JSON on stdout and a short summary on stderr; exits 1 if the server "
                    "answers anything unexpected, with the request and response.")
    publish.add_argument("--sizes", type=_sizes, default=[100, 1_000, 10_000],
                         help="comma-separated collection sizes in entries, each at most the "
                              "server's memory_entries_per_revision (default: 100,1000,10000)")
    publish.add_argument("--repeats", type=_positive, default=20,
                         help="timed publishes per size and on empty collections (default: 20)")
    publish.add_argument("--upload-mib", type=_positive, default=64,
                         help="upload size in MiB, at most the server's upload_bytes "
                              "(default: 64)")
    publish.add_argument("--synchronous", choices=["normal", "full"], default="normal",
                         help="SQLite durability of the server started (default: normal, as "
                              "the kit's sqlite target)")
    publish.add_argument("--heavy-entries", type=int, default=2_000,
                         help="5 KB entries of the heavy collection (default: 2000; 0: skip it)")
    publish.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    publish.set_defaults(run=_bench_publish)
    add_load_benches(benches)
    return top


def _limit_arguments(serve: argparse.ArgumentParser) -> None:
    """Connection limits (docs/spec.md "Connection limits"): past them a client is cut off."""
    limits = serve.add_argument_group(
        "connection limits", "a request read too slowly is answered 408 and its connection "
        "closed; the arithmetic of the defaults is in docs/spec.md, \"Connection limits\"")
    limits.add_argument("--header-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="a request head must be complete this long after its connection "
                             "or its first byte (default: 10)")
    limits.add_argument("--body-grace", type=float, default=5.0, metavar="SECONDS",
                        help="a request body may be slow this long after its head; then every "
                             "window of this length must bring --body-min-rate (default: 5)")
    limits.add_argument("--body-min-rate", type=int, default=500, metavar="BYTES_PER_SECOND",
                        help="the slowest a request body may come after its grace, 0 for no "
                             "minimum (default: 500)")
    limits.add_argument("--body-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="the longest a request body may stall between chunks "
                             "(default: 30)")
    limits.add_argument("--request-timeout", type=float, default=300.0, metavar="SECONDS",
                        help="a request's head and body must be complete this long after its "
                             "first byte (default: 300)")
    limits.add_argument("--send-timeout", type=float, default=15.0, metavar="SECONDS",
                        help="an answer the client takes nothing of for this long is "
                             "abandoned and its connection closed (default: 15)")
    limits.add_argument("--keep-alive-timeout", type=float, default=5.0, metavar="SECONDS",
                        help="an idle keep-alive connection closes after this (default: 5)")
    limits.add_argument("--max-connections", type=int, default=1000,
                        help="past this many open connections, a new one is answered 503 "
                             "and closed (default: 1000)")
    serve.add_argument("--forwarded-allow-ips", default="", metavar="ADDRESSES",
                       help="comma-separated addresses of proxies whose X-Forwarded-For and "
                            "X-Forwarded-Proto are trusted, '*' for any; by default none, so "
                            "the peer's own address is what the logs and the dashboard's "
                            "sign-in limit use")


def _command_in(argv: Sequence[str]) -> str:
    """The command word of ``argv`` (its first argument that is not an option), or ``""``."""
    return next((word for word in argv if not word.startswith("-")), "")


#: The extra that installs each package the base install lacks (pyproject.toml).
EXTRA_OF = {"hypothesis": "kit", "schemathesis": "kit", "mcp": "mcp", "mcp_types": "mcp",
            "pydantic": "mcp"}
#: Each extra as a user knows it (never an internal module's name).
KNOWN_AS = {"kit": "the conformance kit (Hypothesis, Schemathesis)", "mcp": "the MCP SDK"}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``waypost`` console script."""
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parser(_command_in(words), words).parse_args(words)
        code: int = args.run(args)
    except ModuleNotFoundError as error:
        extra = EXTRA_OF.get((error.name or "").split(".")[0])
        if extra is None:
            raise
        print(f"waypost {' '.join(_words_of(words))}: needs {KNOWN_AS[extra]}, which the base "
              f"install leaves out: in the project's checkout, pip install '.[{extra}]'",
              file=sys.stderr)
        return 2
    return code


def _words_of(argv: Sequence[str]) -> list[str]:
    """The command words of ``argv`` (up to its first option), for a message."""
    words: list[str] = []
    for word in argv:
        if word.startswith("-"):
            break
        words.append(word)
    return words[:2]


if __name__ == "__main__":
    raise SystemExit(main())
