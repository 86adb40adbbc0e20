"""The read-only inspector's pages: the feed, a message with its receipts, consumers' progress,
collections with their revisions, entries and differences, uploads and blobs."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from waypost.reference.http.dashboard.guard import Session, page, render
from waypost.reference.http.endpoints import context
from waypost.reference.service import inspector

FEED_FILTERS = ("type", "producer", "thread")


def _path(request: Request, name: str) -> str:
    return str(request.path_params[name])


def _query(request: Request, *names: str) -> dict[str, str]:
    return {name: request.query_params[name] for name in names if name in request.query_params}


async def _feed(request: Request, session: Session) -> Response:
    ctx = context(request)
    space = await inspector.space(ctx, _path(request, "space_id"))
    query = _query(request, "before", *FEED_FILTERS)
    found = await inspector.feed(ctx, space.space_id, query)
    filters = {name: query.get(name, "") for name in FEED_FILTERS}
    return render("feed.html", session=session, space=space, page=found, filters=filters,
                  item_types=inspector.ITEM_TYPES, first=not query.get("before"))


async def _message(request: Request, session: Session) -> Response:
    ctx = context(request)
    space = await inspector.space(ctx, _path(request, "space_id"))
    view = await inspector.message(ctx, space.space_id, _path(request, "message_id"))
    return render("message.html", session=session, space=space, view=view,
                  max_receipt_steps=inspector.MAX_RECEIPT_STEPS)


async def _consumers(request: Request, session: Session) -> Response:
    ctx = context(request)
    space = await inspector.space(ctx, _path(request, "space_id"))
    progress = await inspector.progress(ctx, space.space_id)
    return render("consumers.html", session=session, space=space, progress=progress,
                  max_behind=inspector.MAX_BEHIND)


async def _collection(request: Request, session: Session) -> Response:
    ctx = context(request)
    space = await inspector.space(ctx, _path(request, "space_id"))
    collection, revisions = await inspector.collection(
        ctx, space.space_id, _path(request, "collection_id"), request.query_params.get("before"))
    return render("collection.html", session=session, space=space, collection=collection,
                  page=revisions)


async def _revision(request: Request, session: Session) -> Response:
    ctx = context(request)
    space = await inspector.space(ctx, _path(request, "space_id"))
    collection_id, revision = _path(request, "collection_id"), _path(request, "revision")
    found = await inspector.entries(ctx, space.space_id, collection_id, revision,
                                    request.query_params.get("after"))
    return render("revision.html", session=session, space=space, collection_id=collection_id,
                  revision=revision, page=found)


async def _diff(request: Request, session: Session) -> Response:
    ctx = context(request)
    space = await inspector.space(ctx, _path(request, "space_id"))
    collection_id = _path(request, "collection_id")
    query = _query(request, "from", "to", "after")
    found = await inspector.diff(ctx, space.space_id, collection_id, query)
    return render("diff.html", session=session, space=space, collection_id=collection_id,
                  a=query.get("from", ""), b=query.get("to", ""), page=found)


async def _uploads(request: Request, session: Session) -> Response:
    ctx = context(request)
    space = await inspector.space(ctx, _path(request, "space_id"))
    found = await inspector.uploads(ctx, space.space_id, request.query_params.get("after"))
    return render("uploads.html", session=session, space=space, page=found)


feed = page(_feed)
message = page(_message)
consumers = page(_consumers)
collection = page(_collection)
revision = page(_revision)
diff = page(_diff)
uploads = page(_uploads)
