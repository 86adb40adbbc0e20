"""``waypost serve`` says where it serves, and a busy port names ``--port``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from waypost.serve_start import where


def test_a_busy_port_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "waypost.cli", "serve", "--data-dir", str(tmp_path / "d"),
             "--port", str(port)], capture_output=True, text=True, timeout=60,
            env={**os.environ, "WAYPOST_ADMIN_TOKEN": "t" * 40})
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
    assert "--port N" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_start_up_line_names_every_url() -> None:
    assert where("127.0.0.1", 8787, True) == (
        "API http://127.0.0.1:8787/v1/describe, OpenAPI http://127.0.0.1:8787/openapi.json, "
        "dashboard http://127.0.0.1:8787/dashboard/")
    assert where("0.0.0.0", 80, False) == (
        "API http://127.0.0.1:80/v1/describe, OpenAPI http://127.0.0.1:80/openapi.json")
    assert where("::1", 9, False).startswith("API http://[::1]:9/")
