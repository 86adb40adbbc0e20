"""The requirement ids of docs/protocol.md that the kit does not check, each with why it cannot
be observed from outside. An id that gains a check loses its line here."""

from __future__ import annotations

#: id -> why the kit does not check it.
NOT_CHECKED: dict[str, str] = {
    "WP-VAL-5": "unguessability is not observable from outside in a bounded run",
    "WP-VAL-10": "a sequence counter at 2^63−1 cannot be reached through the API",
    "WP-VAL-13": "no check parses the exact form of every time the server writes",
    "WP-VAL-15": "the vectors hold the path grammar; no check sends an over-long path",
    "WP-AUTH-3": "the kit issues no token with an expiry",
    "WP-AUTH-4": "how a server stores secrets is not observable over HTTP",
    "WP-AUTH-12": "no check sends a request wrong in several ways at once to see the order",
    "WP-HTTP-8": "routes are exercised one by one, not checked as a table",
    "WP-HTTP-18": "MCP is optional and the reference offers none",
    "WP-ERR-3": "the model compares codes; the details each code names are checked only "
                "where a property needs them",
    "WP-LOAD-1": "stalls are measured by waypost bench, not checked by the kit",
    "WP-LOAD-2": "memory per request is measured by waypost bench publish, not checked",
    "WP-LOAD-4": "connection limits are a documentation duty",
    "WP-RCPT-9": "the kit cannot change a view between an ACK's visibility check and its "
                 "commit from outside",
    "WP-CTRL-2": "the kit sends each control-plane write once",
    "WP-CTRL-4": "the kit provokes no control-plane failure",
    "WP-CTRL-5": "no check reads through the control plane",
    "WP-CTRL-7": "the kit sends only valid names, URIs and scopes",
    "WP-CTRL-12": "the kit never replays a token issue",
    "WP-CTRL-14": "the kit adds no thread members",
    "WP-HOOK-2": "the kit always calls hooks with the admin token",
}
