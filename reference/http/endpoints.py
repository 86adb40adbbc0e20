"""How an operation becomes an HTTP endpoint: auth, body, envelope, replay header."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from waypost.reference.domain import faults
from waypost.reference.domain.errors import (
    InvalidRequest,
    MissingScope,
    ResourceLimit,
    StorageUnavailable,
    Unauthenticated,
    Unavailable,
    WaypostError,
    internal_error,
)
from waypost.reference.domain.parsing import json_body, json_body_steps
from waypost.reference.domain.principal import Principal
from waypost.reference.domain.remembered import StalePrincipal
from waypost.reference.service.auth import (
    authenticate,
    check_admin,
    presented_digest,
    still_live,
)
from waypost.reference.service.context import Context, Outcome

log = logging.getLogger("waypost.http")

Handler = Callable[[Request], Awaitable[Response]]

#: A JSON body larger than this is parsed in steps (:func:`_parsed_in_steps`); one this size is
#: about a millisecond of the event loop's time at most in one piece (a 1 MiB body of small
#: objects takes the C parser 25–75 ms).
STEPWISE_BYTES = 32 * 1024


def context(request: Request) -> Context:
    ctx: Context = request.app.state.context
    return ctx


def error_response(error: WaypostError) -> JSONResponse:
    headers = {"Waypost-Replayed": "true"} if error.replayed else {}
    if error.code == "SUBMISSION_PENDING":
        headers["Retry-After"] = "1"
    return JSONResponse(error.envelope(), error.status, headers=headers)


def respond(outcome: Outcome) -> JSONResponse:
    headers = {"Waypost-Replayed": "true"} if outcome.replayed else {}
    return JSONResponse(outcome.body, outcome.status, headers=headers)


def check_json_type(content_type: str | None) -> None:
    """A JSON body comes as ``application/json`` (parameters such as ``charset`` allowed) or
    without a Content-Type; another type is ``400`` naming ``content-type`` (WP-HTTP-2)."""
    if content_type is None:
        return
    if content_type.split(";", 1)[0].strip().lower() != "application/json":
        raise InvalidRequest("a JSON body needs Content-Type: application/json",
                             field="content-type")


#: Where a request's scope keeps what this module learnt of it (plain keys: Starlette's
#: ``request.state`` costs an object and a raised AttributeError per request to ask).
_JSON, _REMEMBERED, _LARGE = "waypost.json", "waypost.remembered", "waypost.large"
#: Elements of a large body taken apart between two turns of the others (:func:`_released`).
RELEASED_PER_STEP = 4096


async def read_json(request: Request) -> Any:
    """The request body as JSON, capped at the published ``request_bytes`` while it streams;
    kept on the request, so that an operation run again (:class:`StalePrincipal`) reads it
    once."""
    scope = request.scope
    if _JSON not in scope:
        scope[_JSON] = await _streamed_json(request)
    return scope[_JSON]


def remembered(request: Request) -> bool:
    """Whether the request runs as a principal checked before, reading nothing first
    (:func:`_remembered`)."""
    return bool(request.scope.get(_REMEMBERED, False))


async def _streamed_json(request: Request) -> Any:
    check_json_type(request.headers.get("content-type"))
    cap = context(request).limits.request_bytes
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise ResourceLimit("request body is too large", limit="request_bytes", max=cap)
        chunks.append(chunk)
    if not size:
        raise InvalidRequest("request body must be JSON", field="body")
    if size > STEPWISE_BYTES:
        request.scope[_LARGE] = True
        return await _parsed_in_steps(context(request), b"".join(chunks))
    return json_body(b"".join(chunks))


async def _parsed_in_steps(ctx: Context, raw: bytes) -> Any:
    """A large body parsed on the event loop a bounded slice at a time, one body at a time:
    the JSON parser holds the interpreter lock for a whole document (on a thread too), and
    bodies parsed side by side would each take a turn before any other request."""
    async with ctx.large_bodies:
        parse = json_body_steps(raw)
        try:
            while True:
                started = time.perf_counter()
                next(parse)
                await _others_turn(started)
        except StopIteration as done:
            return done.value


async def _others_turn(started: float) -> None:
    """After a step of bulk work begun at ``started``: the loop is the others' for as long
    as the step took. (Yielding for one turn only, the next step would run in every turn a
    request of theirs takes, between its read, its work and its answer.)"""
    await asyncio.sleep(time.perf_counter() - started)


async def enveloped(work: Callable[[], Awaitable[Outcome]],
                    armed: faults.Faults | None = None) -> Response:
    """Run an operation; every failure becomes the §7 envelope, never a stack trace. For the
    data plane (``armed`` given), a fault at ``response.before`` or a ``lose_response`` that
    fired drops the reply."""
    faults.begin_request()
    response = await _answer(work)
    if armed is None:
        return response
    try:
        armed.hit("response.before")
    except StorageUnavailable:
        return error_response(Unavailable("storage is temporarily unavailable; retry"))
    if faults.reply_lost():
        raise faults.Abandoned("lose_response")
    return response


async def _answer(work: Callable[[], Awaitable[Outcome]]) -> Response:
    try:
        return respond(await work())
    except WaypostError as error:
        return error_response(error)
    except StorageUnavailable:
        return error_response(Unavailable("storage is temporarily unavailable; retry"))
    except ClientDisconnect:
        raise  # nobody to answer: the server logs one line (reference/http/connection_limits.py)
    except Exception:
        log.exception("internal error")
        return error_response(internal_error())


def query_params(request: Request, *known: str) -> dict[str, str]:
    """The query parameters, each known and given once (``INVALID_REQUEST`` naming the first
    that is not): a route that takes none refuses any."""
    if not request.scope.get("query_string"):  # most requests: nothing to parse
        return {}
    for name in request.query_params:
        if name not in known:
            raise InvalidRequest(f"unknown query parameter {name}", field=name)
        if len(request.query_params.getlist(name)) > 1:
            raise InvalidRequest(f"query parameter {name} is repeated", field=name)
    return dict(request.query_params)


def data(operation: Callable[[Context, Principal, Request], Awaitable[Outcome]],
         *queries: str, checks_token: bool = False) -> Handler:
    """A data-plane endpoint: bearer token first, then its query parameters (``queries``,
    none by default), then the operation. With ``checks_token`` (the operation checks the
    token's liveness itself, in the same transaction or snapshot as its work), see
    :func:`_remembered`."""

    async def endpoint(request: Request) -> Response:
        ctx = context(request)

        async def work() -> Outcome:
            authorization = request.headers.get("authorization")
            if checks_token:
                return await _remembered(ctx, authorization, request, operation, queries)
            principal = await authenticate(ctx, authorization)
            query_params(request, *queries)
            return await operation(ctx, principal, request)
        return _releasing(request, await enveloped(lambda: _braked(ctx, request, work),
                                                   ctx.faults))

    return endpoint


def _releasing(request: Request, response: Response) -> Response:
    """The response; after it is sent, a large body's value taken apart (:func:`_released`)."""
    if request.scope.get(_LARGE):
        response.background = BackgroundTask(_released, request.scope)
    return response


async def _released(scope: MutableMapping[str, Any]) -> None:
    """Take a large body's value apart a slice at a time, once its answer is sent: dropping
    it at once frees every object it holds in one go (1 MiB of ``[{},…]`` is some 350,000
    objects, 5 ms). A container something else still holds is left whole to its holder."""
    pending: list[Any] = [scope.pop(_JSON, None)]
    started = time.perf_counter()
    while pending:
        node = pending.pop()
        if type(node) not in (list, dict) or sys.getrefcount(node) > 2:
            continue  # a scalar, or held elsewhere too (2: ``node`` and the call's argument)
        if type(node) is dict:
            node = _values_of(node)
        while node:
            taken = node[-RELEASED_PER_STEP:]
            del node[-RELEASED_PER_STEP:]
            pending += [child for child in taken if type(child) in (list, dict) and child]
            del taken  # the scalars and empty containers among them, freed
            await _others_turn(started)
            started = time.perf_counter()


def _values_of(node: dict[str, Any]) -> list[Any]:
    values = list(node.values())
    node.clear()
    return values


async def _remembered(ctx: Context, authorization: str | None, request: Request,
                      operation: Callable[[Context, Principal, Request], Awaitable[Outcome]],
                      queries: tuple[str, ...]) -> Outcome:
    """Run ``operation`` as a principal checked before (:mod:`...domain.remembered`), reading
    nothing first: the operation's own check (a plan's guard, a read's liveness and view
    check in the page's snapshot) decides whether the token is still live. Answers stay as a
    full check first would give them: on any failure the token is checked in full (a token no
    longer live answers 401, not the failure) unless no control-plane write committed since its
    check and it has not expired (:func:`...service.auth.still_live`: a token without the
    operation's scope costs no read), an operation that found its principal stale
    (:class:`StalePrincipal`) runs again from the full check, and a dead token is forgotten.
    While a fault is armed (test deployments) every request is checked in full first, so a
    dead token never reaches a fault point."""
    presented = presented_digest(authorization)
    known = None if presented is None or ctx.faults.armed else ctx.remembered.get(presented)
    if presented is None or known is None:
        return await _checked_in_full(ctx, authorization, request, operation, queries)
    principal, checked_at = known
    request.scope[_REMEMBERED] = True
    try:
        query_params(request, *queries)
        return await operation(ctx, principal, request)
    except Unauthenticated:
        ctx.remembered.forget(presented)
        raise
    except StalePrincipal:
        ctx.remembered.forget(presented)
    except (ClientDisconnect, faults.Abandoned):
        raise
    except Exception:
        if still_live(ctx, principal, checked_at):
            raise  # the token is as its check found it: the failure is the answer
        ctx.remembered.forget(presented)
        # 401 if the token died meanwhile; storage unavailable now, the failure stands
        with contextlib.suppress(StorageUnavailable):
            await authenticate(ctx, authorization)
        raise
    request.scope[_REMEMBERED] = False
    return await _checked_in_full(ctx, authorization, request, operation, queries)


async def _checked_in_full(ctx: Context, authorization: str | None, request: Request,
                           operation: Callable[[Context, Principal, Request], Awaitable[Outcome]],
                           queries: tuple[str, ...]) -> Outcome:
    principal = await authenticate(ctx, authorization)
    query_params(request, *queries)
    return await operation(ctx, principal, request)


async def _braked(ctx: Context, request: Request, work: Callable[[], Awaitable[Outcome]],
                  plane: str = "data") -> Outcome:
    """``work``, a refusal of its credential held as long as the refusal brake says
    (:mod:`...domain.refusal_brake`; none on a test deployment): a ``403`` for the missing
    scope of an operation, found before its body, by the token's digest, a ``401`` by the
    client's address (a refused credential may be made up anew each time)."""
    try:
        return await work()
    except Unauthenticated:
        await _held(ctx, f"{plane} {request.client.host if request.client else ''}")
        raise
    except MissingScope:
        digest = presented_digest(request.headers.get("authorization"))
        if digest is not None:
            await _held(ctx, digest)
        raise


async def _held(ctx: Context, key: bytes | str) -> None:
    held = 0.0 if ctx.brake is None else ctx.brake.hold(key, time.monotonic())
    if held:
        await asyncio.sleep(held)  # a timer: the loop serves the others meanwhile


def admin(operation: Callable[[Context, Request], Awaitable[Outcome]]) -> Handler:
    """A control-plane endpoint: the operator's admin token first; no query parameters."""

    async def endpoint(request: Request) -> Response:
        ctx = context(request)

        async def work() -> Outcome:
            check_admin(ctx, request.headers.get("authorization"))
            query_params(request)
            return await operation(ctx, request)
        # the control plane and test hooks have no fault points
        return _releasing(request, await enveloped(lambda: _braked(ctx, request, work, "admin")))

    return endpoint


class CloseOnAbandon:
    """ASGI middleware: a request abandoned at a fault point ends without an HTTP response. The
    answer is started and never finished, so the server closes the connection (a client sees
    the connection drop, as if the process had died)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        started = False

        async def tracking(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except faults.Abandoned:
            if scope["type"] != "http":
                raise
            if not started:
                await send({"type": "http.response.start", "status": 500,
                            "headers": [(b"content-length", b"1")]})
