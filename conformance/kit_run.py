"""``waypost conformance``'s runs: the kit against a target, a replay file, the crash matrix
(the command line is ``kit_command``'s)."""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import time

import httpx

from waypost.conformance import consumer_matrix, runner
from waypost.conformance import report as reports
from waypost.conformance.arguments import admin_token, subset
from waypost.conformance.fuzz import FuzzReport
from waypost.conformance.fuzz_command import (
    FUZZ_PROFILE_BY_KIT_PROFILE,
    fuzz_phase,
    is_fuzz_replay,
    replay_finding,
)
from waypost.conformance.kit_command import Progress, duration
from waypost.conformance.profiles import PROFILES
from waypost.conformance.requirement_table import text_table as requirement_table
from waypost.conformance.run_results import Report
from waypost.conformance.targets import Target, check_target, open_target
from waypost.conformance.workers import default_workers, round_trip, shares
from waypost.properties.coverage.catalogue import Property, select
from waypost.properties.model.fixture_sets import Fixtures
from waypost.properties.model.fixture_sets import load as load_fixtures
from waypost.properties.wire.bound_values import MAX_CONNECTIONS, SECONDS
from waypost.properties.wire.bounds import (
    BoundedTransport,
    Bounds,
    OutOfBounds,
    bounded_client,
    network_transport,
)
from waypost.properties.wire.proxy import FaultProxy
from waypost.properties.wire.untrusted import visible


def kit_client(url: str, args: argparse.Namespace) -> tuple[httpx.Client, FaultProxy, Bounds]:
    """The run's client to ``url``: the fault proxy over a transport that reads every answer
    within the kit's bounds (``--timeout``, the answer cap, walks that move on)."""
    if not args.timeout > 0:
        raise ValueError("--timeout takes a positive number of seconds")
    connections = getattr(args, "max_connections", MAX_CONNECTIONS)
    if connections < 1:
        raise ValueError("--max-connections takes a positive number")
    bounds = Bounds(seconds=args.timeout)
    proxy = FaultProxy(BoundedTransport(network_transport(url, connections), bounds))
    client = httpx.Client(base_url=url, timeout=bounds.timeout(), transport=proxy,
                          trust_env=False)  # its proxy is the transport's (bounded)
    return client, proxy, bounds


def out_of_bounds_at_once(client: httpx.Client) -> str | None:
    """A target whose describe already breaks the kit's bounds cannot be checked at all: the
    verdict says so (None: go on; an unreachable target is check_target's to say)."""
    try:
        client.get("/v1/describe")
    except OutOfBounds as breach:
        return (f"the target's describe broke the kit's bounds: {breach} [WP-HTTP-9]; no "
                "property could be checked")
    except httpx.TransportError:
        return None
    return None


def crash_matrix(args: argparse.Namespace) -> int:
    """``waypost conformance crash-matrix``."""
    import json

    from waypost.conformance.crash_matrix import OPERATIONS
    from waypost.conformance.crash_matrix import crash_matrix as run_matrix

    try:
        operations = subset(args.operations, tuple(OPERATIONS), "operations")
    except ValueError as exc:
        print(f"waypost conformance crash-matrix: {exc}", file=sys.stderr)
        return 2
    actions = tuple(a.strip() for a in args.actions.split(",") if a.strip())
    if not actions or any(a not in ("crash", "unavailable") for a in actions):
        print("waypost conformance crash-matrix: --actions takes crash and/or unavailable",
              file=sys.stderr)
        return 2
    if args.power_loss and args.target != "sqlite":
        print("waypost conformance crash-matrix: --power-loss needs --target sqlite (the "
              "simulator is the embedded adapter's)", file=sys.stderr)
        return 2
    try:
        if args.target in ("sqlite", "d1"):
            matrix = run_matrix(operations, actions=actions, target=args.target,
                                power_loss=args.power_loss)
        else:
            token = admin_token(args)
            check_hooks(args.target, token)
            matrix = run_matrix(operations, actions=actions, url=args.target.rstrip("/"),
                                  admin_token=token or "")
    except (ValueError, RuntimeError, httpx.TransportError) as exc:
        print(visible(f"waypost conformance crash-matrix: {exc}"), file=sys.stderr)
        return 2
    print(matrix.table())
    if args.json is not None:
        args.json.write_text(json.dumps(matrix.as_json(), indent=2) + "\n")
    print(matrix.verdict())
    return 0 if matrix.green else 1


