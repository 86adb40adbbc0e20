"""The command lines of ``waypost bench send`` (:mod:`waypost.bench.send`), ``feed|blobs``
(:mod:`waypost.bench.load`) and ``slow-clients`` (:mod:`waypost.bench.slow`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _counts(text: str) -> list[int]:
    try:
        values = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError("a comma-separated list of integers") from None
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError("each value must be at least 1")
    return values


def _print(result: dict[str, Any], out: Path | None) -> int:
    text = json.dumps(result, indent=2)
    if out is not None:
        out.write_text(text + "\n")
    print(text)
    return 0


def _send(args: argparse.Namespace) -> int:
    from waypost.bench.drive import client_name
    from waypost.bench.send import bench_send

    if args.repeats < 1 or args.seconds < 1:
        print("waypost bench send: --repeats and --seconds must be at least 1", file=sys.stderr)
        return 2
    if args.client == "wrk" and client_name() != "wrk":
        print("waypost bench send: wrk is not installed (Debian: apt-get install wrk)",
              file=sys.stderr)
        return 2
    client = "python" if args.client == "python" else client_name()
    print(f"load from {client}" + ("" if client == "wrk" else
          " (install wrk for a client that is not the bottleneck: apt-get install wrk)"),
          file=sys.stderr)
    result = bench_send(args.clients, args.seconds, floor=args.floor, repeats=args.repeats,
                        client=client, progress=lambda text: print(text, file=sys.stderr))
    for level in result["levels"]:
        ratios = level["ratios"]
        for name in ("waypost", "floor"):
            if name in level:
                row = level[name]
                cpu = row.get("cpu_ms_per_send", {}).get("total")
                io = row.get("per_send", {})
                print(f"{name} x{level['connections']}: {row['per_second']} sends/s, {cpu} ms "
                      f"CPU, {io.get('write_call_kib')} KiB in {io.get('write_calls')} write "
                      "calls per send", file=sys.stderr)
        if ratios:
            each = ", ".join(f"{value}x" for value in ratios["cpu_per_send_each_repeat"])
            print(f"  reference / floor: CPU {ratios['cpu_per_send']}x ({each} by repeat), "
                  f"write KiB {ratios['write_call_kib_per_send']}x, sends/s "
                  f"{ratios['sends_per_second']}x", file=sys.stderr)
    schema = result.get("schema_floor")
    if schema:
        cpu = schema["cpu_ms_per_send"]
        print(f"writer CPU per send without a server: one row {cpu['one_row']} ms, the send's "
              f"rows {cpu['rows']} ms, its plan {cpu['plan']} ms; at one connection this "
              f"schema allows no less than {schema['lowest_cpu_ratio_at_1']}x the floor",
              file=sys.stderr)
    if args.elsewhere:
        from waypost.bench.send import bench_elsewhere

        result["elsewhere"] = bench_elsewhere(lambda text: print(text, file=sys.stderr))
        result["targets"].update(result["elsewhere"]["targets"])
    for name, verdict in result["targets"].items():
        print(f"target {name}: {verdict}", file=sys.stderr)
    return _print(result, args.json)


def _feed(args: argparse.Namespace) -> int:
    from waypost.bench.load import bench_feed

    return _print(bench_feed(args.sizes, args.repeats), args.json)


def _blobs(args: argparse.Namespace) -> int:
    from waypost.bench.load import bench_blobs

    return _print(bench_blobs(args.downloaders, args.blob_mib, args.pause), args.json)


def _slow_clients(args: argparse.Namespace) -> int:
    from waypost.bench.slow import bench_slow_clients

    if args.slots < 1 or args.every <= 0:
        print("waypost bench slow-clients: --slots must be at least 1 and --every above 0",
              file=sys.stderr)
        return 2
    levels = sorted({*args.levels})
    print(f"{len(levels) + 1} servers, each until its normal request is answered (about 20 s "
          "each once the slots are full)…", file=sys.stderr)
    result = bench_slow_clients(args.slots, levels, args.every)
    for row in [result["baseline"], *result["levels"]]:
        print(f"{row['slow_clients']:>3} slow clients: a normal request answered after "
              f"{row['normal_request_seconds']} s ({row['refused_503']} times 503 first); "
              f"slow clients answered {row['slow_client_answers'] or '-'}", file=sys.stderr)
    return _print(result, args.json)


def _neighbours(args: argparse.Namespace) -> int:
    from waypost.bench.neighbours import bench_neighbours

    if args.sends < 1:
        print("waypost bench neighbours: --sends must be at least 1", file=sys.stderr)
        return 2
    result = bench_neighbours(args.waiters, args.sends,
                              progress=lambda text: print(text, file=sys.stderr))
    for line in result["summary"]:
        print(line, file=sys.stderr)
    for name, verdict in result["targets"].items():
        print(f"target {name}: {verdict['verdict']} ({verdict['measured']}, at most "
              f"{verdict['at_most']})", file=sys.stderr)
    return _print(result, args.json)


def _finish(command: argparse.ArgumentParser, run: Any) -> None:
    command.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    command.set_defaults(run=run)


def add_load_benches(benches: Any) -> None:
    """Register ``send``, ``feed``, ``blobs`` and ``slow-clients`` under ``waypost bench``."""
    send = benches.add_parser(
        "send", help="what one message.send costs: CPU, bytes written, sends/s, beside the "
                     "floor of the same stack",
        description="Start the embedded reference (synchronous=full) and, with --floor, the "
                    "floor of its stack (the same uvicorn, Starlette and apsw, one INSERT per "
                    "request in WAL with synchronous=FULL: waypost.bench.floor). Drive each in "
                    "turn with message.send at every --clients level over keep-alive "
                    "connections, --repeats times for --seconds, with wrk where it is "
                    "installed (apt-get install wrk), else the bench's own client. Per send: "
                    "the server's CPU by thread, the bytes and calls handed to write(2) and "
                    "the pages dirtied (Linux /proc), the ratios to the floor, and, with "
                    "strace installed, one traced phase that splits the writes by file and "
                    "counts temp files. With --floor and one connection, also the writer's CPU "
                    "per send without a server (one row, a send's rows as plain INSERTs, its "
                    "commit plan: waypost.bench.schema_floor) and the lowest ratio to the floor "
                    "this schema allows. Prints JSON with the machine, its load, the client "
                    "and each target of docs/performance.md beside its measure.")
    send.add_argument("--clients", type=_counts, default=[1, 16],
                      help="comma-separated connection counts (default: 1,16)")
    send.add_argument("--seconds", type=float, default=10.0,
                      help="per phase (default: 10)")
    send.add_argument("--repeats", type=int, default=3,
                      help="phases per server and level; figures are medians (default: 3)")
    send.add_argument("--floor", action="store_true",
                      help="run the floor app beside the reference and print the ratios")
    send.add_argument("--elsewhere", action="store_true",
                      help="then also bench blobs (4 slow 64 MiB downloads, refused manifests) "
                           "and bench feed (2,000 and 40,000 items), their targets in the same "
                           "JSON (a few minutes more)")
    send.add_argument("--client", choices=["auto", "wrk", "python"], default="auto",
                      help="the load generator: wrk if installed (auto), or the bench's own "
                           "Python client, which tops out near 400 requests/s")
    _finish(send, _send)
    feed = benches.add_parser(
        "feed", help="feed page p50 at two feed sizes and their ratio",
        description="Start one server per size, fill a recipient's inbox there to that size, "
                    "then time --repeats reads of its first page of 100 items over HTTP, the "
                    "servers read in turn; prints p50/p99 per size and the ratio of the p50s. "
                    "The fill skips HTTP: the rows alice's sends to bob "
                    "would write (same ids, fingerprints, bodies) go straight into the "
                    "server's database, 10,000 sends per transaction (through HTTP, 200,000 "
                    "items took about 13 minutes).")
    feed.add_argument("--sizes", type=_counts, default=[2_000, 200_000],
                      help="comma-separated feed sizes in items (default: 2000,200000)")
    feed.add_argument("--repeats", type=int, default=300, help="page reads per size "
                                                               "(default: 300)")
    _finish(feed, _feed)
    blobs = benches.add_parser(
        "blobs", help="describe p99 during slow 64 MiB downloads and refused manifests",
        description="Upload a --blob-mib blob, then measure GET /v1/describe one after another "
                    "while --downloaders slow clients download it (a pause after each 256 KiB), "
                    "and while manifests of empty items at and over manifest_input_bytes are "
                    "refused; p99 over the p50 at rest, and the server's peak RSS growth.")
    blobs.add_argument("--downloaders", type=int, default=4, help="slow clients (default: 4)")
    blobs.add_argument("--blob-mib", type=int, default=64, help="blob size (default: 64)")
    blobs.add_argument("--pause", type=float, default=0.02,
                       help="seconds a slow client pauses per 256 KiB (default: 0.02)")
    _finish(blobs, _blobs)
    slow = benches.add_parser(
        "slow-clients", help="how many slow clients it takes to delay a normal request, and "
                             "by how much",
        description="For each --levels count, start a server with --max-connections --slots "
                    "and that many clients sending a request body a byte every --every "
                    "seconds; then time a normal GET /v1/describe that retries every 0.25 s "
                    "while refused with 503. Prints each delay beside the baseline (no slow "
                    "client, same run) and how the slow clients ended (408 once cut off).")
    slow.add_argument("--slots", type=int, default=8, help="--max-connections (default: 8)")
    slow.add_argument("--levels", type=_counts, default=[4, 8, 16],
                      help="comma-separated counts of slow clients (default: 4,8,16)")
    slow.add_argument("--every", type=float, default=2.0,
                      help="seconds between a slow client's bytes (default: 2)")
    _finish(slow, _slow_clients)
    neighbours = benches.add_parser(
        "neighbours", help="no actor slows the others: wake-ups among parked long polls, a "
                           "broadcast, a timeout herd, hostile bodies, beside a floor",
        description="Start the reference (waypost serve, --max-connections the most waiters + "
                    "500) and then a floor on the same uvicorn and Starlette that parks each "
                    "long poll on an event of its actor and whose send sets its recipients' "
                    "events, no storage (waypost.bench.neighbours_floor); on each in turn: "
                    "describe latency at rest and while a token with no scope keeps 4 POSTs "
                    "of a 1 MiB [{},{},…] and then of a send with ~1 MiB of float metadata in "
                    "flight, then the same from alice, whose token may send (its bodies are "
                    "read and parsed before they are refused); the server's CPU and each "
                    "answer's lateness when as many long polls as the most --waiters "
                    "(wait=5) time out at once and then their "
                    "re-polls from each next_cursor do (the target judges the re-polls, the "
                    "first round stands beside them); with 0 and then "
                    "each --waiters count of idle long polls (wait=30) parked, --sends sends "
                    "from alice to bob while bob's long poll is parked: the server's CPU per "
                    "send and the time from each send's answer to bob's poll answer; then one "
                    "send to 64 actors each with a parked poll, the idle polls still parked, 5 "
                    "times. Server CPU from Linux' /proc. Prints a line per pattern (wake-ups: "
                    "per count) and JSON with the machine, each pattern's figures for "
                    "the reference and the floor, and each target's verdict.")
    neighbours.add_argument("--waiters", type=_counts, default=[1000, 4000],
                            help="comma-separated counts of idle parked long polls "
                                 "(default: 1000,4000)")
    neighbours.add_argument("--sends", type=int, default=40,
                            help="sends to bob at each count (default: 40)")
    _finish(neighbours, _neighbours)
