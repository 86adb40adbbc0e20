"""What the contract checks (``properties/contract/``) share: answers read as hostile input
(a JSON object of bounded size before anything is indexed), error answers held to the §7
envelope with the details their code requires, control-plane writes that report a refusal as
a finding, and the server's form of a time (WP-VAL-13).

The checks run in the hostile phase (``conformance/hostile_phase.py``), each in a fresh space of its
own (:class:`~waypost.properties.hostile.probes.Probe`), and speak HTTP only."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx

from waypost.properties.hostile.probes import ALL_SCOPES, Finding, Probe, refused
from waypost.properties.protocol.grammar import envelope_problems

#: The largest answer a check reads as JSON: anything bigger is a finding, not a parse.
MAX_ANSWER_BYTES = 8 << 20
#: The server's form of a time (WP-VAL-13): RFC 3339 in UTC, exactly three fraction digits.
SERVER_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")


def shown(answer: httpx.Response) -> str:
    return f"{answer.status_code} {answer.text[:200]!r}"


def json_of(answer: httpx.Response, what: str) -> Any:
    """The answer's JSON, or a finding: too large, not JSON."""
    if len(answer.content) > MAX_ANSWER_BYTES:
        raise Finding(f"{what}: an answer of {len(answer.content)} bytes")
    try:
        return answer.json()
    except ValueError:
        raise Finding(f"{what}: the answer is not JSON: {shown(answer)}") from None


def obj(answer: httpx.Response, what: str, status: int | tuple[int, ...] = (200, 201)
        ) -> dict[str, Any]:
    """A success answer of ``status`` whose body is a JSON object."""
    wanted = (status,) if isinstance(status, int) else status
    if answer.status_code not in wanted:
        raise Finding(f"{what}: expected {' or '.join(map(str, wanted))}, got {shown(answer)}")
    body = json_of(answer, what)
    if not isinstance(body, dict):
        raise Finding(f"{what}: the answer is not a JSON object: {shown(answer)}")
    return body


def text(data: dict[str, Any], key: str, what: str) -> str:
    """``data[key]``, a string."""
    value = data.get(key)
    if not isinstance(value, str):
        raise Finding(f"{what}: {key} is {value!r:.80}, not a string")
    return value


def listed(data: dict[str, Any], key: str, what: str) -> list[Any]:
    """``data[key]``, a list."""
    value = data.get(key)
    if not isinstance(value, list):
        raise Finding(f"{what}: {key} is {value!r:.80}, not a list")
    return value


def error(answer: httpx.Response, what: str, codes: dict[str, str | None]) -> dict[str, Any]:
    """A refusal with one of ``codes`` (each mapped to the ``details.field`` it must name, or
    None), in the §7 envelope with every member of ``details`` its code requires (WP-ERR-1 to
    WP-ERR-3)."""
    found = refused(answer, what, codes)
    problems = envelope_problems(answer.status_code, json_of(answer, what))
    if problems:
        raise Finding(f"{what}: {'; '.join(problems)} (WP-ERR-1, WP-ERR-3): {shown(answer)}")
    return found


def replayed(answer: httpx.Response) -> bool:
    return str(answer.headers.get("waypost-replayed", "")).lower() == "true"


def admin(probe: Probe, method: str, path: str, body: dict[str, Any] | None = None,
          status: int | tuple[int, ...] = (200, 201), what: str = "") -> dict[str, Any]:
    """A control-plane request that must succeed with a JSON object."""
    answer = probe.request(method, path, who="admin", body=body)
    return obj(answer, what or f"{method} {path}", status)


def detail(probe: Probe, space: str | None = None) -> dict[str, Any]:
    """``GET /admin/v1/spaces/{space}``: the space with its actors, tokens and threads."""
    return admin(probe, "GET", f"/admin/v1/spaces/{space or probe.space}", status=200)


def entries(data: dict[str, Any], key: str, id_key: str, what: str) -> dict[str, dict[str, Any]]:
    """The objects of the list ``data[key]`` by their ``id_key``."""
    found: dict[str, dict[str, Any]] = {}
    for entry in listed(data, key, what):
        if not isinstance(entry, dict) or not isinstance(entry.get(id_key), str):
            raise Finding(f"{what}: an entry of {key} without a string {id_key}: {entry!r:.120}")
        found[entry[id_key]] = entry
    return found


