"""Pre-provisioned fixtures: the spaces, actors, consumers, collections and tokens of a
deployment whose admin API the kit cannot reach (``--fixtures FILE``, docs/porting.md).

A fixtures file (JSON, or TOML with the same structure) lists *sets*; each set is what one
example's ``setup`` would provision (two spaces ``A`` and ``B`` with the actors of
:data:`~waypost.properties.model.state.SPACE_ACTORS`, the collections of
:data:`~waypost.properties.model.state.COLLECTIONS`, consumers and tokens), freshly provisioned and
never used. Each example and each limit check takes a set of its own; a replay names its set
(``setup {"fixture": name}``), never a token, so replaying needs the same fixtures file on a
deployment where that set is fresh again."""

from __future__ import annotations

import json
import threading
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waypost.properties.model.state import COLLECTIONS, SPACE_ACTORS

FORMAT = "waypost-fixtures/1"


class FixtureError(ValueError):
    """A fixtures file the kit cannot use, or a set that is not fresh."""


class FixturesExhausted(RuntimeError):
    """Every fixture set of the file is taken: the run has no fresh spaces left."""


@dataclass
class Fixtures:
    """The sets of a fixtures file, handed out in order, each once (to any worker of a run)."""

    sets: list[dict[str, Any]]
    taken: int = field(default=0)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def left(self) -> int:
        return len(self.sets) - self.taken

    def take(self) -> str:
        """The name of the next unused set."""
        with self.lock:
            if self.taken >= len(self.sets):
                raise FixturesExhausted(f"needs another fixture set (all {len(self.sets)} of "
                                        "the fixtures file are taken)")
            self.taken += 1
            return str(self.sets[self.taken - 1]["name"])

    def named(self, name: str) -> dict[str, Any]:
        for fixture in self.sets:
            if fixture["name"] == name:
                return fixture
        raise FixtureError(f"the fixtures file has no set named {name!r}")


def load(path: Path) -> Fixtures:
    """Read and check a fixtures file (``.toml``: TOML, else JSON)."""
    try:
        data = tomllib.loads(path.read_text()) if path.suffix == ".toml" else json.loads(
            path.read_text())
    except (OSError, ValueError) as error:
        raise FixtureError(f"cannot read fixtures file {path}: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FixtureError(f"{path}: not a fixtures file (format must be {FORMAT!r})")
    sets = data.get("sets")
    if not isinstance(sets, list) or not sets:
        raise FixtureError(f"{path}: 'sets' must be a non-empty list")
    names = [fixture.get("name") if isinstance(fixture, dict) else None for fixture in sets]
    if len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        raise FixtureError(f"{path}: every set needs a distinct non-empty 'name'")
    for fixture in sets:
        _check_set(fixture)
    return Fixtures(sets)


def _check_set(fixture: dict[str, Any]) -> None:
    """The set holds what an example's setup makes: its spaces with their actors, the
    collections, and consumers and tokens of those."""
    where = f"fixture set {fixture['name']!r}"
    try:
        spaces = fixture["spaces"]
        for role, actors in SPACE_ACTORS.items():
            space = spaces[role]
            if space["default_actor"] != actors[0] or not set(actors) <= set(space["actors"]):
                raise FixtureError(f"{where}: space {role} needs the actors {list(actors)}, "
                                   f"the first its default actor")
        held = {(c["space"], c["collection_id"], c["source_actor_id"])
                for c in fixture["collections"]}
        if not set(COLLECTIONS) <= held:
            raise FixtureError(f"{where}: needs the collections {list(COLLECTIONS)} "
                               "(space, collection_id, source_actor_id)")
        consumers = {(c["space"], c["consumer_id"]): c["actor_id"]
                     for c in fixture["consumers"]}
        for token in fixture["tokens"]:
            if consumers.get((token["space"], token["consumer_id"])) != token["actor_id"]:
                raise FixtureError(f"{where}: token {token['token_id']} names a consumer "
                                   "that is not listed for its actor")
            if not isinstance(token["token"], str) or not token["token"]:
                raise FixtureError(f"{where}: token {token['token_id']} has no secret")
    except (KeyError, TypeError) as missing:
        raise FixtureError(f"{where}: missing or malformed {missing}") from None
