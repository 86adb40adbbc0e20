"""How the kit compares a server's answers with what it expects: only the keys the protocol
defines, replays by their stable part, probed ids masked, server times as milliseconds."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

#: An id no server holds: the answer every invisible or foreign id must equal.
MISSING = "zz-missing"


def stable(answer: Any) -> Any:
    """What a replay must repeat: a success body whole; of an error envelope its code and
    details (the human message may be worded anew)."""
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        return {"code": answer["error"].get("code"), "details": answer["error"].get("details")}
    return answer


def epoch_ms(text: Any) -> int | None:
    """An RFC 3339 time of the server as epoch milliseconds (None if it is not one)."""
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
        return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    except (TypeError, ValueError):
        return None


def masked(answer: Any, probed: str | None) -> Any:
    """An answer with the probed id replaced, so a foreign and a missing id compare equal when
    a server echoes the id it was given."""
    text = json.dumps(answer, sort_keys=True)
    return json.loads(text.replace(probed, "<id>")) if probed else answer


def protocol_view(got: Any, expected: Any) -> Any:
    """``got`` restricted to the keys the kit expects (servers may add fields), with recipient
    sets compared as sets (sorted)."""
    if isinstance(got, dict) and isinstance(expected, dict):
        return {key: (sorted(got[key]) if key == "recipient_ids" and isinstance(got[key], list)
                      else protocol_view(got[key], expected[key]))
                for key in expected if key in got}
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        return [protocol_view(g, e) for g, e in zip(got, expected, strict=True)]
    return got


def subset(got: Any, expected: dict[str, Any]) -> Any:
    """The keys of ``expected`` that ``got`` holds (``got`` itself if it is no object)."""
    return {k: got[k] for k in expected if k in got} if isinstance(got, dict) else got


def shaped(answer: Any, keys: set[str]) -> bool:
    """Whether an answer is a JSON object holding at least ``keys``."""
    return isinstance(answer, dict) and keys <= set(answer)
