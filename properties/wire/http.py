"""The kit's only way to reach a server: HTTP through httpx, every exchange recorded.

Every answer is untrusted input: a path the kit builds from ids a server handed out is checked
before it is sent (:func:`~waypost.properties.wire.untrusted.bad_segment`), a client built by
:func:`~waypost.properties.wire.bounds.bounded_client` reads every answer within the kit's bounds,
and an answer past them (or an id the kit will not send) is a failed check of the property the
call exercises (:data:`ROUTES`), recorded in the session's ledger, never a crash of the run.
The trace keeps bounded excerpts of what was sent and answered, never a whole answer."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import httpx

from waypost.properties.wire.bound_values import ANSWER_BYTES
from waypost.properties.wire.bounds import CAP, OutOfBounds
from waypost.properties.wire.proxy import FaultProxy
from waypost.properties.wire.untrusted import BadId, bad_segment, excerpt, visible

if TYPE_CHECKING:
    from waypost.properties.model.fixture_sets import Fixtures
    from waypost.properties.verdicts.violations import Ledger

#: The status of an exchange whose connection closed without an HTTP answer (or whose answer
#: the kit stopped reading at its bounds).
DROPPED = 0
#: Exchanges one trace keeps: the first half and the latest half, the rest counted.
TRACE_EXCHANGES = 2000

#: Each route the kit's session calls → the requirement ids its answer is held to, the first
#: deciding the property: an answer past the kit's bounds fails them. The control plane and
#: describe belong to no property: there, it ends the example as an error of the run.
ROUTES: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (method, re.compile(pattern), ids) for method, pattern, ids in (
        ("GET", r"/v1/feed", ("WP-FEED-2", "WP-HTTP-13")),
        ("POST", r"/v1/messages", ("WP-HTTP-10",)),
        ("GET", r"/v1/messages/[^/]*", ("WP-HTTP-11", "WP-MSG-12")),
        ("POST", r"/v1/acks", ("WP-HTTP-14",)),
        ("GET", r"/v1/blobs/[^/]*/content", ("WP-UPL-9", "WP-UPL-3")),
        ("*", r"/v1/(blobs|uploads)(/.*)?", ("WP-HTTP-15",)),
        ("GET", r"/v1/collections/[^/]*/revisions/[^/]*/items", ("WP-MEM-23", "WP-HTTP-17")),
        ("GET", r"/v1/collections/[^/]*/revisions/[^/]*", ("WP-HTTP-17", "WP-MEM-22")),
        ("POST", r"/v1/collections/[^/]*/revisions", ("WP-HTTP-16",)),
        ("GET", r"/v1/collections/[^/]*", ("WP-MEM-20",)),
        ("GET", r"/v1/submissions/.*", ("WP-IDEM-13",)),
        ("*", r"/_test/clock", ("WP-HOOK-3",)),
        ("*", r"/_test/faults", ("WP-HOOK-4",)),
        ("*", r"/_test/restart", ("WP-HOOK-5",)),
    ))
#: A walk through pages that does not move on breaks these instead.
WALKS = {"/v1/feed": ("WP-FEED-3", "WP-FEED-5", "WP-FEED-4"), "items": ("WP-MEM-23", "WP-CUR-6")}
_CONTENT = re.compile(r"/v1/blobs/([^/]+)/content")
_METADATA = re.compile(r"/v1/blobs/([^/]+)")


def route_ids(method: str, path: str, bound: str = "") -> tuple[str, ...] | None:
    """The requirement ids an answer to ``method path`` is held to, for the ``bound`` it
    broke (``walk``, ``id`` or another); None for a route of no property."""
    if bound == "walk":
        return WALKS["/v1/feed" if path == "/v1/feed" else "items"]
    ids = next((ids for want, pattern, ids in ROUTES
                if want in ("*", method) and pattern.fullmatch(path)), None)
    if ids is not None and bound == "id":
        return (*ids, "WP-VAL-4")
    return ids


class NeedsAdmin(RuntimeError):
    """A command needs the admin API (the control plane or a test hook), and the run has
    none: it goes through fixtures. Raised before any request is sent."""


@dataclass
class Exchange:
    """One request and its answer, as a replay file shows it."""

    method: str
    path: str
    who: str
    body: Any
    params: dict[str, Any] | None
    status: int
    answer: Any
    replayed: bool

    def as_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "as": self.who, "body": self.body,
                "params": self.params, "status": self.status, "answer": self.answer,
                "replayed": self.replayed}


@dataclass
class Answer:
    status: int
    json: Any
    replayed: bool

    @property
    def code(self) -> str | None:
        """The error code of an envelope, else None."""
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), dict):
            code = self.json["error"].get("code")
            return code if isinstance(code, str) else None
        return None


@dataclass
class Content:
    status: int
    data: bytes
    etag: str


def _payload(response: httpx.Response) -> tuple[Any, bool]:
    """The answer's JSON and True, or what it was instead (bounded) and False."""
    try:
        return response.json(), True
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return {"unparsed": response.text[:500]}, False


