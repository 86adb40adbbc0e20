"""Identity management pages: spaces, actors, consumers, collections and tokens, each change
made by the control plane's own operation, keyed by the request id its form carries."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from waypost.reference.domain.errors import InvalidRequest, WaypostError
from waypost.reference.http.dashboard import charts
from waypost.reference.http.dashboard.guard import (
    Form,
    Refused,
    Session,
    action,
    field,
    page,
    redirect,
    render,
)
from waypost.reference.http.dashboard.refused_forms import refused
from waypost.reference.http.endpoints import context
from waypost.reference.service import control, inspector, listings, token_replacement
from waypost.reference.service.context import Context
from waypost.reference.service.control import ACTOR_KINDS, VIEWS
from waypost.reference.storage.inspector import TokenGrants
from waypost.reference.storage.listings import KIT_SOURCES

SCOPES = ("message.send", "message.read", "space.observe", "receipt.write", "memory.write",
          "memory.read", "blob.write", "blob.reference", "event.subscribe")


def _path(request: Request, name: str) -> str:
    return str(request.path_params[name])


async def _index(request: Request, session: Session) -> Response:
    """The spaces, filtered by a text in their id or name; the conformance kit's spaces are
    left out unless asked for (``kit=show``), and marked when shown."""
    query = request.query_params
    containing, kit = query.get("q", "").strip(), query.get("kit") == "show"
    spaces, after = await listings.spaces_page(context(request), query.get("after"),
                                               containing, kit)
    params = {k: v for k, v in (("q", containing), ("kit", "show" if kit else "")) if v}
    return render("spaces.html", session=session, spaces=spaces, kinds=ACTOR_KINDS,
                  page={"next": after}, params=params, containing=containing, kit=kit,
                  kit_sources=KIT_SOURCES)


async def space_overview(ctx: Context, space_id: str, tokens_after: str | None = None,
                         threads_after: str | None = None) -> dict[str, Any]:
    """Everything the space page shows: identities (a page of tokens and of threads), the two
    charts."""
    space = await listings.space_page(ctx, space_id, tokens_after, threads_after)
    hours = await inspector.items_per_hour(ctx, space_id)
    progress = await inspector.progress(ctx, space_id)
    lag: dict[str, int] = {}
    for row in progress.checkpoints:  # newest view revision first: its checkpoint counts
        lag.setdefault(row.consumer_id, min(row.behind, inspector.MAX_BEHIND))
    return {"space": space, "activity": charts.columns(
                "feed items per hour, last 24 hours (UTC)",
                [(f"{hour % 24:02d}:00", count) for hour, count in hours], label_every=6),
            "lag": charts.rows(f"items behind, per consumer (counted up to "
                               f"{inspector.MAX_BEHIND:,})", sorted(lag.items()),
                              empty="no consumer has read yet")}


async def _space(request: Request, session: Session) -> Response:
    params = {name: request.query_params.get(name, "")
              for name in ("tokens_after", "threads_after")}
    overview = await space_overview(context(request), _path(request, "space_id"),
                                    params["tokens_after"], params["threads_after"])
    return render("space.html", session=session, kinds=ACTOR_KINDS, views=VIEWS,
                  scopes=SCOPES, params=params, **overview)


async def _create_space(request: Request, session: Session, form: Form) -> Response:
    space_id = field(form, "space_id")
    await control.create_space(context(request), {
        "request_id": field(form, "request_id"), "space_id": space_id,
        "display_name": field(form, "display_name"), "source_uri": field(form, "source_uri"),
        "default_actor": {"actor_id": field(form, "actor_id"), "kind": field(form, "kind"),
                          "display_name": field(form, "actor_display_name")}})
    return redirect(f"/spaces/{space_id}")


async def _create_actor(request: Request, session: Session, form: Form) -> Response:
    """The actor, and (checked by default) its inbox consumer ``<actor id>-inbox``, which every
    agent's token names: each an idempotent write of its own request id, so a resubmitted form
    creates neither twice."""
    space_id, actor_id = _path(request, "space_id"), field(form, "actor_id")
    ctx, request_id = context(request), field(form, "request_id")
    await control.create_actor(ctx, space_id, {
        "request_id": request_id, "actor_id": actor_id,
        "kind": field(form, "kind"), "display_name": field(form, "display_name")})
    if field(form, "inbox") == "yes":
        await control.create_consumer(ctx, space_id, {
            "request_id": f"{request_id}-inbox"[:128], "consumer_id": f"{actor_id}-inbox",
            "actor_id": actor_id, "view": "inbox"})
    return redirect(f"/spaces/{space_id}")


def _unconfirmed(request: Request, session: Session, form: Form, title: str, verb: str,
                 consequence: str) -> Response | None:
    """A change that cannot be undone happens only from a form that says ``confirm=yes``: any
    other post of it answers this page, which asks, carrying the same request id (so the
    change, once confirmed, is the one the first form meant); None when confirmed."""
    if field(form, "confirm") == "yes":
        return None
    return render("confirm.html", session=session, title=title, verb=verb,
                  consequence=consequence, action=request.url.path,
                  request_id=field(form, "request_id"),
                  back=f"/dashboard/spaces/{_path(request, 'space_id')}")


async def _disable_actor(request: Request, session: Session, form: Form) -> Response:
    space_id, actor_id = _path(request, "space_id"), _path(request, "actor_id")
    ctx = context(request)
    await inspector.actor(ctx, space_id, actor_id)  # the URL's space's own
    asked = _unconfirmed(request, session, form, f"Disable actor {actor_id}?", "Disable",
                         f"Every token of {actor_id} stops working at once, and the actor "
                         "cannot be enabled again.")
    if asked is not None:
        return asked
    await control.disable_actor(ctx, space_id, actor_id,
                                {"request_id": field(form, "request_id")})
    return redirect(f"/spaces/{space_id}")


def _filter(form: Form) -> dict[str, list[str]]:
    """The optional consumer filter: comma-separated lists per dimension."""
    found = {}
    for dimension in ("producer_ids", "thread_ids", "item_types", "collection_ids"):
        entries = _list(field(form, dimension))
        if entries:
            found[dimension] = entries
    return found


def _list(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


async def _create_consumer(request: Request, session: Session, form: Form) -> Response:
    space_id = _path(request, "space_id")
    body: dict[str, Any] = {"request_id": field(form, "request_id"),
                            "consumer_id": field(form, "consumer_id"),
                            "actor_id": field(form, "actor_id"), "view": field(form, "view")}
    if filter_ := _filter(form):
        body["filter"] = filter_
    await control.create_consumer(context(request), space_id, body)
    return redirect(f"/spaces/{space_id}")


async def _change_view(request: Request, session: Session, form: Form) -> Response:
    space_id = _path(request, "space_id")
    body: dict[str, Any] = {"request_id": field(form, "request_id"), "view": field(form, "view")}
    if filter_ := _filter(form):
        body["filter"] = filter_
    await control.change_view(context(request), space_id, _path(request, "consumer_id"), body)
    return redirect(f"/spaces/{space_id}")


async def _create_collection(request: Request, session: Session, form: Form) -> Response:
    space_id = _path(request, "space_id")
    await control.create_collection(context(request), space_id, {
        "request_id": field(form, "request_id"), "collection_id": field(form, "collection_id"),
        "source_actor_id": field(form, "source_actor_id"), "scope": field(form, "scope")})
    return redirect(f"/spaces/{space_id}")


def grants_from_form(form: Form) -> dict[str, Any]:
    """The grant fields of a token request from the token form: scope checkboxes, recipients
    ``any`` or a list, one ``collection_id:action,action`` per line, blob ids, expiry."""
    recipients: dict[str, Any] = {"mode": field(form, "recipients_mode") or "any"}
    if recipients["mode"] == "listed":
        recipients["actor_ids"] = _list(field(form, "recipient_ids"))
    collections = []
    for line in field(form, "collections").splitlines():
        if not line.strip():
            continue
        collection_id, colon, actions = line.partition(":")
        if not colon:
            raise InvalidRequest("each collection grant is collection_id:read,write",
                                 field="collections")
        collections.append({"collection_id": collection_id.strip(), "actions": _list(actions)})
    grants: dict[str, Any] = {"scopes": form.get("scopes", []), "recipients": recipients,
                              "collections": collections,
                              "blob_references": _list(field(form, "blob_references"))}
    if expires_at := field(form, "expires_at"):
        grants["expires_at"] = expires_at
    return grants


async def _issue_token(request: Request, session: Session, form: Form) -> Response:
    space_id = _path(request, "space_id")
    issued = await control.issue_token(context(request), space_id, {
        "request_id": field(form, "request_id"), "actor_id": field(form, "actor_id"),
        "consumer_id": field(form, "consumer_id"), **grants_from_form(form)})
    return render("token_issued.html", 201 if not issued.replayed else 200, session=session,
                  space_id=space_id, issued=issued.body, replayed=issued.replayed)


async def _revoke_token(request: Request, session: Session, form: Form) -> Response:
    space_id, token_id = _path(request, "space_id"), _path(request, "token_id")
    await inspector.token_grants(context(request), space_id, token_id)  # the URL's space's own
    asked = _unconfirmed(request, session, form, f"Revoke token {token_id}?", "Revoke",
                         "Every request with this token is refused from now on; a revoked "
                         "token cannot be restored.")
    if asked is not None:
        return asked
    await control.revoke_token(context(request), token_id,
                               {"request_id": field(form, "request_id")})
    return redirect(f"/spaces/{space_id}")


def grant_form_values(grants: TokenGrants) -> dict[str, Any]:
    """A token's grants as the token form's initial values."""
    collections: dict[str, list[str]] = {}
    for collection_id, action_ in json.loads(grants.collections):
        collections.setdefault(collection_id, []).append(action_)
    return {"scopes": json.loads(grants.scopes), "mode": grants.recipients_mode,
            "recipient_ids": ", ".join(json.loads(grants.recipient_ids)),
            "collections": "\n".join(f"{c}:{','.join(a)}" for c, a in collections.items()),
            "blob_references": ", ".join(json.loads(grants.blob_references))}


async def _replace_form(request: Request, session: Session) -> Response:
    grants = await inspector.token_grants(context(request), _path(request, "space_id"),
                                          _path(request, "token_id"))
    return render("token_replace.html", session=session, token=grants, scopes=SCOPES,
                  initial=grant_form_values(grants))


async def _replace_token(request: Request, session: Session, form: Form) -> Response:
    space_id, token_id = _path(request, "space_id"), _path(request, "token_id")
    issued = await token_replacement.replace_token(context(request), space_id, token_id, {
        "request_id": field(form, "request_id"), **grants_from_form(form)})
    return render("token_issued.html", 201 if not issued.replayed else 200, session=session,
                  space_id=space_id, issued=issued.body, replayed=issued.replayed,
                  replaced=token_id)


#: Protocol fields of a refusal → the inputs of the forms they come from.
SPACE_FIELDS = {"default_actor": "actor_id", "default_actor.actor_id": "actor_id",
                "default_actor.kind": "kind", "default_actor.display_name": "actor_display_name"}
GRANT_FIELDS = {"recipients": "recipients_mode", "recipients.mode": "recipients_mode",
                "recipients.actor_ids": "recipient_ids", "scopes": "scopes"}


def typed_grants(form: Form) -> dict[str, Any]:
    """The grant fields as the user sent them, as the token form's initial values."""
    return {"scopes": form.get("scopes", []), "mode": field(form, "recipients_mode"),
            **{name: field(form, name)
               for name in ("recipient_ids", "collections", "blob_references", "expires_at")}}


