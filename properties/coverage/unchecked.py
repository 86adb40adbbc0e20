"""The requirement ids of docs/protocol.md that the kit does not check, each with why it cannot
be observed from outside over HTTP. An id that gains a check loses its line here."""

from __future__ import annotations

#: id -> why the kit does not check it.
NOT_CHECKED: dict[str, str] = {
    "WP-VAL-8": "a head at 2^53−1 takes 2^53−1 publications to reach, and no request of the "
                "API sets a head (the kit checks the expected_revision bounds, WP-VAL-7)",
    "WP-VAL-10": "a sequence counter at 2^63−1 takes 2^63−1 publications to reach, and no "
                 "request of the API sets the counter",
    "WP-AUTH-4": "how a server stores a token's secret shows in no answer (a digest and a "
                 "readable copy answer alike), and a comparison's timing is far below the "
                 "noise of HTTP in a bounded run",
    "WP-RCPT-9": "the view must change between an ACK's visibility check and its commit, "
                 "inside one request: no hook or fault point pauses a request there, so the "
                 "kit cannot place a view change in that window from outside",
    "WP-LOAD-2": "memory per request, and whether blob content is held whole, are inside the "
                 "server: every answer is the same either way (waypost bench publish measures "
                 "the reference's memory)",
    "WP-LOAD-6": "the limits are each deployment's own (a SHOULD with no published value), "
                 "and cutting a slow client off takes a connection held open past them: "
                 "tests/reference/http/test_connection_limits.py checks the reference's over raw "
                 "sockets",
    "WP-LOAD-9": "the send timeout is each deployment's own (a SHOULD with no published "
                 "value): tests/reference/http/test_connection_limits.py checks the reference's",
}