def add_actor(probe: Probe, actor: str, *, token: bool = False, space: str | None = None,
              scopes: list[str] | None = None) -> str | None:
    """Actor ``actor`` in the probe's space with an inbox consumer ``<actor>-inbox``; with
    ``token``, a token of it kept in ``probe.tokens`` (its secret is returned)."""
    space = space or probe.space
    admin(probe, "POST", f"/admin/v1/spaces/{space}/actors", {
        "request_id": probe.rid("ac"), "actor_id": actor, "kind": "agent",
        "display_name": actor})
    admin(probe, "POST", f"/admin/v1/spaces/{space}/consumers", {
        "request_id": probe.rid("co"), "consumer_id": f"{actor}-inbox", "actor_id": actor,
        "view": "inbox"})
    return issue(probe, actor, scopes=scopes, space=space)["token"] if token else None


def issue(probe: Probe, actor: str, *, scopes: list[str] | None = None,
          space: str | None = None, name: str | None = None, **extra: Any) -> dict[str, Any]:
    """A token of ``actor`` for its consumer ``<actor>-inbox``; its secret is kept in
    ``probe.tokens[name or actor]``."""
    space = space or probe.space
    issued = admin(probe, "POST", f"/admin/v1/spaces/{space}/tokens", {
        "request_id": probe.rid("tk"), "actor_id": actor, "consumer_id": f"{actor}-inbox",
        "scopes": ALL_SCOPES if scopes is None else scopes, "recipients": {"mode": "any"},
        "collections": [], "blob_references": [], **extra}, status=201)
    probe.tokens[name or actor] = text(issued, "token", "token.issue")
    return issued


def send(probe: Probe, who: str, recipients: list[str] | None = None,
         thread: dict[str, Any] | None = None, **extra: Any) -> httpx.Response:
    """``message.send`` as ``who`` (to bob in a new thread unless told)."""
    return probe.request("POST", "/v1/messages", who=who, body={
        "request_id": probe.rid("m"), "recipient_ids": recipients or ["bob"],
        "thread": thread or {"new": True}, "kind": "info", "subject": "contract check",
        "body": {"text": "t"}, **extra})


def messages_of(probe: Probe, who: str) -> list[dict[str, Any]]:
    """The message items of ``who``'s inbox view from its checkpoint."""
    return [item for item in probe.inbox(who)
            if isinstance(item, dict) and item.get("type") == "message"]


def wrong_token() -> str:
    """A well-formed credential no server issued."""
    return f"tok_{secrets.token_hex(12)}.{secrets.token_urlsafe(32)}"


def dead_answer(probe: Probe) -> tuple[int, Any]:
    """What a token no server issued gets for a feed read: the one answer of every bad
    credential (WP-AUTH-2)."""
    answer = probe.request("GET", "/v1/feed", headers={"Authorization": f"Bearer {wrong_token()}"})
    error(answer, "a feed read with a token never issued", {"UNAUTHENTICATED": None})
    return answer.status_code, json_of(answer, "a feed read with a token never issued")


# ----- times --------------------------------------------------------------------------------


def server_time(value: Any, where: str) -> str | None:
    """What is wrong with a time the server wrote (WP-VAL-13), or None."""
    if not isinstance(value, str) or not SERVER_TIME.fullmatch(value):
        return f"{where} = {value!r:.60} is not of the form 2026-11-30T02:29:59.123Z"
    try:
        datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return f"{where} = {value!r} is not a date and time of the calendar"
    return None


def times(data: Any, where: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """Every time member of an answer (a key ending in ``_at``, or ``now``) with where it is;
    ``null`` ones (a token without expiry) are left out."""
    if depth > 32:
        return
    if isinstance(data, dict):
        for key, value in data.items():
            here = f"{where}.{key}" if where else str(key)
            if (str(key).endswith("_at") or key == "now") and value is not None:
                yield here, value
            else:
                yield from times(value, here, depth + 1)
    elif isinstance(data, list):
        for index, value in enumerate(data[:1000]):
            yield from times(value, f"{where}[{index}]", depth + 1)


def ms_of(value: str) -> int:
    """Milliseconds since the epoch of a time in the server's form."""
    moment = datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000 + 0.5)


def form(ms: int) -> str:
    """A time in the server's form (WP-VAL-13)."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