#: What httpcore says of a connection closed before any byte of an answer.
UNANSWERED = "without sending a response"


@dataclass
class Session:
    """A target's HTTP client plus the admin token; ``trace`` keeps the exchanges of one run."""

    client: httpx.Client
    admin_token: str
    trace: list[Exchange] = field(default_factory=list)
    record: bool = True
    proxy: FaultProxy | None = None  # network faults for targets without fault points
    hook_faults: int = 0  # faults armed through /_test/faults
    fixtures: Fixtures | None = None  # a run without an admin API: its pre-provisioned sets
    ledger: Ledger | None = None  # where an answer past the kit's bounds fails its check
    declared: dict[str, int] = field(default_factory=dict)  # blob id → size the kit declared
    reported: dict[str, int] = field(default_factory=dict)  # blob id → size its metadata says

    def for_another_thread(self) -> Session:
        """This session over the same client (its proxy, fixtures and ledger), with a trace and
        counts of its own: for a worker or a limit check running beside others."""
        return replace(self, trace=[], hook_faults=0, declared={}, reported={})

    def call(self, method: str, path: str, *, bearer: str, who: str, body: Any = None,
             params: dict[str, Any] | None = None, may_drop: bool = False,
             raw: bytes | None = None) -> Answer:
        """One request. With ``may_drop`` (a fault was armed), a connection that closes
        without an answer is :data:`DROPPED` (status 0) instead of an error of the run.
        ``raw`` is a JSON body sent byte for byte (its length matters), in place of ``body``."""
        shown_body = body if raw is None else f"<{len(raw)} bytes>"
        refused = self._unsendable(method, path, who, shown_body, params)
        if refused is not None:
            return refused
        headers = {"Authorization": f"Bearer {bearer}"}
        if raw is not None:
            headers["Content-Type"] = "application/json"
        try:
            if raw is None:
                response = self._send(method, path, not may_drop, json=body, params=params,
                                      headers=headers)
            else:
                response = self._send(method, path, not may_drop, content=raw, params=params,
                                      headers=headers)
        except httpx.TransportError:
            if not may_drop:
                raise
            self._keep(Exchange(method, path, who, shown_body, params, DROPPED, None, False))
            return Answer(DROPPED, None, False)
        if isinstance(response, OutOfBounds):
            return self._out_of_bounds(response, path, who, shown_body, params)
        payload, parsed = _payload(response)
        if may_drop and response.status_code >= 500 and not parsed:
            # No envelope: a proxy's or an in-process server's stand-in for a connection
            # that closed without an answer.
            self._keep(Exchange(method, path, who, shown_body, params, DROPPED, payload, False))
            return Answer(DROPPED, None, False)
        answer = Answer(response.status_code, payload,
                        response.headers.get("waypost-replayed") == "true")
        self._declared(method, path, body, payload)
        self._reported(method, path, answer.status, payload)
        shown = payload
        if isinstance(payload, dict) and isinstance(payload.get("token"), str):
            shown = {**payload, "token": "<redacted>"}  # replay files carry no secrets
        self._keep(Exchange(method, path, who, shown_body, params, answer.status, shown,
                            answer.replayed))
        return answer

    def put(self, path: str, data: bytes, *, bearer: str, who: str) -> Answer:
        """A raw-bytes PUT (upload content)."""
        sent = f"<{len(data)} bytes>"
        refused = self._unsendable("PUT", path, who, sent, None)
        if refused is not None:
            return refused
        response = self._send("PUT", path, content=data,
                              headers={"Authorization": f"Bearer {bearer}",
                                       "Content-Type": "application/octet-stream"})
        if isinstance(response, OutOfBounds):
            return self._out_of_bounds(response, path, who, sent, None)
        answer = Answer(response.status_code, _payload(response)[0], False)
        self._keep(Exchange("PUT", path, who, sent, None, answer.status, answer.json, False))
        return answer

    def get_bytes(self, path: str, *, bearer: str, who: str,
                  expected: int | None = None) -> Content:
        """A GET whose answer is bytes (blob content): read up to the blob's size as the kit
        knows it (``expected``, the size of the bytes the kit's model wants, or
        :meth:`known_size`; a smaller ``Content-Length`` lowers it), and no more than a read of
        the network past it; content longer is a failed check ("the content is longer than
        its declared N bytes"). A blob of no known size: up to the answer cap."""
        if self._unsendable("GET", path, who, None, None) is not None:
            return Content(DROPPED, b"", "")
        blob = _CONTENT.fullmatch(path)
        size = expected if expected is not None else (
            self.known_size(blob.group(1)) if blob else None)
        response = self._send("GET", path, headers={"Authorization": f"Bearer {bearer}"},
                              extensions={CAP: size} if size is not None else None)
        if isinstance(response, OutOfBounds):
            self._out_of_bounds(response, path, who, None, None)
            return Content(DROPPED, b"", "")
        self._keep(Exchange("GET", path, who, None, None, response.status_code,
                            f"<{len(response.content)} bytes>", False))
        return Content(response.status_code, response.content, response.headers.get("etag", ""))

    def admin(self, method: str, path: str, body: Any = None) -> Answer:
        """A request with the admin token; without one (a run through fixtures) nothing is
        sent and :class:`NeedsAdmin` says what needed it."""
        if not self.admin_token:
            raise NeedsAdmin(f"needs the admin API ({method} {path})")
        return self.call(method, path, bearer=self.admin_token, who="admin", body=body)

    def describe(self) -> Answer:
        """``GET /v1/describe``, which needs no credential (WP-AUTH-1). An answer past the
        kit's bounds publishes nothing (every limit is then ``not published``)."""
        response = self._send("GET", "/v1/describe")
        if isinstance(response, OutOfBounds):
            self._keep(Exchange("GET", "/v1/describe", "anyone", None, None, DROPPED,
                                {"out_of_bounds": str(response)}, False))
            return Answer(DROPPED, {"unparsed": str(response)}, False)
        answer = Answer(response.status_code, _payload(response)[0], False)
        self._keep(Exchange("GET", "/v1/describe", "anyone", None, None, answer.status,
                            answer.json, False))
        return answer

    # ----- untrusted answers -----------------------------------------------------------------

    def _send(self, method: str, path: str, retry_closed: bool = True,
              **options: Any) -> httpx.Response | OutOfBounds:
        """The answer, or the breach of the kit's bounds that ended it: returned, so that the
        failed check made of it is raised outside any handler and chains to nothing. A
        connection the target closed before any byte of an answer (or before the request was
        written) is tried once more on a new one (``retry_closed``, unless a fault was armed):
        a server may close an idle keep-alive connection at any time, and the kit may have sent
        on it meanwhile (RFC 9112, 9.3.1)."""
        for attempt in (1, 2):
            try:
                return self.client.request(method, path, **options)
            except OutOfBounds as breach:
                return breach
            except (httpx.RemoteProtocolError, httpx.WriteError) as closed:
                unsent = isinstance(closed, httpx.WriteError) or UNANSWERED in str(closed)
                if attempt == 2 or not retry_closed or not unsent:
                    raise
        raise AssertionError("unreachable")

    def _unsendable(self, method: str, path: str, who: str, body: Any,
                    params: dict[str, Any] | None) -> Answer | None:
        """None if ``path`` may be sent; else the failed check of an id that is no id (it came
        from an answer: the kit never sends it) and the stand-in answer."""
        bad = bad_segment(path)
        if bad is None:
            return None
        message = (f"{method} {visible(path)[:300]}: the path holds {visible(bad)[:100]!r}, "
                   "which is no id (WP-VAL-4): a server handed it out, the kit does not send it")
        self._keep(Exchange(method, visible(path)[:300], who, excerpt(body), params, DROPPED,
                            {"not_sent": message}, False))
        return self._fail(route_ids(method, path, "id"), message, path, BadId(message))

    def _out_of_bounds(self, breach: OutOfBounds, path: str, who: str, body: Any,
                       params: dict[str, Any] | None) -> Answer:
        """The failed check of an answer past the kit's bounds, and a stand-in answer; a
        target too slow to check (``too_slow``) is no property's failure: it ends the example
        or check in progress as an error of the run, which names it."""
        self._keep(Exchange(breach.method, path, who, body, params, DROPPED,
                            {"out_of_bounds": str(breach)}, False))
        if breach.bound == "too_slow":
            raise breach
        return self._fail(route_ids(breach.method, path, breach.bound), str(breach), path,
                          breach, bound=breach.bound)

    def _fail(self, ids: tuple[str, ...] | None, message: str, path: str,
              error: Exception, **evidence: Any) -> Answer:
        """Fail ``ids`` in the ledger (a violation when the property is enforced); a route of
        no property, or a session without a ledger, raises ``error`` instead."""
        if ids is None or self.ledger is None:
            raise error
        self.ledger.check(ids, False, message, path=visible(path)[:300], **evidence)
        return Answer(DROPPED, {"unparsed": message}, False)

    def known_size(self, blob_id: str) -> int | None:
        """The size the kit declared for a blob it prepared (WP-UPL-2), or the size its
        metadata said if smaller; a size only a server said counts under the answer cap only
        (the server's word cannot raise the kit's bounds). None: no size known."""
        declared, reported = self.declared.get(blob_id), self.reported.get(blob_id)
        most = declared if declared is not None else ANSWER_BYTES
        return reported if reported is not None and reported < most else declared

    def _reported(self, method: str, path: str, status: int, payload: Any) -> None:
        """Remember the size a blob's metadata answer says (``GET /v1/blobs/{id}``)."""
        blob = _METADATA.fullmatch(path) if method == "GET" and status == 200 else None
        size = payload.get("size") if blob is not None and isinstance(payload, dict) else None
        if blob is not None and type(size) is int and size >= 0:
            self.reported[blob.group(1)] = size

    def _declared(self, method: str, path: str, body: Any, payload: Any) -> None:
        """Remember the size the kit declared for a blob it prepared."""
        if method == "POST" and path == "/v1/blobs" and isinstance(body, dict) \
                and isinstance(body.get("size"), int) and isinstance(payload, dict) \
                and isinstance(payload.get("blob_id"), str):
            self.declared[payload["blob_id"]] = body["size"]

    def _keep(self, exchange: Exchange) -> None:
        """Add an exchange to the trace, bounded: excerpts of body and answer; past
        :data:`TRACE_EXCHANGES`, the middle of the trace is counted, not kept."""
        if not self.record:
            return
        exchange.body, exchange.answer = excerpt(exchange.body), excerpt(exchange.answer)
        half = TRACE_EXCHANGES // 2
        if len(self.trace) >= TRACE_EXCHANGES:
            gap = self.trace[half]
            if gap.method != "…":
                gap = Exchange("…", "", "", None, None, DROPPED, 0, False)
                self.trace.insert(half, gap)
            gap.answer = int(gap.answer) + 1  # exchanges left out here
            del self.trace[half + 1]
        self.trace.append(exchange)
