"""A dashboard client for tests: signs in through the form and posts forms with the session's
CSRF token, over any httpx-compatible client (the in-process app or a real server)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found is not None, "no CSRF token in the page"
    return found.group(1)


@dataclass
class Dash:
    """Dashboard pages through ``client`` (cookies kept by the client)."""

    client: Any  # httpx.Client or starlette's TestClient

    def sign_in(self, admin_token: str) -> httpx.Response:
        form = self.client.get("/dashboard/sign-in")
        assert form.status_code == 200
        return self.client.post("/dashboard/sign-in", follow_redirects=False, data={
            "csrf": csrf_of(form.text), "admin_token": admin_token})

    @property
    def session(self) -> str:
        return str(self.client.cookies.get("waypost_session"))

    def page(self, path: str, **params: Any) -> httpx.Response:
        return self.client.get(path, params=params, follow_redirects=False)

    def csrf(self) -> str:
        home = self.page("/dashboard/")
        assert home.status_code == 200, home.text
        return csrf_of(home.text)

    def post(self, path: str, request_id: str | None = None, **fields: Any) -> httpx.Response:
        """A form post carrying the session's CSRF token (and ``request_id`` when given)."""
        data = {"csrf": self.csrf(), **fields}
        if request_id is not None:
            data["request_id"] = request_id
        return self.client.post(path, data=data, follow_redirects=False)
