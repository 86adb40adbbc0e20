"""Rotating a token or editing its grants: tokens never change (the schema forbids it), so the
dashboard issues a replacement for the same actor and consumer and then revokes the old one,
both through the control plane's own operations and their idempotency."""

from __future__ import annotations

from typing import Any

from waypost.reference.domain import values
from waypost.reference.domain.errors import InvalidRequest
from waypost.reference.service import control, inspector
from waypost.reference.service.context import Context, Outcome
from waypost.reference.storage.control import ledger_holds

ISSUE = "token.issue"  # the control plane's ledger name of an issue


async def replace_token(ctx: Context, space_id: str, token_id: str,
                        raw: dict[str, Any]) -> Outcome:
    """Issue the replacement of ``token_id`` (a token of ``space_id``, else ``NOT_FOUND``) with
    the grants of ``raw`` (the fields of a token request but the actor and consumer), then revoke
    the old token. ``raw['request_id']`` keys both operations (``<id>.issue``, ``<id>.revoke``),
    so a resubmitted form replays them, even once the old token is revoked; a revoked token is
    refused only for a request id the ledger does not know."""
    old = await inspector.token_grants(ctx, space_id, token_id)
    request_id = values.request_id(raw.get("request_id"))
    if len(request_id) > 120:
        raise InvalidRequest("request_id is too long for a replacement", field="request_id")
    if old.revoked_at is not None and not await _issued_already(ctx, f"{request_id}.issue"):
        raise InvalidRequest("the token is revoked already: nothing to replace",
                             field="token_id", reason="revoked")
    issued = await control.issue_token(ctx, old.space_id, {
        **raw, "request_id": f"{request_id}.issue", "actor_id": old.actor_id,
        "consumer_id": old.consumer_id})
    await control.revoke_token(ctx, token_id, {"request_id": f"{request_id}.revoke"})
    return issued


async def _issued_already(ctx: Context, request_id: str) -> bool:
    (rows,) = await ctx.driver.read([ledger_holds(ISSUE, request_id)])
    return bool(rows)
