"""The Waypost/1 error hierarchy (protocol.md §7) and its one envelope.

Every failure the server reports is a :class:`WaypostError`; the HTTP layer turns it into
``{"error": {"code", "message", "details"}}`` with the status the code fixes. Each class names
its code; the status comes from the contract's data file (``waypost/contract.json``, which the
kit reads too), so an unknown code fails at import.
"""

from __future__ import annotations

from typing import Any, ClassVar

from waypost.reference.domain.contract import STATUS

JsonObject = dict[str, Any]


class WaypostError(Exception):
    """A protocol error: a code, its HTTP status, a human message and machine details."""

    code: ClassVar[str] = "INTERNAL"
    status: ClassVar[int] = STATUS["INTERNAL"]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.status = STATUS[cls.code]

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: JsonObject = details
        self.replayed = False  # set when the error is a submission's recorded stable result

    def envelope(self) -> JsonObject:
        """The §7 envelope, e.g. ``{"error": {"code": "NOT_FOUND", "message": …, "details": {}}}``."""
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class InvalidRequest(WaypostError):
    code = "INVALID_REQUEST"


class Unauthenticated(WaypostError):
    code = "UNAUTHENTICATED"


class Forbidden(WaypostError):
    code = "FORBIDDEN"


class MissingScope(Forbidden):
    """The token lacks the operation's scope, found before its body is read (WP-AUTH-12)."""

    def __init__(self, scope: str) -> None:
        super().__init__(f"the token lacks the {scope} scope", field="scope")


class NotFound(WaypostError):
    code = "NOT_FOUND"


class IdempotencyConflict(WaypostError):
    code = "IDEMPOTENCY_CONFLICT"


class RevisionConflict(WaypostError):
    code = "REVISION_CONFLICT"


class SubmissionPending(WaypostError):
    code = "SUBMISSION_PENDING"


class CursorInvalid(WaypostError):
    code = "CURSOR_INVALID"


class CursorStale(WaypostError):
    code = "CURSOR_STALE"


class ContentMismatch(WaypostError):
    code = "CONTENT_MISMATCH"


class NotReady(WaypostError):
    code = "NOT_READY"


class UploadExpired(WaypostError):
    code = "UPLOAD_EXPIRED"


class ReferenceInvalid(WaypostError):
    code = "REFERENCE_INVALID"


class ResourceLimit(WaypostError):
    code = "RESOURCE_LIMIT"


class Unavailable(WaypostError):
    code = "UNAVAILABLE"


class RequestTimeout(WaypostError):
    """A request the server stopped reading because it came too slowly (§12)."""

    code = "REQUEST_TIMEOUT"


ERROR_CLASSES: tuple[type[WaypostError], ...] = (
    InvalidRequest,
    Unauthenticated,
    Forbidden,
    NotFound,
    IdempotencyConflict,
    RevisionConflict,
    SubmissionPending,
    CursorInvalid,
    CursorStale,
    ContentMismatch,
    NotReady,
    UploadExpired,
    ReferenceInvalid,
    ResourceLimit,
    Unavailable,
    RequestTimeout,
)

BY_CODE: dict[str, type[WaypostError]] = {cls.code: cls for cls in ERROR_CLASSES}


def from_code(code: str, message: str, details: JsonObject | None = None) -> WaypostError:
    """Rebuild a recorded failure, e.g. a replayed ``REVISION_CONFLICT``."""
    return BY_CODE[code](message, **(details or {}))


def not_found(what: str = "resource") -> NotFound:
    """The one answer for nonexistent, invisible and foreign objects (P01): same text for all."""
    return NotFound(f"{what} not found")


def credential_refused() -> Unauthenticated:
    """The one answer for any bearer token that does not authenticate now (P02): missing,
    malformed, unknown, expired, revoked, or of a disabled actor or consumer."""
    return Unauthenticated("missing, unknown, expired or revoked credential")


def internal_error() -> WaypostError:
    """The answer to an unexpected failure: ``500 INTERNAL``, telling nothing about it."""
    return WaypostError("internal error")


class StorageUnavailable(Exception):
    """A temporary storage failure (busy, I/O, unreachable): the request may be retried."""
