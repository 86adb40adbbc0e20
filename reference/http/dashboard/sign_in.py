"""Signing in with the admin token, signing out, and the stylesheet (behind the session)."""

from __future__ import annotations

import secrets
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

from waypost.reference.domain.errors import ResourceLimit, StorageUnavailable, WaypostError
from waypost.reference.http.dashboard.guard import (
    COOKIE,
    PREFIX,
    Form,
    Session,
    action,
    error_page,
    field,
    page,
    read_form,
    redirect,
    render,
    secured,
)
from waypost.reference.http.endpoints import context
from waypost.reference.service import admin_sessions

#: The sign-in form's double-submit cookie: its CSRF token is the HMAC of this random value.
SIGN_IN_COOKIE = "waypost_sign_in"


def _cookie(response: Response, request: Request, name: str, value: str, seconds: int) -> None:
    response.set_cookie(name, value, max_age=seconds, path=PREFIX, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")


async def sign_in_form(request: Request, status: int = 200, message: str | None = None) -> Response:
    """The sign-in form, with a fresh double-submit pair against login CSRF."""
    nonce = secrets.token_urlsafe(24)
    response = render("sign_in.html", status, session=None, message=message,
                      csrf=admin_sessions.csrf_token(context(request), nonce))
    _cookie(response, request, SIGN_IN_COOKIE, nonce, 3600)
    return response


async def sign_in(request: Request) -> Response:
    """Check the admin token; on success a new session and its cookie."""
    ctx = context(request)
    try:
        form = await read_form(request)
        nonce = request.cookies.get(SIGN_IN_COOKIE, "")
        if not (nonce and admin_sessions.csrf_valid(ctx, nonce, field(form, "csrf"))):
            return await sign_in_form(request, 403, "The form has expired; please try again.")
        address = request.client.host if request.client else "unknown"
        session_id = await admin_sessions.sign_in(ctx, field(form, "admin_token"), address)
    except admin_sessions.SignInRefused:
        return await sign_in_form(request, 401, "That is not the admin token.")
    except ResourceLimit as error:
        response = await sign_in_form(request, 429, "Too many failed sign-ins; wait a minute.")
        seconds = max(1, int(error.details.get("retry_after_ms", 60_000)) // 1000)
        response.headers["Retry-After"] = str(seconds)
        return response
    except WaypostError as error:
        return error_page(error, None)
    except StorageUnavailable:
        return render("error.html", 503, session=None, error={
            "code": "UNAVAILABLE", "message": "storage is temporarily unavailable; retry"})
    response = redirect("/")
    _cookie(response, request, COOKIE, session_id, ctx.sessions.absolute_ms // 1000)
    response.delete_cookie(SIGN_IN_COOKIE, path=PREFIX, httponly=True, samesite="strict")
    return response


def _signed_out() -> Response:
    """To the sign-in form, with the session cookie cleared."""
    response = redirect("/sign-in")
    response.delete_cookie(COOKIE, path=PREFIX, httponly=True, samesite="strict")
    return response


async def _sign_out(request: Request, session: Session, form: Form) -> Response:
    await admin_sessions.sign_out(context(request), session.id)
    return _signed_out()


#: Signing out of a session that is over already changes nothing but the cookie.
sign_out = action(_sign_out, without_session=_signed_out)

_CSS = resources.files("waypost.reference.http.dashboard").joinpath(
    "static", "dashboard.css").read_bytes()


async def _stylesheet(request: Request, session: Session) -> Response:
    return secured(Response(_CSS, 200, media_type="text/css"))


stylesheet = page(_stylesheet)

_SIGN_IN_CSS = resources.files("waypost.reference.http.dashboard").joinpath(
    "static", "sign-in.css").read_bytes()


async def sign_in_stylesheet(request: Request) -> Response:
    """The sign-in page's layout: public, as the page itself is (it tells nothing of a space)."""
    return secured(Response(_SIGN_IN_CSS, 200, media_type="text/css"))
