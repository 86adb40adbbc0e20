"""``waypost conformance load``: concurrent clients over loopback, then the history checked."""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from waypost.conformance import load
from waypost.conformance.arguments import add_target, admin_token
from waypost.conformance.targets import check_target, open_target
from waypost.properties.wire.bounds import bounded_client


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``conformance load``."""
    parser = commands.add_parser(
        "load", help="concurrent clients, then every view re-read and the history checked",
        description="Drive the target with concurrent clients for a bounded time and number "
                    "of requests: each sends messages, reads its inbox and ACKs it, and "
                    "publishes into collections shared by several clients (compare-and-swap). "
                    "Then every view is re-read and the history checked: nothing lost, "
                    "doubled or reordered, a collection head moved once per successful "
                    "publish, receipts only forward. Prints progress while running, then "
                    "throughput per operation and every anomaly; exit 1 on an anomaly. "
                    "Loopback targets only unless --allow-remote (this is load).")
    add_target(parser)
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (16)")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="how long the clients run at most (default 10)")
    parser.add_argument("--max-requests", type=int, default=1_000_000,
                        help="stop once this many operations have started (a send, a read with "
                             "its ACK, a publish attempt; retries not counted; default "
                             "1000000)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the clients' choices")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow a URL target that is not on loopback")
    parser.add_argument("--report-json", type=Path, default=None, help="write a JSON report")
    parser.set_defaults(run=_load)


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _progress(report: load.LoadReport, elapsed: float) -> None:
    counts = ", ".join(f"{op} {s.ok}" for op, s in report.stats.items())
    print(f"load: {elapsed:.0f} s, {report.requests} requests ({counts}; "
          f"{report.stats['publish'].conflicts} CAS conflicts), "
          f"{len(report.anomalies)} anomalies so far", file=sys.stderr, flush=True)


def table(report: load.LoadReport) -> str:
    lines = [f"{'':3}{'operation':<10} {'ok':>8} {'per s':>8} {'p50 ms':>8} {'p95 ms':>8} "
             f"{'conflicts':>9} {'errors':>7}", "-" * 66]
    for op, stats in report.stats.items():
        shown = stats.as_json(report.seconds)
        lines.append(f"{'':3}{op:<10} {stats.ok:>8} {shown['per_second']:>8} "
                     f"{shown['p50_ms']:>8} {shown['p95_ms']:>8} {stats.conflicts:>9} "
                     f"{stats.errors:>7}")
    lines.append("-" * 66)
    checked = ", ".join(f"{n} {what}" for what, n in report.checked.items())
    lines.append(f"target {report.target}: {report.clients} clients, {report.requests} "
                 f"requests in {report.seconds:.1f} s; re-read and checked: {checked}")
    for anomaly in report.anomalies[:50]:
        lines.append(f"ANOMALY {anomaly.kind}: {anomaly.detail} {list(anomaly.item_ids)[:5]}")
    if len(report.anomalies) > 50:
        lines.append(f"… and {len(report.anomalies) - 50} more anomalies")
    return "\n".join(lines)


def _load(args: argparse.Namespace) -> int:
    if args.clients < 1 or args.seconds <= 0 or args.max_requests < 1:
        print("waypost conformance load: --clients, --seconds and --max-requests must be "
              "positive", file=sys.stderr)
        return 2
    if args.target not in ("sqlite", "d1") and not args.allow_remote \
            and not is_loopback(args.target):
        print(f"waypost conformance load: {args.target} is not on loopback; a load run "
              "against another host needs --allow-remote", file=sys.stderr)
        return 2
    try:
        with open_target(args.target, admin_token(args)) as target:
            with bounded_client(target.url) as probe:
                check_target(probe, target.admin_token)
            print(f"waypost conformance load: target {target.url}, {args.clients} clients, "
                  f"{args.seconds:g} s", file=sys.stderr)
            report = load.run(
                lambda: httpx.Client(base_url=target.url, timeout=60), target.admin_token,
                args.target, clients=args.clients, seconds=args.seconds,
                max_requests=args.max_requests, seed=args.seed, progress=_progress)
    except (ValueError, RuntimeError) as exc:
        print(f"waypost conformance load: {exc}", file=sys.stderr)
        return 2
    print(table(report))
    if args.report_json:
        args.report_json.write_text(json.dumps(report.as_json(), indent=2) + "\n")
    print(f"{len(report.anomalies)} anomalies")
    return 1 if report.anomalies else 0
