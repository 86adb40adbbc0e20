"""What a kit run shows while it runs: a progress line that never counts past its plan."""

from __future__ import annotations

import io

import httpx

from waypost.conformance.runner import Progress
from waypost.properties.http import Session
from waypost.properties.machine import KitRun
from waypost.properties.violations import Ledger


def test_progress_says_when_hypothesis_runs_more_than_planned() -> None:
    out = io.StringIO()
    progress = Progress(out, planned=80)
    kit = KitRun(Session(httpx.Client(), "admin"), "run", Ledger())
    for examples in (10, 80, 90):
        kit.examples, kit.steps = examples, examples * 50
        progress(kit)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("example 10 of 80 planned, 500 steps")
    assert lines[1].startswith("example 80 of 80 planned")
    assert lines[2].startswith("example 90 (80 planned + 10 discarded or shrinking)")
