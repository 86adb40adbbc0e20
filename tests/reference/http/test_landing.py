"""``GET /``: a person who opens the server's address is told where to go next, not answered
``404`` (docs/spec.md, "Beyond the protocol's routes")."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from waypost.reference.server import Settings, build_app


@pytest.mark.parametrize("dashboard", [False, True])
def test_the_root_names_describe_the_openapi_document_and_the_dashboard(
        tmp_path: Path, dashboard: bool) -> None:
    settings = Settings(tmp_path / "data", "a" * 32, dashboard=dashboard, sweep_seconds=0)
    with TestClient(build_app(settings)) as client:
        answer = client.get("/")
        assert answer.status_code == 200
        links = answer.json()
        assert links["dashboard"] == ("/dashboard/" if dashboard else None)
        for name in ("describe", "openapi", *(["dashboard"] if dashboard else [])):
            assert client.get(links[name]).status_code == 200, name
        assert client.post("/").json()["error"]["code"] in ("NOT_FOUND", "METHOD_NOT_ALLOWED")
