"""Manifest inputs parsed as their bytes arrive (protocol.md §9, docs/spec.md "Bounded
manifests"): the document is built event by event (``ijson``), and refused at the first entry
past ``memory_entries_per_revision``, at the first unknown top-level field, or past a nesting
depth, so a manifest never makes the server hold more than its bounded input.

Usage: ``reader = ManifestReader("delta", limits)``; ``reader.feed(chunk)`` for each chunk;
``reader.close()`` gives the :class:`Changes` (or raises as the inline input would).
"""

from __future__ import annotations

import json
from typing import Any

import ijson

from waypost.reference.domain.errors import InvalidRequest, ResourceLimit
from waypost.reference.domain.memory_requests import Changes, manifest_changes
from waypost.reference.domain.published_limits import Limits

#: Deeper nesting is refused (an entry's metadata is the deepest thing a manifest needs).
MAX_DEPTH = 64
_TOP = ("items", "delete_ids")
_SCALARS = {"null", "boolean", "number", "string", "integer", "double"}


def _refused(message: str) -> InvalidRequest:
    return InvalidRequest(f"manifest blob: {message}", field="manifest_blob_id")


class _Builder:
    """Builds the JSON value from parse events, counting the elements of the top-level arrays."""

    def __init__(self, high: int) -> None:
        self.high = high
        self.stack: list[tuple[dict[str, Any] | list[Any], str | None]] = []
        self.value: Any = None
        self.done = False
        self.counts = dict.fromkeys(_TOP, 0)

    def event(self, kind: str, value: Any) -> None:
        if kind == "map_key":
            self._key(str(value))
        elif kind in ("end_map", "end_array"):
            container, _ = self.stack.pop()
            self._add(container)
        else:
            self._count()
            if kind == "start_map":
                self._push({})
            elif kind == "start_array":
                self._push([])
            elif kind in _SCALARS:
                self._add(value)

    def _push(self, container: dict[str, Any] | list[Any]) -> None:
        if not self.stack and not isinstance(container, dict):
            raise _refused("manifest must be a JSON object")
        if len(self.stack) >= MAX_DEPTH:
            raise _refused(f"nested deeper than {MAX_DEPTH} levels")
        self.stack.append((container, None))

    def _key(self, key: str) -> None:
        container, _ = self.stack[-1]
        assert isinstance(container, dict)
        if key in container:
            raise _refused("request body repeats a key")
        if len(self.stack) == 1 and key not in _TOP:
            raise _refused(f"unknown field manifest.{key}")
        self.stack[-1] = (container, key)

    def _count(self) -> None:
        """A new element starts: refuse the first one past the limit, before building it."""
        if len(self.stack) != 2 or not isinstance(self.stack[-1][0], list):
            return
        name = self.stack[0][1]
        assert name is not None
        self.counts[name] += 1
        if self.counts[name] > self.high:
            raise ResourceLimit(f"manifest.{name} holds more than {self.high} elements",
                                field=f"manifest.{name}", limit="memory_entries_per_revision",
                                max=self.high)

    def _add(self, value: Any) -> None:
        if not self.stack:
            if not isinstance(value, dict):
                raise _refused("manifest must be a JSON object")
            self.value, self.done = value, True
            return
        container, key = self.stack[-1]
        if isinstance(container, list):
            container.append(value)
        else:
            assert key is not None
            container[key] = value


class ManifestReader:
    """A push parser for one manifest input."""

    def __init__(self, mode: str, limits: Limits) -> None:
        self.mode, self.limits = mode, limits
        self._events: list[tuple[str, Any]] = ijson.sendable_list()
        self._parser = ijson.basic_parse_coro(self._events, use_float=True)
        self._builder = _Builder(limits.memory_entries_per_revision)

    def feed(self, chunk: bytes) -> None:
        """Parse the next bytes (raises at the first fault)."""
        try:
            self._parser.send(chunk)
        except (ijson.JSONError, UnicodeError, ValueError):
            raise _refused("request body must be JSON text in UTF-8") from None
        self._consume()

    def close(self) -> Changes:
        """End of input: the changes, validated like inline input."""
        try:
            self._parser.close()
        except (ijson.JSONError, UnicodeError, ValueError):
            raise _refused("request body must be JSON text in UTF-8") from None
        self._consume()
        if not self._builder.done:
            raise _refused("request body must be JSON text in UTF-8")
        document = self._builder.value
        try:  # a lone surrogate ("\ud800") is valid JSON but no UTF-8 text
            json.dumps(document, ensure_ascii=False).encode("utf-8")
        except UnicodeError:
            raise _refused("request body must be JSON text in UTF-8") from None
        return manifest_changes(document, self.mode, self.limits)

    def _consume(self) -> None:
        for kind, value in self._events:
            self._builder.event(kind, value)
        del self._events[:]
