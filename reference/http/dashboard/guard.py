"""What every dashboard page goes through: the session cookie, the CSRF token of forms, the
security headers, templates, and errors as pages."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from waypost.reference.domain import values
from waypost.reference.domain.errors import InvalidRequest, ResourceLimit, StorageUnavailable, WaypostError
from waypost.reference.http.endpoints import context
from waypost.reference.service import admin_sessions, inspector

log = logging.getLogger("waypost.dashboard")

PREFIX = "/dashboard"
COOKIE = "waypost_session"
#: The largest form body a page accepts.
FORM_BYTES = 64 * 1024

#: No script at all, styles only from the dashboard itself, no framing, forms only to itself.
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
           "Cache-Control": "no-store"}

Form = dict[str, list[str]]

_templates = Environment(loader=PackageLoader("waypost.reference.http.dashboard", "templates"),
                         autoescape=select_autoescape(default=True, default_for_string=True))
_templates.filters["time"] = lambda ms: "" if ms is None else values.format_timestamp(ms)
_templates.filters["behind"] = inspector.behind_text
_templates.globals["request_id"] = lambda: new_request_id()
_templates.globals["query"] = lambda **params: urlencode(
    {key: value for key, value in params.items() if value not in (None, "")})


@dataclass(frozen=True)
class Session:
    """A live session: its id (from the cookie) and the CSRF token its forms carry."""

    id: str
    csrf: str


def secured(response: Response) -> Response:
    for name, value in HEADERS.items():
        response.headers[name] = value
    return response


def render(name: str, status: int = 200, **variables: Any) -> Response:
    """A template rendered as a page, with the security headers."""
    html = _templates.get_template(name).render(**variables)
    return secured(HTMLResponse(html, status))


def new_request_id() -> str:
    """The request id a form carries, so that submitting it twice replays the first outcome."""
    return f"dash-{secrets.token_hex(12)}"


def redirect(path: str) -> Response:
    return secured(RedirectResponse(PREFIX + path, 303))


def error_page(error: WaypostError, session: Session | None) -> Response:
    return render("error.html", error.status, error=error.envelope()["error"], session=session)


async def read_form(request: Request) -> Form:
    """An ``application/x-www-form-urlencoded`` body, at most :data:`FORM_BYTES`."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise InvalidRequest("a form is sent as application/x-www-form-urlencoded",
                             field="content-type")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_BYTES:
            raise ResourceLimit("the form is too large", limit="form_bytes", max=FORM_BYTES)
    try:
        return parse_qs(body.decode(), keep_blank_values=True, max_num_fields=500)
    except (UnicodeDecodeError, ValueError) as error:
        raise InvalidRequest("the form is not valid", field="body") from error


def field(form: Mapping[str, list[str]], name: str) -> str:
    """A form field's (first) value, stripped; empty when absent."""
    return (form.get(name) or [""])[0].strip()


async def _with_error_page(work: Callable[[], Awaitable[Response]],
                           session: Session | None) -> Response:
    try:
        return await work()
    except WaypostError as error:
        return error_page(error, session)
    except StorageUnavailable:
        return render("error.html", 503, session=session, error={
            "code": "UNAVAILABLE", "message": "storage is temporarily unavailable; retry"})
    except Exception:
        log.exception("dashboard page failed")
        return render("error.html", 500, session=session, error={
            "code": "INTERNAL", "message": "internal error"})


async def _session(request: Request) -> Session | None:
    ctx = context(request)
    session_id = request.cookies.get(COOKIE)
    if session_id is None or not await admin_sessions.is_live(ctx, session_id):
        return None
    return Session(session_id, admin_sessions.csrf_token(ctx, session_id))


Page = Callable[[Request, Session], Awaitable[Response]]
Action = Callable[[Request, Session, Form], Awaitable[Response]]
#: The page of a form the server refused, shown again with the values sent and the error.
Refused = Callable[[Request, Session, Form, WaypostError], Awaitable[Response]]


def page(handler: Page) -> Callable[[Request], Awaitable[Response]]:
    """A page for a live session; without one, a redirect to the sign-in form."""

    async def endpoint(request: Request) -> Response:
        session = await _checked_session(request)
        if isinstance(session, Response):
            return session
        if session is None:
            return redirect("/sign-in")
        return await _with_error_page(lambda: handler(request, session), session)
    return endpoint


def action(handler: Action, without_session: Callable[[], Response] | None = None,
           refused: Refused | None = None) -> Callable[[Request], Awaitable[Response]]:
    """A form post for a live session whose form carries the session's CSRF token; without a
    live session, ``without_session()`` or else a ``401`` page. A refusal (a 4xx) answers
    ``refused(…)``, the form's page with what was sent, where given; else the error page."""

    async def endpoint(request: Request) -> Response:
        session = await _checked_session(request)
        if isinstance(session, Response):
            return session
        if session is None:
            if without_session is not None:
                return without_session()
            return render("error.html", 401, session=None, error={
                "code": "UNAUTHENTICATED", "message": "sign in first (the session is over)"})
        live = session

        async def work() -> Response:
            form = await read_form(request)
            if not admin_sessions.csrf_valid(context(request), live.id, field(form, "csrf")):
                return render("error.html", 403, session=live, error={
                    "code": "FORBIDDEN", "message": "the form's CSRF token is missing or wrong"})
            try:
                return await handler(request, live, form)
            except WaypostError as error:
                if refused is None or error.status >= 500:
                    raise
                return await refused(request, live, form, error)
        return await _with_error_page(work, live)
    return endpoint


async def _checked_session(request: Request) -> Session | Response | None:
    try:
        return await _session(request)
    except StorageUnavailable:
        return render("error.html", 503, session=None, error={
            "code": "UNAVAILABLE", "message": "storage is temporarily unavailable; retry"})
