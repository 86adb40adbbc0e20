"""The dashboard's routes, mounted at ``/dashboard`` by the app factory when it is on."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from waypost.reference.http.dashboard import identity, inspect, sign_in

S = "/spaces/{space_id}"


async def _sign_in_form(request: Request) -> Response:
    return await sign_in.sign_in_form(request)


ROUTES = [
    Route("/sign-in", _sign_in_form, methods=["GET"]),
    Route("/sign-in", sign_in.sign_in, methods=["POST"]),
    Route("/sign-out", sign_in.sign_out, methods=["POST"]),
    Route("/dashboard.css", sign_in.stylesheet, methods=["GET"]),
    Route("/sign-in.css", sign_in.sign_in_stylesheet, methods=["GET"]),
    Route("/", identity.index, methods=["GET"]),
    Route("/spaces", identity.create_space, methods=["POST"]),
    Route(S, identity.space, methods=["GET"]),
    Route(f"{S}/actors", identity.create_actor, methods=["POST"]),
    Route(f"{S}/actors/{{actor_id}}/disable", identity.disable_actor, methods=["POST"]),
    Route(f"{S}/consumers", identity.create_consumer, methods=["POST"]),
    Route(f"{S}/consumers/{{consumer_id}}/view", identity.change_view, methods=["POST"]),
    Route(f"{S}/collections", identity.create_collection, methods=["POST"]),
    Route(f"{S}/tokens", identity.issue_token, methods=["POST"]),
    Route(f"{S}/tokens/{{token_id}}/revoke", identity.revoke_token, methods=["POST"]),
    Route(f"{S}/tokens/{{token_id}}/replace", identity.replace_form, methods=["GET"]),
    Route(f"{S}/tokens/{{token_id}}/replace", identity.replace_token, methods=["POST"]),
    Route(f"{S}/feed", inspect.feed, methods=["GET"]),
    Route(f"{S}/messages/{{message_id}}", inspect.message, methods=["GET"]),
    Route(f"{S}/consumers", inspect.consumers, methods=["GET"]),
    Route(f"{S}/collections/{{collection_id}}", inspect.collection, methods=["GET"]),
    Route(f"{S}/collections/{{collection_id}}/revisions/{{revision}}", inspect.revision,
          methods=["GET"]),
    Route(f"{S}/collections/{{collection_id}}/diff", inspect.diff, methods=["GET"]),
    Route(f"{S}/uploads", inspect.uploads, methods=["GET"]),
]


def mount() -> Mount:
    """``/dashboard/…``; ``/dashboard`` itself is answered by the app (a redirect)."""
    return Mount("/dashboard", routes=ROUTES)