def check_hooks(url: str, admin_token: str | None) -> None:
    """A URL target of the crash matrix: reachable, the admin token accepted, test hooks on."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"unknown target {url!r}: use sqlite, d1 or the URL of a server "
                         "with --test-hooks")
    if not admin_token:
        raise ValueError("a URL target needs --admin-token (or WAYPOST_ADMIN_TOKEN)")
    with bounded_client(url, Bounds(seconds=30)) as client:
        check_target(client, admin_token)
        described = client.get("/v1/describe")
    capabilities = described.json().get("capabilities", {}) if described.status_code == 200 \
        else {}
    if not (isinstance(capabilities, dict) and capabilities.get("test_hooks")):
        raise ValueError(f"the target at {url} has no test hooks (start it with "
                         "waypost serve --test-hooks): a deployment has no fault points")


def conformance(args: argparse.Namespace) -> int:
    """``waypost conformance``: the run, its tables and reports, and last its verdict; the
    exit status. The seed is drawn here when not given: the run's phases share it, and the
    verdict's rerun command repeats it."""
    started = time.monotonic()
    if args.shrink_seconds is not None and not 0 <= args.shrink_seconds <= 86400:
        print("waypost conformance: --shrink-seconds takes 0 to 86400 seconds", file=sys.stderr)
        return 2
    try:
        selected = select(args.only)
    except ValueError as exc:
        print(f"waypost conformance: {exc}", file=sys.stderr)
        return 2
    if not ((args.workers is None or args.workers >= 1) and (
            args.worker is None or 0 <= args.worker < (args.workers or 0))):
        print("waypost conformance: --workers takes a positive number, and --worker one of "
              "0 to --workers - 1 (with --workers given)", file=sys.stderr)
        return 2
    expected = runner.expected_for(args.expected_failures, args.target)
    args.seed = random.randrange(2**32) if args.seed is None else args.seed
    try:
        fixtures = fixture_file(args)
        with open_target(args.target, admin_token(args), fixtures is not None) as target:
            client, proxy, bounds = kit_client(target.url, args)
            with client:
                result = _run(args, target, client, proxy, bounds, fixtures, expected, selected,
                              started)
    except (ValueError, RuntimeError, httpx.TransportError) as exc:
        print(visible(f"waypost conformance: {exc}"), file=sys.stderr)
        return 2
    rerun = rerun_command(args, selected)
    if isinstance(result, str):  # no run: the verdict of a target out of the kit's bounds
        print(visible(f"waypost conformance: {result}"))
        print(f"FAIL: no property could be checked, the target is out of the kit's bounds "
              f"(seed {args.seed}, {duration(time.monotonic() - started)}) — rerun: {rerun}")
        return 1
    scope = reports.Scope(tuple(p.pid for p in selected) if args.only else (),
                          _fuzz_skipped(args, fixtures is not None))
    return _reports(args, result, scope, time.monotonic() - started, rerun)


def rerun_command(args: argparse.Namespace, selected: list[Property]) -> str:
    """The command line that reruns this run: its target, profile and seed, its ``--only``,
    and what else it was given that changes a verdict; quoted for a shell and escaped for a
    terminal. A URL target's admin token is never shown: the rerun reads it from
    ``$WAYPOST_ADMIN_TOKEN``, as any run does without ``--admin-token``."""
    words = ["waypost", "conformance", "--target", args.target, "--profile", args.profile,
             "--seed", str(args.seed)]
    if args.only:
        words += ["--only", ",".join(p.pid for p in selected)]
    if args.workers is not None and (args.workers > 1 or args.target.startswith("http")):
        words += ["--workers", str(args.workers)]  # its workers' seeds depend on it
    if args.worker is not None:
        words += ["--worker", str(args.worker)]
    if args.shrink_seconds is not None:
        words += ["--shrink-seconds", f"{args.shrink_seconds:g}"]
    if args.timeout != SECONDS:
        words += ["--timeout", f"{args.timeout:g}"]
    for flag, path in (("--expected-failures", args.expected_failures),
                       ("--fixtures", args.fixtures)):
        if path is not None:
            words += [flag, str(path)]
    return visible(shlex.join(words))


def _fuzz_skipped(args: argparse.Namespace, through_fixtures: bool) -> str:
    """Why the profile's fuzz phase did not run ("": it ran, or the profile has none)."""
    if args.profile not in FUZZ_PROFILE_BY_KIT_PROFILE:
        return ""
    if args.only:
        return "not selected (--only)"
    if through_fixtures:
        return "needs the admin API (it provisions spaces of its own)"
    return ""


