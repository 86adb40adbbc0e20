"""The blob content download (``GET /v1/blobs/{blob_id}/content``): the whole blob (``200``) or
one byte range of it (``206``, ``416``), streamed in bounded chunks."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from waypost.reference.domain import ranges, values
from waypost.reference.domain.principal import Principal
from waypost.reference.http.endpoints import data
from waypost.reference.service import blobs
from waypost.reference.service.context import Context, Outcome


def _one(request: Request, name: str) -> str | None:
    """The header's value; None when absent; ``""`` when sent more than once, which names no
    single range (a ``Range`` then is ignored) nor ETag (an ``If-Range`` then fails)."""
    found = request.headers.getlist(name)
    return found[0] if len(found) == 1 else (None if not found else "")


def _answer(content: blobs.Content) -> Response:
    """The download's answer: its status, headers and streamed bytes."""
    if content.unsatisfiable:
        return Response(status_code=416, headers={
            "Accept-Ranges": "bytes", "Content-Range": f"bytes */{content.size}"})
    kind = content.content_type  # one stored before §3.6 was enforced may not be sendable
    if not values.is_content_type(kind):
        kind = "application/octet-stream"
    headers = {"Content-Type": kind, "ETag": f'"{content.etag}"', "Accept-Ranges": "bytes",
               "Content-Length": str(content.size)}
    if content.span is None:
        return StreamingResponse(content.chunks, 200, headers=headers)
    headers["Content-Length"] = str(content.span.length)
    headers["Content-Range"] = content.span.content_range()
    return StreamingResponse(content.chunks, 206, headers=headers)


async def blob_content(request: Request) -> Response:
    """The sealed bytes, streamed in bounded chunks, with ``ETag`` = their SHA-256 and the
    stored content type verbatim (errors still use the envelope). One ``bytes`` range of a
    ``Range`` header is served as ``206`` (``If-Range`` must then name the ETag, else the
    whole blob is sent); a range past the end is ``416``; any other ``Range`` is ignored.
    Credentials, grants and existence are checked before the range is looked at."""
    holder: dict[str, Response] = {}

    async def work(ctx: Context, principal: Principal, request: Request) -> Outcome:
        content = await blobs.read_content(
            ctx, principal, request.path_params["blob_id"],
            ranges.parse(_one(request, "range")), _one(request, "if-range"))
        holder["response"] = _answer(content)
        return Outcome(200, {})

    response = await data(work)(request)
    return holder.get("response", response)
