"""A form the server refused comes back as it was sent: every value the user typed, and the
error next to the field it names (``details.field`` of the refusal), or above the form when it
names none of the form's fields."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from waypost.reference.domain.errors import WaypostError

#: Form fields that never come back: the CSRF token, and the request id (a corrected form is a
#: new request: it gets a new id, so the refusal is not replayed to it).
NOT_RETURNED = frozenset({"csrf", "request_id", "confirm"})


@dataclasses.dataclass(frozen=True)
class RefusedForm:
    """What a page needs to show a refused form again."""

    form: str  #: the form's ``id`` attribute
    field: str  #: the input the error belongs next to ("" for the form as a whole)
    message: str
    values: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def value(self, name: str) -> str:
        """The (first) value the user sent for ``name``."""
        return (self.values.get(name) or [""])[0]


def refused(form_id: str, form: Mapping[str, list[str]], error: WaypostError,
            aliases: Mapping[str, str] | None = None) -> RefusedForm:
    """The refused form ``form_id``: the values sent, and the input named by the error's
    ``details.field`` (a protocol field such as ``default_actor.actor_id`` or
    ``collections[1].actions``, mapped to an input through ``aliases`` or by its name)."""
    values = {name: list(sent) for name, sent in form.items() if name not in NOT_RETURNED}
    named = str(error.details.get("field", ""))
    input_name = input_for(named, set(values) | set((aliases or {}).values()), aliases or {})
    details = ", ".join(f"{key}: {value}" for key, value in error.details.items()
                        if key != "field" or not input_name)
    message = f"{error.message} ({details})" if details else error.message
    return RefusedForm(form_id, input_name, message, values)


def input_for(named: str, inputs: set[str], aliases: Mapping[str, str]) -> str:
    """The form input a protocol field belongs to: the field itself, else its longest prefix
    (``collections[1].actions`` → ``collections``), else its last part; "" if none is an
    input."""
    parts = [part for part in re.split(r"[.\[\]]+", named) if part and not part.isdigit()]
    candidates = [".".join(parts[:end]) for end in range(len(parts), 0, -1)]
    candidates += parts[-1:]
    for candidate in candidates:
        name = aliases.get(candidate, candidate)
        if name in inputs:
            return name
    return ""