def progress(args: argparse.Namespace, selected: list[Property], fixtures: Fixtures | None,
             fuzzed: bool, started: float) -> Progress:
    """The run's progress on stderr, with the phases it will have after its exploration."""
    profile = PROFILES[args.profile]
    pids = {p.pid for p in selected}
    later = [*(["P17"] if fixtures is None and (not args.only or "P17" in pids) else []),
             *(["hostile"] if fixtures is None and not args.only else []),
             *(["fuzz"] if fuzzed else [])]
    cells = len(consumer_matrix.FLOWS) * (profile.consumer_points or len(consumer_matrix.POINTS))
    planned = sum(share.examples for share in shares(args.seed, profile.examples,
                                                     args.workers or 1, args.worker))
    return Progress(sys.stderr, planned, later=later, cells=cells,
                    shrink_seconds=0 if fixtures is not None else (
                        profile.shrink_seconds if args.shrink_seconds is None
                        else args.shrink_seconds), started=started)


def _run(args: argparse.Namespace, target: Target, client: httpx.Client, proxy: FaultProxy,
         bounds: Bounds, fixtures: Fixtures | None, expected: dict[str, str],
         selected: list[Property], started: float) -> Report | str:
    """The run against the opened target (or the verdict of a target out of bounds)."""
    verdict = out_of_bounds_at_once(client)
    if verdict is not None:
        return verdict
    check_target(client, target.admin_token)
    where = target.url if target.name == "url" else f"{target.name} at {target.url}"
    rtt = round_trip(client)
    if args.workers is None:  # the reference started here is near by construction
        args.workers = 1 if target.name != "url" or fixtures is not None else default_workers(
            rtt, args.max_connections)
    workers = f"{args.workers} worker" + ("s" if args.workers != 1 else "")
    print(visible(f"waypost conformance: target {where} ({1000 * rtt:.0f} ms away), profile "
                  f"{args.profile}, seed {args.seed}, {workers}"), file=sys.stderr)
    name = target.name if target.name != "url" else target.url
    fuzz = None  # the fuzz phase provisions spaces of its own: not through fixtures
    if args.profile in FUZZ_PROFILE_BY_KIT_PROFILE and not args.only and fixtures is None:
        def fuzz() -> FuzzReport:
            return fuzz_phase(name, client, target.admin_token, args)
    return runner.run(name, client, target.admin_token, profile=args.profile, seed=args.seed,
                      selected=selected if args.only else None, expected=expected,
                      replay_dir=args.replay_dir,
                      progress=progress(args, selected, fixtures, fuzz is not None, started),
                      proxy=proxy,
                      trace=args.trace is not None, fixtures=fixtures, fuzz=fuzz, bounds=bounds,
                      shrink_seconds=args.shrink_seconds, workers=args.workers,
                      worker=args.worker)


def _reports(args: argparse.Namespace, result: Report, scope: reports.Scope,
             seconds: float, rerun: str) -> int:
    """Print the run's tables, write the reports asked for, print the verdict last; the exit
    status."""
    print(file=sys.stderr)
    print(reports.table(result, requirements_hint=not args.requirements, scope=scope))
    if args.requirements:
        print()
        print(requirement_table(result.requirements))
    if args.report_md:
        reports.write_markdown(result, args.report_md)
    if args.report_json:
        reports.write_json(result, args.report_json)
    if args.junit:
        reports.write_junit(result, args.junit)
    if args.html:
        reports.write_html(result, args.html)
    if args.trace:
        reports.write_trace(result, args.trace)
    for outcome in result.outcomes:
        if outcome.replay:
            print(visible(f"rerun {outcome.prop.pid}: waypost conformance replay "
                          f"{outcome.replay} --target {args.target}"))
    print(reports.verdict(result, scope, seconds, rerun))
    return 1 if result.failed else 0


def fixture_file(args: argparse.Namespace) -> Fixtures | None:
    """The ``--fixtures`` file, if given, read and checked; only a URL target has fixtures."""
    if args.fixtures is None:
        return None
    if not args.target.startswith(("http://", "https://")):
        raise ValueError("--fixtures needs a URL target: the deployment they were provisioned on")
    return load_fixtures(args.fixtures)


def replay(args: argparse.Namespace) -> int:
    """``waypost conformance replay``."""
    if is_fuzz_replay(args.file):
        return replay_finding(args)
    try:
        fixtures = fixture_file(args)
        with open_target(args.target, admin_token(args), fixtures is not None) as target:
            client, proxy, _ = kit_client(target.url, args)
            with client:
                violation = runner.replay_file(args.file, client, target.admin_token,
                                               proxy=proxy, fixtures=fixtures)
    except (ValueError, RuntimeError, OSError, httpx.TransportError) as exc:
        print(visible(f"waypost conformance replay: {exc}"), file=sys.stderr)
        return 2
    return 1 if violation is not None else 0
