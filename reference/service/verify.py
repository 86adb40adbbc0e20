"""``waypost verify``: every stored object read back whole and held to the size and SHA-256 it
was sealed with; what is damaged or missing is reported, nothing is changed."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from waypost.reference.service.context import Context
from waypost.reference.storage import stored_objects as sql

PAGE = 500


@dataclass
class Verified:
    """What a verification found: objects checked, and each damaged or missing one."""

    checked: int = 0
    damaged: list[str] = field(default_factory=list)  # lines saying which and how
    missing: list[str] = field(default_factory=list)


async def verify(ctx: Context, progress: Callable[[Verified], None] = lambda _: None,
                 ) -> Verified:
    """Read every stored object the database vouches for, a page at a time, streaming each
    (never held whole) through SHA-256."""
    found, after = Verified(), ""
    while True:
        (rows,) = await ctx.driver.read([sql.page_statement(after, PAGE)])
        page = sql.objects_from(rows)
        for stored in page:
            await _check(ctx, stored, found)
            progress(found)
        if len(page) < PAGE:
            return found
        after = page[-1].object_ref


async def _check(ctx: Context, stored: sql.StoredObject, found: Verified) -> None:
    found.checked += 1
    hasher, size = hashlib.sha256(), 0
    try:
        async for chunk in ctx.blobs.stream(stored.object_ref):
            hasher.update(chunk)
            size += len(chunk)
    except FileNotFoundError:
        found.missing.append(f"{stored.what}: object {stored.object_ref} is missing")
        return
    if (size, hasher.digest()) != (stored.size, stored.sha256):
        found.damaged.append(
            f"{stored.what}: object {stored.object_ref} holds {size} bytes with SHA-256 "
            f"{hasher.hexdigest()}, sealed as {stored.size} bytes with {stored.sha256.hex()}")
