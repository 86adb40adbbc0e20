"""Hostile HTTP: the letter case of the bearer scheme, test hooks a target runs without, JSON
routes given another content type, and query parameters a route does not take."""

from __future__ import annotations

from waypost.properties.hostile.probes import (
    Finding,
    HostileCheck,
    Probe,
    expect_status,
    invalid,
    refused,
    shown_value,
)


def auth_scheme(probe: Probe) -> int:
    """``bearer`` in any letter case is the Bearer scheme, on both planes (WP-AUTH-5); another
    scheme, a token glued to the scheme or none at all is the one 401 of every bad credential
    (WP-AUTH-1, WP-AUTH-2). Where the contract and RFC 6750 allow two answers, each passes:
    :func:`_spaces` and :func:`_controls`."""
    sent = 0
    for scheme in ("bearer", "BEARER", "bEaReR"):
        data = probe.request("GET", "/v1/feed", headers={
            "Authorization": f"{scheme} {probe.tokens['bob']}"})
        expect_status(data, 200, f"a data token sent as 'Authorization: {scheme} …' (WP-AUTH-5)")
        admin = probe.request("GET", f"/admin/v1/spaces/{probe.space}", headers={
            "Authorization": f"{scheme} {probe.admin_token}"})
        expect_status(admin, 200, f"the admin token sent as 'Authorization: {scheme} …' "
                                  "(WP-AUTH-5)")
        sent += 2
    token = probe.tokens["bob"]
    for header in (f"Basic {token}", f"Bearer{token}", f"bearerx {token}", "Bearer"):
        answer = probe.request("GET", "/v1/feed", headers={"Authorization": header})
        refused(answer, _what(probe, header, "WP-AUTH-1, WP-AUTH-2"), {"UNAUTHENTICATED": None})
        sent += 1
    return sent + _spaces(probe) + _controls(probe)


def _what(probe: Probe, header: str, ids: str) -> str:
    """The input as a message shows it: secrets masked, controls and runs of spaces visible."""
    return f"Authorization: {shown_value(probe.masked(header))} ({ids})"


def _spaces(probe: Probe) -> int:
    """``Bearer`` and the token apart by two or three spaces: RFC 6750 §2.1 writes credentials
    as ``"Bearer" 1*SP b64token``, so a server may serve it as if one space (the success the
    same request gets with one) or refuse it as a malformed credential: 401 in the envelope
    (WP-AUTH-2)."""
    token = probe.tokens["bob"]
    one = probe.request("GET", "/v1/feed", headers={"Authorization": f"Bearer {token}"})
    expect_status(one, 200, "a feed read with 'Authorization: Bearer <token>' (WP-AUTH-1)")
    for spaces in ("  ", "   "):
        header = f"Bearer{spaces}{token}"
        answer = probe.request("GET", "/v1/feed", headers={"Authorization": header})
        what = _what(probe, header, "WP-AUTH-1, WP-AUTH-2, RFC 6750 §2.1")
        if answer.status_code < 300 and answer.status_code != one.status_code:
            raise Finding(f"{what}: answered {answer.status_code}; served as if one space it "
                          f"gets {one.status_code}, refused 401 UNAUTHENTICATED")
        if answer.status_code >= 300:
            refused(answer, f"{what} (or served as with one space: {one.status_code})",
                    {"UNAUTHENTICATED": None})
    return 3


def _controls(probe: Probe) -> int:
    """A control character (DEL) in ``Authorization``: the credential is malformed, 401 in the
    envelope (WP-AUTH-2); or the server's HTTP stack refuses the head, ``400 INVALID_REQUEST``
    naming ``headers`` (docs/spec.md: a head a parser cannot take or could read otherwise),
    perhaps closing the connection after it. Never a success, never a ``5xx`` (WP-ERR-5)."""
    for header in ("Bearer \x7f", f"Bearer {probe.tokens['bob']}\x7f"):
        answer = probe.request("GET", "/v1/feed", headers={"Authorization": header})
        refused(answer, _what(probe, header, "WP-AUTH-2, WP-ERR-5"),
                {"UNAUTHENTICATED": None, "INVALID_REQUEST": "headers"})
    return 2


HOOKS = (("GET", "/_test/clock"), ("POST", "/_test/clock"), ("GET", "/_test/faults"),
         ("POST", "/_test/faults"), ("DELETE", "/_test/faults"), ("POST", "/_test/restart"),
         ("GET", "/_test/restart"))


