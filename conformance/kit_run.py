"""``waypost conformance``'s runs: the kit against a target, a replay file, the crash matrix
(the command line is ``kit_command``'s)."""

from __future__ import annotations

import argparse
import sys

import httpx

from waypost.conformance import report as reports
from waypost.conformance import runner
from waypost.conformance.arguments import admin_token, subset
from waypost.conformance.fuzz import FuzzReport
from waypost.conformance.fuzz_command import (
    FUZZ_PROFILE_BY_KIT_PROFILE,
    fuzz_phase,
    is_fuzz_replay,
    replay_finding,
)
from waypost.conformance.profiles import PROFILES
from waypost.conformance.requirements import text_table as requirement_table
from waypost.conformance.targets import Target, check_target, open_target
from waypost.properties.bounds import (
    BoundedTransport,
    Bounds,
    OutOfBounds,
    bounded_client,
    network_transport,
)
from waypost.properties.catalogue import Property, select
from waypost.properties.fixtures import Fixtures
from waypost.properties.fixtures import load as load_fixtures
from waypost.properties.proxy import FaultProxy
from waypost.properties.untrusted import visible


def kit_client(url: str, args: argparse.Namespace) -> tuple[httpx.Client, FaultProxy, Bounds]:
    """The run's client to ``url``: the fault proxy over a transport that reads every answer
    within the kit's bounds (``--timeout``, the answer cap, walks that move on)."""
    if not args.timeout > 0:
        raise ValueError("--timeout takes a positive number of seconds")
    bounds = Bounds(seconds=args.timeout)
    proxy = FaultProxy(BoundedTransport(network_transport(url), bounds))
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
    try:
        if args.target in ("sqlite", "d1"):
            matrix = run_matrix(operations, actions=actions, target=args.target)
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
    """``waypost conformance``: the run, its tables and reports; the exit status."""
    if args.shrink_seconds is not None and not 0 <= args.shrink_seconds <= 86400:
        print("waypost conformance: --shrink-seconds takes 0 to 86400 seconds", file=sys.stderr)
        return 2
    try:
        selected = select(args.only)
    except ValueError as exc:
        print(f"waypost conformance: {exc}", file=sys.stderr)
        return 2
    expected = runner.expected_for(args.expected_failures, args.target)
    try:
        fixtures = fixture_file(args)
        with open_target(args.target, admin_token(args), fixtures is not None) as target:
            client, proxy, bounds = kit_client(target.url, args)
            with client:
                result = _run(args, target, client, proxy, bounds, fixtures, expected, selected)
    except (ValueError, RuntimeError, httpx.TransportError) as exc:
        print(visible(f"waypost conformance: {exc}"), file=sys.stderr)
        return 2
    if isinstance(result, str):  # no run: the verdict of a target out of the kit's bounds
        print(visible(f"waypost conformance: {result}"))
        print("FAILED")
        return 1
    return _reports(args, result)


def _run(args: argparse.Namespace, target: Target, client: httpx.Client, proxy: FaultProxy,
         bounds: Bounds, fixtures: Fixtures | None, expected: dict[str, str],
         selected: list[Property]) -> runner.Report | str:
    """The run against the opened target (or the verdict of a target out of bounds)."""
    profile = PROFILES[args.profile]
    verdict = out_of_bounds_at_once(client)
    if verdict is not None:
        return verdict
    check_target(client, target.admin_token)
    where = target.url if target.name == "url" else f"{target.name} at {target.url}"
    print(f"waypost conformance: target {where}, profile {args.profile}", file=sys.stderr)
    name = target.name if target.name != "url" else target.url
    fuzz = None  # the fuzz phase provisions spaces of its own: not through fixtures
    if args.profile in FUZZ_PROFILE_BY_KIT_PROFILE and not args.only and fixtures is None:
        def fuzz() -> FuzzReport:
            return fuzz_phase(name, client, target.admin_token, args)
    return runner.run(name, client, target.admin_token, profile=args.profile, seed=args.seed,
                      selected=selected if args.only else None, expected=expected,
                      replay_dir=args.replay_dir,
                      progress=runner.Progress(sys.stderr, profile.examples), proxy=proxy,
                      trace=args.trace is not None, fixtures=fixtures, fuzz=fuzz, bounds=bounds,
                      shrink_seconds=args.shrink_seconds)


def _reports(args: argparse.Namespace, result: runner.Report) -> int:
    """Print the run's tables and verdict, write the reports asked for; the exit status."""
    print(file=sys.stderr)
    print(reports.table(result, requirements_hint=not args.requirements))
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
    if result.failed:
        print(f"FAILED (seed {result.seed}: rerun the whole run with --seed {result.seed})")
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
