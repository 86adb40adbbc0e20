"""The collector settings a long-running server starts with (commands/collector.py)."""

from __future__ import annotations

import json
import subprocess
import sys

from waypost.collector import THRESHOLDS


def test_a_server_process_collects_with_the_tuned_thresholds_after_freezing_its_start() -> None:
    probe = ("import gc, json; from waypost.collector import tune_collector; "
             "import waypost.reference.server; "
             "print(json.dumps([tune_collector(), gc.get_threshold(), gc.get_freeze_count()]))")
    answer = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=120, check=True)
    returned, applied, frozen = json.loads(answer.stdout)
    assert returned == applied == list(THRESHOLDS)
    assert applied[0] > 700  # CPython's default, which a herd of parked polls keeps busy
    assert frozen > 1000  # the modules and objects start-up made are out of later collections