def hooks_invisible(probe: Probe) -> int:
    """Without test hooks, every ``/_test/…`` route answers exactly like an unknown path of
    ``/_test/``, with no credential, the admin token, a data token or a wrong one."""
    unknown = probe.request("GET", "/_test/no-such-hook")
    refused(unknown, "GET of an unknown path", {"NOT_FOUND": None})
    sent = 1
    for who in (None, "admin", "bob"):
        for method, path in HOOKS:
            answer = probe.request(method, path, who=who, body={"advance_ms": 1})
            shown = f"{method} {path} ({'no credential' if who is None else who})"
            if (answer.status_code, answer.content) != (unknown.status_code, unknown.content):
                raise Finding(f"{shown} answers {answer.status_code} {answer.text[:120]!r}, "
                              f"an unknown path {unknown.status_code} {unknown.text[:120]!r}: "
                              "hooks that are off must be invisible (WP-HOOK-1)")
            sent += 1
    return sent


OTHER_TYPES = ("text/plain", "application/x-www-form-urlencoded", "application/xml",
               "text/json", "multipart/form-data; boundary=x", "application/jsonx")


def json_content_types(probe: Probe) -> int:
    """A JSON route refuses a body under another content type (naming ``content-type``) and
    sends nothing; it takes ``application/json`` with parameters and a body without one."""
    sent = 0

    def send(content_type: str | None) -> int:
        body = (f'{{"request_id": "{probe.rid("ct")}", "recipient_ids": ["bob"], '
                '"thread": {"new": true}, "kind": "info", "subject": "s", '
                '"body": {"text": "t"}}').encode()
        headers = {} if content_type is None else {"Content-Type": content_type}
        answer = probe.request("POST", "/v1/messages", who="alice", content=body,
                               headers=headers)
        if content_type in OTHER_TYPES:
            invalid(answer, f"a JSON body sent as {content_type!r}", "content-type")
        else:
            expect_status(answer, 201, f"a send with Content-Type {content_type!r}")
        return 1

    for content_type in OTHER_TYPES:
        sent += send(content_type)
        admin = probe.request("POST", f"/admin/v1/spaces/{probe.space}/actors", who="admin",
                              content=b'{"request_id": "' + probe.rid("ct").encode()
                              + b'", "actor_id": "eve", "kind": "agent", '
                              b'"display_name": "eve"}',
                              headers={"Content-Type": content_type})
        invalid(admin, f"an admin body sent as {content_type!r}", "content-type")
        sent += 1
    messages = [item for item in probe.inbox("bob") if item["type"] == "message"]
    if messages:
        raise Finding(f"{len(messages)} message(s) sent under another content type "
                      "(WP-HTTP-2)")
    for accepted in ("application/json", "application/json; charset=utf-8", None):
        sent += send(accepted)
    return sent


def query_parameters(probe: Probe) -> int:
    """An unknown or repeated query parameter is ``400`` naming it, on routes that take
    parameters and on routes that take none, on both planes."""
    sent = 0
    for path, who in (("/v1/describe", None), ("/openapi.json", None), ("/v1/feed", "bob"),
                      (f"/admin/v1/spaces/{probe.space}", "admin")):
        invalid(probe.request("GET", path + "?x-unknown=1", who=who),
                f"GET {path}?x-unknown=1 (WP-HTTP-4)", "x-unknown")
        sent += 1
    invalid(probe.request("GET", "/v1/feed?limit=1&limit=2", who="bob"),
            "GET /v1/feed?limit=1&limit=2 (WP-HTTP-4)", "limit")
    expect_status(probe.request("GET", "/v1/feed?limit=1", who="bob"), 200,
                  "GET /v1/feed?limit=1")
    return sent + 2


CHECKS = (
    HostileCheck("auth_scheme", "Authorization 'bearer', 'BEARER', 'bEaReR' on the data and "
                 "control planes are the Bearer scheme; other schemes and spellings are 401; "
                 "two spaces after Bearer are 401 or served as one (RFC 6750 §2.1); a DEL is "
                 "401 or 400 naming headers",
                 ("WP-AUTH-1", "WP-AUTH-2", "WP-AUTH-5", "WP-ERR-1", "WP-ERR-5"), auth_scheme),
    HostileCheck("hooks_invisible", "/_test/* of a target without test hooks answers exactly "
                 "like an unknown path, with or without a credential",
                 ("WP-HOOK-1", "WP-HTTP-5", "WP-ERR-1"), hooks_invisible,
                 needs="no test hooks"),
    HostileCheck("json_content_types", "JSON routes refuse text/plain, form, XML and "
                 "look-alike content types naming content-type, and take application/json "
                 "with parameters or no content type",
                 ("WP-HTTP-1", "WP-HTTP-2", "WP-ERR-1"), json_content_types),
    HostileCheck("query_parameters", "an unknown or repeated query parameter is 400 naming "
                 "it, on routes with parameters and without, on both planes",
                 ("WP-HTTP-4", "WP-ERR-1"), query_parameters),
)
