"""Every limit the kit can check at its boundary (protocol.md §11), and the command that
checks one: input of exactly the limit, otherwise valid and sent with a token that holds the
scope, is accepted and fully applied; one more is refused (``RESOURCE_LIMIT`` naming the limit)
and nothing moves; after each step every view and revision is re-read against the model. The
limit phase of a run (``conformance/phases.py``) checks each published limit once, in a fresh
example of its own.

Each check is one command, ``check_limit {limit, value}``, so a failure's replay file reruns
it; the checks themselves live in ``messages``, ``memory`` and ``manifest``, made of the
parts of ``checking``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from waypost.properties.limits import manifest, memory, messages
from waypost.properties.limits.checking import Limit

if TYPE_CHECKING:
    from waypost.properties.commands.world import World


def unreachable(name: str, value: int, published: dict[str, int]) -> str | None:
    """Why a published limit cannot be reached through the others, if it cannot: a manifest
    input arrives as an uploaded blob, so one of N + 1 bytes needs ``upload_bytes`` > N."""
    upload = published.get("upload_bytes")
    if name == "manifest_input_bytes" and upload is not None and upload <= value:
        return (f"a manifest of N+1 bytes cannot be uploaded: upload_bytes = {upload}, so "
                "this limit is never the one that refuses")
    if name == "revision_manifest_bytes":
        return manifest.unreachable_manifest(value, published)
    return None


#: Published limits that bound no input (nothing to send N + 1 of), with why.
NOT_INPUT = {"upload_expiry_seconds": "a duration, not an input bound (P15's expiry checks "
                                      "move the clock instead)"}


def registry() -> dict[str, Limit]:
    """Every limit the kit knows how to check, in report order."""
    return {limit.name: limit for limit in (*messages.LIMITS, *memory.LIMITS,
                                            *manifest.LIMITS)}


def check_limit(world: World, limit: str, value: int) -> None:
    """The command: the boundary check of ``limit`` at its published ``value``."""
    registry()[limit].check(world, value)