async def _spaces_again(request: Request, session: Session, form: Form,
                        error: WaypostError) -> Response:
    spaces, after = await listings.spaces_page(context(request), None)
    return render("spaces.html", error.status, session=session, spaces=spaces, kinds=ACTOR_KINDS,
                  page={"next": after}, failed=refused("create-space", form, error, SPACE_FIELDS),
                  params={}, containing="", kit=True, kit_sources=KIT_SOURCES)


def _space_again(form_id: str) -> Refused:
    """The space page again, with the refused form ``form_id`` as it was sent."""

    async def again(request: Request, session: Session, form: Form,
                    error: WaypostError) -> Response:
        overview = await space_overview(context(request), _path(request, "space_id"))
        tokens = form_id == "issue-token"
        return render("space.html", error.status, session=session, kinds=ACTOR_KINDS,
                      views=VIEWS, scopes=SCOPES, params={"tokens_after": "", "threads_after": ""},
                      failed=refused(form_id, form, error, GRANT_FIELDS if tokens else None),
                      initial=typed_grants(form) if tokens else {}, **overview)
    return again


index = page(_index)
space = page(_space)
create_space = action(_create_space, refused=_spaces_again)
create_actor = action(_create_actor, refused=_space_again("create-actor"))
disable_actor = action(_disable_actor)
create_consumer = action(_create_consumer, refused=_space_again("create-consumer"))
change_view = action(_change_view)
create_collection = action(_create_collection, refused=_space_again("create-collection"))
issue_token = action(_issue_token, refused=_space_again("issue-token"))
revoke_token = action(_revoke_token)
replace_form = page(_replace_form)
# A replacement issues, then revokes: a refusal after the issue must keep its request id (a
# resubmission replays the issue), so it answers the error page, and the browser's Back.
replace_token = action(_replace_token)
