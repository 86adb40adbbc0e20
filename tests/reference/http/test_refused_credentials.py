"""Refused credentials are held (docs/spec.md "Serving under load"): past its burst, a token
without the operation's scope, or an address whose credentials are refused, waits for its
refusal while everybody else is served; the refusal is the same envelope, only later."""

from __future__ import annotations

import threading
from typing import Any

import httpx

from tests.support.api import Api, must_fail
from waypost.reference.domain.refusal_brake import RefusalBrake
from waypost.reference.server import served_context


class _Watched(RefusalBrake):
    """The server's brake, telling the test when it holds a refusal."""

    def __init__(self) -> None:
        super().__init__(rate=0.25, burst=1, longest_hold=4)  # past the first, each waits 4 s
        self.holding = threading.Event()

    def hold(self, key: bytes | str, now: float) -> float:
        held = super().hold(key, now)
        if held:
            self.holding.set()
        return held


def _held_while_another_is_served(api: Api, refused: Any) -> httpx.Response:
    """``refused()`` once (its burst), then again in a thread: the second is held, and a
    describe is answered meanwhile. The held answer."""
    brake = served_context(api.client.app).brake = _Watched()
    refused()
    answers: dict[str, httpx.Response] = {}
    thread = threading.Thread(target=lambda: answers.update(held=refused()), daemon=True)
    thread.start()
    assert brake.holding.wait(timeout=30)
    assert api.client.get("/v1/describe").status_code == 200
    assert api.feed("s1/bob")["items"] == []  # another token's request: served at once
    assert thread.is_alive()  # the refusal still waits its turn
    thread.join(timeout=30)
    return answers["held"]


def test_a_token_without_the_scope_waits_for_its_refusal(api: Api) -> None:
    api.token("s1", "carol", "carol-inbox", name="scopeless", scopes=[])
    held = _held_while_another_is_served(
        api, lambda: api.send("scopeless", recipient_ids=["alice"]))
    must_fail(held, 403, "FORBIDDEN", "scope")


def test_an_address_whose_credentials_are_refused_waits(api: Api) -> None:
    made_up = iter(f"Bearer tok_{n}.{'A' * 32}" for n in range(2))
    held = _held_while_another_is_served(api, lambda: api.client.get(
        "/v1/feed", headers={"Authorization": next(made_up)}))
    must_fail(held, 401, "UNAUTHENTICATED")
