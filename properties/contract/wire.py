"""Contract check of request heads that do not parse as RFC 9112 defines them (protocol.md
WP-LOAD-8), over a raw connection: each is ``400 INVALID_REQUEST`` naming ``headers`` with
``Connection: close``, and the request pipelined behind it is never answered. Heads RFC 9112
lets a server read leniently (a bare LF, a folded line, one ``Content-Length`` twice) may be
refused so too, or answered, and then the connection closes all the same."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from waypost.properties.hostile.probes import Finding, HostileCheck, Probe, invalid
from waypost.properties.hostile.wire import WIRE_SECONDS, Answer, exchange

#: Heads that do not parse (``{host}`` is the target's), with the RFC 9112 rule each breaks.
UNPARSABLE = (
    ("whitespace between a field name and its colon (RFC 9112 §5.1)",
     "GET /v1/describe HTTP/1.1\r\nHost: {host}\r\nX-Kit : 1\r\n\r\n"),
    ("a field line without a colon (§5)",
     "GET /v1/describe HTTP/1.1\r\nHost: {host}\r\nX-Kit\r\n\r\n"),
    ("a Content-Length that is no number (§6.3)",
     "POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nContent-Length: abc\r\n\r\n"),
    ("a Content-Length with two different values (§6.3)",
     "POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2, 3\r\n\r\n{{}}"),
    ("an HTTP/1.1 request without Host (§3.2)", "GET /v1/describe HTTP/1.1\r\n\r\n"),
    ("a Transfer-Encoding whose last coding is not chunked (§6.3)",
     "POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: gzip\r\n\r\n"),
    ("a request line without a target or a version (§3)", "HELLO\r\nHost: {host}\r\n\r\n"))
#: Heads RFC 9112 lets a server refuse or read leniently.
LENIENT = (
    ("a bare LF ending each line (§2.2)", "GET /v1/describe HTTP/1.1\nHost: {host}\n\n"),
    ("an obsolete line fold (§5.2)",
     "GET /v1/describe HTTP/1.1\r\nHost: {host}\r\nX-Kit: 1\r\n 2\r\n\r\n"),
    ("Content-Length twice with one value (RFC 9110 §8.6)",
     "GET /v1/describe HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nContent-Length: 0"
     "\r\n\r\n"))
#: The request sent right behind each head, on the same connection.
BEHIND = "GET /v1/describe HTTP/1.1\r\nHost: {host}\r\n\r\n"


def _refused(answer: Answer, what: str) -> None:
    """``400 INVALID_REQUEST`` naming ``headers``, with ``Connection: close``."""
    if answer.status != 400:
        raise Finding(f"{what}: answered {answer.status}, expected 400 (WP-LOAD-8)")
    invalid(httpx.Response(400, content=answer.body,
                           headers={"content-type": answer.headers.get("content-type", "")}),
            f"{what} (WP-LOAD-8)", "headers")
    if "close" not in answer.headers.get("connection", "").lower():
        raise Finding(f"{what}: the 400 does not carry Connection: close (WP-LOAD-8)")


def malformed_heads(probe: Probe) -> int:
    """Each head that does not parse is refused and closed; each lenient one refused so, or
    answered (never with a 5xx); in both cases nothing pipelined behind it is answered and
    the connection closes (WP-LOAD-8)."""
    host = urlsplit(str(probe.client.base_url)).netloc
    for lenient, heads in ((False, UNPARSABLE), (True, LENIENT)):
        for what, head in heads:
            seen = exchange(probe, (head + BEHIND).format(host=host).encode("latin-1"))
            if not seen.answers:
                raise Finding(f"{what}: no answer within {WIRE_SECONDS:g} s (WP-LOAD-8)")
            answer = seen.answers[0]
            if not lenient or answer.status == 400:
                _refused(answer, what)
            elif answer.status >= 500:
                raise Finding(f"{what}: answered {answer.status}; a server reads such a head "
                              "leniently or refuses it with 400 (WP-LOAD-8, WP-ERR-5)")
            if len(seen.answers) > 1:
                raise Finding(f"{what}: the request pipelined behind it was answered too "
                              f"({seen.answers[1].status}) (WP-LOAD-8)")
            if not seen.closed:
                raise Finding(f"{what}: the connection stayed open after the answer "
                              "(WP-LOAD-8)")
    return probe.requests


CHECKS = (
    HostileCheck("malformed_heads", "heads that do not parse (a space before a colon, no "
                 "colon, a bad or split Content-Length, no Host, gzip last, no request line): "
                 "400 naming headers and closed; lenient ones (bare LF, a folded line, one "
                 "Content-Length twice) refused or answered, then closed (a raw connection)",
                 ("WP-LOAD-8", "WP-ERR-1", "WP-ERR-5"), malformed_heads,
                 needs="a raw connection"),
)
