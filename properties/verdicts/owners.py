"""Which property each requirement id belongs to: the table of docs/properties.md ("Requirements
by property"), carried with the texts in ``properties/verdicts/requirements.json`` (package data made by
``tools/requirements_data.py``). A check of the kit names the requirement ids it verifies; it
counts, and fails, under the property of the first of them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "requirements.json"

#: A check's requirement ids: one id, or several with the one that decides the property first.
Ids = str | tuple[str, ...]


@cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


@cache
def table() -> dict[str, str]:
    """Requirement id → its property (``P01``…``P18``), or ``""`` for an id no property holds
    (checked by the hostile, contract or fuzz phases, or not at all)."""
    return {entry["id"]: entry.get("property", "") for entry in _data()["requirements"]}


def property_names() -> dict[str, str]:
    """The properties of docs/properties.md in order: ``P01`` → ``Space isolation``."""
    return {entry["pid"]: entry["name"] for entry in _data()["properties"]}


def as_tuple(ids: Ids) -> tuple[str, ...]:
    """``"WP-FEED-3"`` → ``("WP-FEED-3",)``; a tuple as it is."""
    return (ids,) if isinstance(ids, str) else ids


def property_of(ids: Ids) -> str:
    """The property a check of ``ids`` counts under: that of its first id. An unknown id, or a
    first id no property holds, is a defect of the kit (ValueError)."""
    first = as_tuple(ids)[0] if ids else ""
    pid = table().get(first)
    if not pid:
        raise ValueError(f"a check's first requirement id must belong to a property: {ids!r}")
    return pid


def requirements_of(pid: str) -> frozenset[str]:
    """The requirement ids that belong to the property ``pid``."""
    return frozenset(rid for rid, owner in table().items() if owner == pid)


def refusal_ids(allowed: set[str], rules: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The requirement ids behind a refusal whose ``allowed`` codes the model computed:
    ``rules`` names the rule of each code, the first code of ``rules`` that is allowed decides
    the property (so a table lists the codes of the operation's own property first)."""
    ids = [rid for code, rule in rules.items() if code in allowed for rid in rule]
    return tuple(dict.fromkeys(ids)) or next(iter(rules.values()))
