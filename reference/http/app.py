"""The Starlette application: routes of protocol.md §6 and the served OpenAPI document."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from waypost import __version__
from waypost.reference.domain import faults, parsing, values
from waypost.reference.domain.clock import MAX_ADVANCE_MS
from waypost.reference.domain.errors import (
    InvalidRequest,
    MissingScope,
    NotFound,
    internal_error,
)
from waypost.reference.domain.principal import Principal
from waypost.reference.http import openapi
from waypost.reference.http.dashboard import routes as dashboard_routes
from waypost.reference.http.downloads import blob_content
from waypost.reference.http.endpoints import (
    CloseOnAbandon,
    Handler,
    admin,
    context,
    data,
    error_response,
    query_params,
    read_json,
    remembered,
)
from waypost.reference.service import (
    acks,
    blobs,
    control,
    feed,
    listings,
    memory,
    messages,
    submissions,
)
from waypost.reference.service.context import Context, Outcome

FEED_QUERY = ("cursor", "limit", "wait")
ITEMS_QUERY = ("cursor", "limit", "include_tombstones")


async def describe(request: Request) -> Response:
    ctx = context(request)
    try:
        query_params(request)
    except InvalidRequest as refused:
        return error_response(refused)
    return JSONResponse({
        "protocol": "waypost/1",
        "server": f"waypost-reference/{__version__}",
        "limits": ctx.limits.published(),
        "capabilities": {"adapter": ctx.driver.name, "test_hooks": ctx.test_hooks, "mcp": False,
                         "operations": ["message.send", "receipt.ack", "blob.prepare",
                                        "blob.commit", "memory.publish"]},
    })


async def openapi_document(request: Request) -> Response:
    try:
        query_params(request)
    except InvalidRequest as refused:
        return error_response(refused)
    return JSONResponse(openapi.document())


def _scoped(principal: Principal, scope: str) -> None:
    """The operation's scope, checked before its body is read (WP-AUTH-12): a token without it
    costs no read and no parse of up to ``request_bytes``."""
    if not principal.has(scope):
        raise MissingScope(scope)


async def _send(ctx: Context, principal: Principal, request: Request) -> Outcome:
    _scoped(principal, "message.send")
    return await messages.send(ctx, principal, await read_json(request))


async def _message(ctx: Context, principal: Principal, request: Request) -> Outcome:
    return await messages.read_message(ctx, principal, request.path_params["message_id"])


async def _feed(ctx: Context, principal: Principal, request: Request) -> Outcome:
    query = dict(request.query_params)  # checked by data(): FEED_QUERY
    return await feed.read_feed(ctx, principal, query.get("cursor"), query.get("limit"),
                                query.get("wait"), remembered(request))


async def _ack(ctx: Context, principal: Principal, request: Request) -> Outcome:
    _scoped(principal, "receipt.write")
    return await acks.acknowledge(ctx, principal, await read_json(request),
                                  remembered(request))


async def _prepare(ctx: Context, principal: Principal, request: Request) -> Outcome:
    _scoped(principal, "blob.write")
    return await blobs.prepare(ctx, principal, await read_json(request))


async def _put_content(ctx: Context, principal: Principal, request: Request) -> Outcome:
    return await blobs.put_content(ctx, principal, request.path_params["upload_id"],
                                   request.stream())


async def _seal(ctx: Context, principal: Principal, request: Request) -> Outcome:
    _scoped(principal, "blob.write")
    return await blobs.commit(ctx, principal, request.path_params["upload_id"],
                              await read_json(request))


async def _blob(ctx: Context, principal: Principal, request: Request) -> Outcome:
    return await blobs.read_blob(ctx, principal, request.path_params["blob_id"])


async def _publish(ctx: Context, principal: Principal, request: Request) -> Outcome:
    _scoped(principal, "memory.write")
    return await memory.publish(ctx, principal, request.path_params["collection_id"],
                                await read_json(request))


async def _collection(ctx: Context, principal: Principal, request: Request) -> Outcome:
    return await memory.read_collection(ctx, principal, request.path_params["collection_id"])


async def _revision(ctx: Context, principal: Principal, request: Request) -> Outcome:
    return await memory.read_revision(ctx, principal, request.path_params["collection_id"],
                                      request.path_params["revision"])


async def _revision_items(ctx: Context, principal: Principal, request: Request) -> Outcome:
    query = dict(request.query_params)  # checked by data(): ITEMS_QUERY
    return await memory.read_items(ctx, principal, request.path_params["collection_id"],
                                   request.path_params["revision"], query)


def test_hook(operation: Callable[[Context, Request], Awaitable[Outcome]]) -> Handler:
    """A test hook endpoint: the admin token, and only with ``--test-hooks`` (otherwise it
    answers exactly like an unknown path)."""
    hook = admin(operation)

    async def endpoint(request: Request) -> Response:
        if not context(request).test_hooks:  # before the token: nothing tells the path exists
            return error_response(NotFound("no such path"))
        return await hook(request)
    return endpoint


async def _clock(ctx: Context, request: Request) -> Outcome:
    """Read or advance the server clock."""
    if request.method == "POST":
        body = parsing.fields(await read_json(request), "", ["advance_ms"])
        ctx.clock.advance(values.integer(body["advance_ms"], "advance_ms", 0, MAX_ADVANCE_MS))
    return Outcome(200, {"now": values.format_timestamp(ctx.clock.now_ms())})


async def _faults(ctx: Context, request: Request) -> Outcome:
    """Arm a fault point (POST {point, action, times?}), list (GET) or clear (DELETE) them."""
    if request.method == "POST":
        body = parsing.fields(await read_json(request), "", ["point", "action"], ["times"])
        point = parsing.one_of(body["point"], "point", faults.POINTS)
        action = parsing.one_of(body["action"], "action", faults.ACTIONS)
        times = values.integer(body.get("times", 1), "times", 1, 1000)
        ctx.faults.arm(point, action, times)
    elif request.method == "DELETE":
        ctx.faults.clear()
    return Outcome(200, {"armed": [{"point": point, "action": action, "times": times}
                                   for point, (action, times) in ctx.faults.armed.items()],
                         "points": list(faults.POINTS), "actions": list(faults.ACTIONS),
                         "crash_mode": "exit" if ctx.faults.exit_on_crash else "abandon"})


async def _restart(ctx: Context, request: Request) -> Outcome:
    """Drop every in-memory state and reopen the stores, as a process restart would (the test
    clock keeps its offset; armed faults are gone)."""
    parsing.fields(await read_json(request), "", [])
    await request.app.state.restart()
    return Outcome(200, {"restarted": True})


clock, faults_hook, restart_hook = test_hook(_clock), test_hook(_faults), test_hook(_restart)


async def _submission(ctx: Context, principal: Principal, request: Request) -> Outcome:
    return await submissions.lookup(ctx, principal, request.path_params["operation"],
                                    request.path_params["request_id"])


def _admin_body(fn: Any, *names: str) -> Any:
    async def operation(ctx: Context, request: Request) -> Outcome:
        args = [request.path_params[name] for name in names]
        outcome: Outcome = await fn(ctx, *args, await read_json(request))
        return outcome
    return admin(operation)


async def _spaces(ctx: Context, request: Request) -> Outcome:
    return await listings.spaces(ctx)


async def _space(ctx: Context, request: Request) -> Outcome:
    return await listings.space(ctx, request.path_params["space_id"])


ROUTES = [
    Route("/v1/describe", describe, methods=["GET"]),
    Route("/openapi.json", openapi_document, methods=["GET"]),
    Route("/v1/messages", data(_send, checks_token=True), methods=["POST"]),
    Route("/v1/messages/{message_id}", data(_message), methods=["GET"]),
    Route("/v1/feed", data(_feed, *FEED_QUERY, checks_token=True), methods=["GET"]),
    Route("/v1/acks", data(_ack, checks_token=True), methods=["POST"]),
    Route("/v1/submissions/{operation}/{request_id}", data(_submission), methods=["GET"]),
    Route("/v1/blobs", data(_prepare, checks_token=True), methods=["POST"]),
    Route("/v1/uploads/{upload_id}/content", data(_put_content, checks_token=True),
          methods=["PUT"]),
    Route("/v1/uploads/{upload_id}/commit", data(_seal, checks_token=True), methods=["POST"]),
    Route("/v1/blobs/{blob_id}", data(_blob), methods=["GET"]),
    Route("/v1/blobs/{blob_id}/content", blob_content, methods=["GET"]),
    Route("/v1/collections/{collection_id}/revisions", data(_publish, checks_token=True),
          methods=["POST"]),
    Route("/v1/collections/{collection_id}", data(_collection), methods=["GET"]),
    Route("/v1/collections/{collection_id}/revisions/{revision}", data(_revision),
          methods=["GET"]),
    Route("/v1/collections/{collection_id}/revisions/{revision}/items",
          data(_revision_items, *ITEMS_QUERY), methods=["GET"]),
    Route("/_test/clock", clock, methods=["GET", "POST"]),
    Route("/_test/faults", faults_hook, methods=["GET", "POST", "DELETE"]),
    Route("/_test/restart", restart_hook, methods=["POST"]),
    Route("/admin/v1/spaces", _admin_body(control.create_space), methods=["POST"]),
    Route("/admin/v1/spaces", admin(_spaces), methods=["GET"]),
    Route("/admin/v1/spaces/{space_id}", admin(_space), methods=["GET"]),
    Route("/admin/v1/spaces/{space_id}/actors", _admin_body(control.create_actor, "space_id"),
          methods=["POST"]),
    Route("/admin/v1/spaces/{space_id}/actors/{actor_id}/disable",
          _admin_body(control.disable_actor, "space_id", "actor_id"), methods=["POST"]),
    Route("/admin/v1/spaces/{space_id}/consumers",
          _admin_body(control.create_consumer, "space_id"), methods=["POST"]),
    Route("/admin/v1/spaces/{space_id}/consumers/{consumer_id}/view",
          _admin_body(control.change_view, "space_id", "consumer_id"), methods=["POST"]),
    Route("/admin/v1/spaces/{space_id}/collections",
          _admin_body(control.create_collection, "space_id"), methods=["POST"]),
    Route("/admin/v1/spaces/{space_id}/tokens", _admin_body(control.issue_token, "space_id"),
          methods=["POST"]),
    Route("/admin/v1/tokens/{token_id}/revoke",
          _admin_body(control.revoke_token, "token_id"), methods=["POST"]),
    Route("/admin/v1/spaces/{space_id}/threads/{thread_id}/members",
          _admin_body(control.add_thread_members, "space_id", "thread_id"), methods=["POST"]),
]


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status in (404, 405):  # a method a path does not serve answers like an unknown path
        return error_response(NotFound("no such path"))
    return error_response(internal_error())


async def _dashboard_root(request: Request) -> Response:
    return RedirectResponse("/dashboard/", 303)


def _landing(dashboard: bool) -> Callable[[Request], Awaitable[Response]]:
    """``GET /``: where a person who opened the server's address goes next (not a route of the
    protocol, as ``/openapi.json`` and ``/dashboard/`` are not: docs/spec.md)."""
    links = {"service": "Waypost reference server", "describe": "/v1/describe",
             "openapi": "/openapi.json", "dashboard": "/dashboard/" if dashboard else None}

    async def landing(request: Request) -> Response:
        return JSONResponse(links)
    return landing


def create_app(ctx_factory: Any, dashboard: bool = False, fault_points: bool = True) -> Starlette:
    """The ASGI app. ``ctx_factory`` is an async context manager yielding the :class:`Context`,
    entered at startup and left at shutdown. ``dashboard`` serves the operator dashboard under
    ``/dashboard/``. ``fault_points`` says faults can be armed (the test hooks): only then does
    a request need :class:`CloseOnAbandon` around it. How connections are read and cut off is
    the server's (:mod:`waypost.reference.http.connection_limits`)."""
    routes: list[BaseRoute] = [*ROUTES, Route("/", _landing(dashboard), methods=["GET"])]
    if dashboard:
        routes += [Route("/dashboard", _dashboard_root, methods=["GET"]),
                   dashboard_routes.mount()]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        stack = AsyncExitStack()
        app.state.context = await stack.enter_async_context(ctx_factory())

        async def restart() -> None:
            nonlocal stack
            clock = app.state.context.clock
            await stack.aclose()
            stack = AsyncExitStack()
            app.state.context = await stack.enter_async_context(ctx_factory())
            app.state.context.clock = clock

        app.state.restart = restart
        try:
            yield
        finally:
            await stack.aclose()

    middleware = [Middleware(CloseOnAbandon)] if fault_points else []
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware,
                     exception_handlers={HTTPException: _http_error})
