"""How an operation becomes an HTTP endpoint: auth, body, envelope, replay header."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from waypost.adapters.sql.driver import StorageUnavailable
from waypost.reference.errors import InvalidRequest, ResourceLimit, Unavailable, WaypostError
from waypost.reference.parsing import json_body
from waypost.reference.principal import Principal
from waypost.reference.service.auth import authenticate, check_admin
from waypost.reference.service.context import Context, Outcome

log = logging.getLogger("waypost.http")

Handler = Callable[[Request], Awaitable[Response]]


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


async def read_json(request: Request) -> Any:
    """The request body as JSON, capped at the published ``request_bytes`` while it streams."""
    cap = context(request).limits.request_bytes
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise ResourceLimit("request body is too large", limit="request_bytes", max=cap)
        chunks.append(chunk)
    if not size:
        raise InvalidRequest("request body must be JSON", field="body")
    return json_body(b"".join(chunks))


async def guarded(work: Callable[[], Awaitable[Outcome]]) -> Response:
    """Run an operation; every failure becomes the §7 envelope, never a stack trace."""
    try:
        return respond(await work())
    except WaypostError as error:
        return error_response(error)
    except StorageUnavailable:
        return error_response(Unavailable("storage is temporarily unavailable; retry"))
    except Exception:
        log.exception("internal error")
        return JSONResponse({"error": {"code": "INTERNAL", "message": "internal error",
                                       "details": {}}}, 500)


def data(operation: Callable[[Context, Principal, Request], Awaitable[Outcome]]) -> Handler:
    """A data-plane endpoint: bearer token first, then the operation."""

    async def endpoint(request: Request) -> Response:
        async def work() -> Outcome:
            ctx = context(request)
            principal = await authenticate(ctx, request.headers.get("authorization"))
            return await operation(ctx, principal, request)
        return await guarded(work)

    return endpoint


def admin(operation: Callable[[Context, Request], Awaitable[Outcome]]) -> Handler:
    """A control-plane endpoint: the operator's admin token first."""

    async def endpoint(request: Request) -> Response:
        async def work() -> Outcome:
            ctx = context(request)
            check_admin(ctx, request.headers.get("authorization"))
            return await operation(ctx, request)
        return await guarded(work)

    return endpoint
