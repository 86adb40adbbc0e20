"""The exploration's workers: each its share of the examples with a seed of its own, derived
from the run's, so that a worker's failure reruns alone with the same draws; a run of several
finds what a run of one finds, and its checks add up in one ledger."""

from __future__ import annotations

import ast
import json
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.inprocess import kit_client
from waypost.conformance import runner
from waypost.conformance.workers import (
    HYPOTHESIS_PROBES,
    default_workers,
    one_ast_at_a_time,
    shares,
    worker_seed,
)
from waypost.properties.coverage.catalogue import select

KitApp = Callable[..., AbstractContextManager[TestClient]]  # the conftest fixture kit_app
Patch = Callable[[pytest.MonkeyPatch, Any], None]


def test_one_worker_is_the_run_itself() -> None:
    (only,) = shares(7, 80, 1)
    assert (only.seed, only.examples, only.prefix) == (7, 80, "")


def test_workers_share_the_examples_each_with_a_seed_of_its_own() -> None:
    every = shares(7, 80, 3)
    assert sum(s.examples for s in every) == 80 + 3 * HYPOTHESIS_PROBES
    assert len({s.seed for s in every}) == 3
    assert 7 not in {s.seed for s in every}
    assert [s.prefix for s in every] == ["w0", "w1", "w2"]
    assert shares(7, 80, 3, only=1) == [every[1]]  # --worker 1 reruns that one alone
    assert worker_seed(7, 1, 3) == every[1].seed == worker_seed(7, 1, 3)
    assert worker_seed(7, 1, 4) != worker_seed(7, 1, 3)  # the seeds depend on --workers


def test_the_default_workers_follow_the_distance_and_the_connections() -> None:
    assert default_workers(0.001, 32) == 1
    assert default_workers(0.020, 32) == 4
    assert default_workers(0.050, 32) == 8
    assert default_workers(0.300, 32) == 8
    assert default_workers(0.050, 8) == 2  # 4 connections each


@pytest.mark.slow
def test_workers_find_a_broken_servers_failure_and_one_reruns_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kit_app: KitApp, kit_admin: str,
        drop_page_edges: Patch) -> None:
    """Pages that drop their last item (P06), explored by 3 workers: the failure is found,
    its replay names its worker, and that worker alone (``--worker``) finds it again."""
    with kit_app(tmp_path / "data") as client:
        drop_page_edges(monkeypatch, client)
        found = runner.run("broken", kit_client(client), kit_admin, profile="quick", seed=11,
                           workers=3, selected=select("P06"), shrink_seconds=0,
                           replay_dir=tmp_path / "replays")
        failed = [o for o in found.outcomes if o.result == "fail"]
        assert [o.prop.pid for o in failed] == ["P06"]
        assert found.workers == 3
        recorded = json.loads(Path(str(failed[0].replay)).read_text())
        assert recorded["workers"] == 3
        worker = recorded["worker"]
        assert recorded["worker_seed"] == worker_seed(11, worker, 3)
        alone = runner.run("broken", kit_client(client), kit_admin, profile="quick", seed=11,
                           workers=3, worker=worker, selected=select("P06"), shrink_seconds=0,
                           replay_dir=tmp_path / "alone")
        assert [o.prop.pid for o in alone.outcomes if o.result == "fail"] == ["P06"]


def test_while_workers_run_one_thread_parses_an_ast_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython 3.11 cannot build two ASTs at once (gh-106905); Hypothesis parses source as it
    draws. Two threads that would meet inside ``ast.parse`` never do while workers run."""
    met: list[bool] = []
    meeting = threading.Barrier(2, timeout=1)

    def parse(*args: Any, **kwargs: Any) -> ast.AST:
        try:
            meeting.wait()
            met.append(True)
        except threading.BrokenBarrierError:
            met.append(False)
        return ast.Module(body=[], type_ignores=[])

    def two_parse() -> list[bool]:
        met.clear()
        meeting.reset()
        threads = [threading.Thread(target=lambda: ast.parse("x")) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        return met
    monkeypatch.setattr(ast, "parse", parse)
    assert two_parse() == [True, True]  # the control: two threads parse at once
    with one_ast_at_a_time():
        assert two_parse() == [False, False]
    assert ast.parse is parse  # as it was after the run
