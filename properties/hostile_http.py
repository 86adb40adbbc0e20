"""Hostile HTTP: the letter case of the bearer scheme, test hooks a target runs without, JSON
routes given another content type, and query parameters a route does not take."""

from __future__ import annotations

from waypost.properties.hostile import (
    Finding,
    HostileCheck,
    Probe,
    expect_status,
    invalid,
    refused,
)


def auth_scheme(probe: Probe) -> int:
    """``bearer`` in any letter case is the Bearer scheme, on both planes; another scheme is
    the one 401 of every bad credential."""
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
    for header in (f"Basic {probe.tokens['bob']}", f"Bearer{probe.tokens['bob']}",
                   f"Bearer  {probe.tokens['bob']}", f"bearerx {probe.tokens['bob']}",
                   "Bearer", "Bearer \x7f"):
        answer = probe.request("GET", "/v1/feed", headers={"Authorization": header})
        refused(answer, f"Authorization {header[:12]!r}…", {"UNAUTHENTICATED": None})
        sent += 1
    return sent


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
                 "control planes are the Bearer scheme; other schemes and spellings are 401",
                 ("WP-AUTH-1", "WP-AUTH-2", "WP-AUTH-5", "WP-ERR-1"), auth_scheme),
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
