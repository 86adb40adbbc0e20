"""Numbered SQL migrations shipped as package files (``0001_schema.sql`` → version 1, name
``schema``), for the server's schema and the reference consumer's local file alike."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Migration:
    """One numbered migration: its version, its name and its SQL."""

    version: int
    name: str
    sql: str


def numbered(package: str) -> list[Migration]:
    """Every ``NNNN_name.sql`` file of ``package``, in version order."""
    found = []
    for entry in resources.files(package).iterdir():
        if entry.name.endswith(".sql"):
            number, _, rest = entry.name.partition("_")
            found.append(Migration(int(number), rest.removesuffix(".sql"), entry.read_text()))
    return sorted(found, key=lambda migration: migration.version)
