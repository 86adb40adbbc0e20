"""What the fuzz phase checks, and the business rules it declares: the Schemathesis checks it
runs, each with the requirements of docs/protocol.md it exercises, and the refusals of valid
requests (and acceptances of invalid ones) that JSON Schema cannot express, each once, with
its reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from waypost.properties.coverage.registered import register


@dataclass(frozen=True)
class FuzzCheck:
    """A Schemathesis check the fuzz phase runs, and the requirements it exercises."""

    name: str
    finding: str  # what a failure of it is called in the report
    requirements: tuple[str, ...]


FUZZ_CHECKS = (
    FuzzCheck("not_a_server_error", "server error", ("WP-ERR-5", "WP-ERR-6", "WP-LOAD-5")),
    FuzzCheck("status_code_conformance", "undocumented status", ("WP-HTTP-7", "WP-ERR-2")),
    FuzzCheck("content_type_conformance", "undocumented content type",
              ("WP-HTTP-1", "WP-HTTP-7")),
    FuzzCheck("response_headers_conformance", "header violation", ("WP-HTTP-7",)),
    FuzzCheck("response_schema_conformance", "schema violation",
              ("WP-HTTP-3", "WP-HTTP-7", "WP-HTTP-10", "WP-HTTP-11", "WP-HTTP-12", "WP-HTTP-13",
               "WP-HTTP-14", "WP-HTTP-15", "WP-HTTP-16", "WP-HTTP-17", "WP-ERR-1")),
    FuzzCheck("negative_data_rejection", "invalid request accepted",
              ("WP-VAL-1", "WP-VAL-2", "WP-VAL-3", "WP-HTTP-4", "WP-HTTP-6")),
    FuzzCheck("positive_data_acceptance", "valid request refused",
              ("WP-VAL-4", "WP-VAL-6", "WP-VAL-7", "WP-VAL-14", "WP-VAL-18", "WP-VAL-20")),
    FuzzCheck("missing_required_header", "missing credential accepted", ("WP-AUTH-1", "WP-AUTH-2")),
    FuzzCheck("ignored_auth", "credential ignored", ("WP-AUTH-2", "WP-CTRL-1")),
    FuzzCheck("use_after_free", "resource alive after delete", ("WP-HTTP-7",)),
    FuzzCheck("ensure_resource_availability", "created resource missing", ("WP-HTTP-7",)),
)

#: The steps of the phase's own setup (``fuzz.provision``), each a check of the requirements
#: a server breaks when it refuses or garbles it: a failure is the phase's one finding, with
#: the ids of the step's answer, never an error of the run.
SETUP_CHECKS = (
    FuzzCheck("setup_control", "setup: control plane refused",
              ("WP-CTRL-3", "WP-CTRL-6", "WP-CTRL-11", "WP-CTRL-12", "WP-AUTH-8", "WP-AUTH-9")),
    FuzzCheck("setup_send", "setup: send refused", ("WP-MSG-9", "WP-HTTP-10")),
    FuzzCheck("setup_upload", "setup: upload refused", ("WP-UPL-2", "WP-UPL-3", "WP-HTTP-15")),
    FuzzCheck("setup_publish", "setup: publish refused", ("WP-MEM-17", "WP-HTTP-16")),
)
for _setup in SETUP_CHECKS:  # the requirement table's (FUZZ_CHECKS: conformance/requirements)
    register(f"fuzz {_setup.name}", _setup.requirements)


@dataclass(frozen=True)
class Allowance:
    """Answers a check must also accept on some operations: a rule of the protocol that the
    request's JSON Schema cannot state (it depends on stored state or on a total)."""

    check: str
    statuses: tuple[int, ...]
    operations: tuple[str, ...]  # operationIds; () for every operation
    reason: str
    requirements: tuple[str, ...]


_EVERY_WRITE = ("sendMessage", "acknowledge", "prepareBlob", "commitUpload", "publishMemory",
                "createSpace", "createActor", "disableActor", "createConsumer", "changeView",
                "createCollection", "issueToken", "revokeToken", "addThreadMembers")

ALLOWANCES = (
    Allowance("positive_data_acceptance", (404,), (),
              "Ids a request names must exist and be visible to the caller (a generated id "
              "names nothing)", ("WP-AUTH-13", "WP-HTTP-6", "WP-MSG-3")),
    Allowance("positive_data_acceptance", (403,), (),
              "The fuzz token holds every scope, but a grant on a collection, a recipient or a "
              "blob is per id", ("WP-AUTH-14", "WP-AUTH-6")),
    Allowance("positive_data_acceptance", (409,), (*_EVERY_WRITE, "readFeed"),
              "An idempotency key reused with another body, a head that moved, an upload not "
              "yet stored, an id taken, a cursor of another view",
              ("WP-IDEM-9", "WP-IDEM-12", "WP-MEM-16", "WP-CTRL-2")),
    Allowance("positive_data_acceptance", (410,), ("putUploadContent", "commitUpload"),
              "An upload past its expiry", ("WP-UPL-7",)),
    Allowance("positive_data_acceptance", (413,), (),
              "Totals past a published limit: the whole body over request_bytes, canonical "
              "metadata over metadata_bytes, entries of a revision", ("WP-LIM-3", "WP-LIM-4")),
    Allowance("positive_data_acceptance", (422,), ("sendMessage", "publishMemory",
                                                   "putUploadContent"),
              "Attachments and entries must name sealed blobs of the space; uploaded bytes "
              "must match the declared size and SHA-256", ("WP-MEM-7", "WP-MSG-8", "WP-UPL-3")),
    Allowance("positive_data_acceptance", (400,), ("sendMessage", "acknowledge",
                                                   "publishMemory", "issueToken",
                                                   "createConsumer", "changeView", "readFeed",
                                                   "readRevisionItems"),
              "Rules across members: one item id and one path at most once per publish, "
              "delete_ids only in delta mode, in_reply_to in the thread, an ACK without items "
              "needs a checkpoint, a consumer's actor in its space, an opaque cursor minted "
              "by the server", ("WP-VAL-2", "WP-MEM-5", "WP-MEM-19", "WP-RCPT-4", "WP-CUR-2")),
    Allowance("positive_data_acceptance", (400,), ("createSpace", "createActor",
                                                   "createConsumer", "createCollection",
                                                   "issueToken", "addThreadMembers"),
              "Control-plane ids are chosen by the caller: one already taken (or a source_uri "
              "of another space) is 400 already_exists; a token's consumer must be its actor's",
              ("WP-CTRL-3", "WP-CTRL-11")),
    Allowance("positive_data_acceptance", (416,), ("readBlobContent",),
              "A Range whose one byte range starts at or past the end of the blob is "
              "unsatisfiable (RFC 9110); a server that ignores Range answers 200",
              ("WP-UPL-9", "WP-HTTP-3")),
    Allowance("negative_data_rejection", (413,), (),
              "Text past its byte limit is 413 RESOURCE_LIMIT, not 400 (the schema's maxLength "
              "is a character bound)", ("WP-VAL-17", "WP-LIM-3")),
    Allowance("negative_data_rejection", (409,), _EVERY_WRITE,
              "An invalid body under a key already used is an idempotency conflict first",
              ("WP-IDEM-9",)),
)

#: What the kit does to every generated body before sending it (``fuzz_bodies.BodyRules``).
BODY_RULES = {
    "integers without a fraction": "JSON Schema's integer admits 1.0; a Waypost integer "
                                   "written with a fraction is 400 (WP-VAL-7, WP-VAL-11)",
    "a fresh request_id": "A key reused with another body is a conflict (WP-IDEM-9): a "
                          "well-formed generated key gets a unique suffix, so the write is "
                          "performed and its answer checked",
    "bytes, not characters": "A text's maxLength is a quarter of its byte limit (always "
                             "safe to generate); a body that breaks only a maxLength and is "
                             "within every x-waypost-max-bytes is valid, so its acceptance is "
                             "no finding (fuzz_bodies.ByteExact) (WP-VAL-15, WP-VAL-17)",
    "real ids": "In every other body, a well-formed generated id of a recipient, actor, "
                "attachment, blob, thread or message is replaced by one the run provisioned "
                "(a generated id names nothing: the request would only reach a 404)",
}

#: Schemathesis checks the fuzz phase does not run, with the reason.
NOT_RUN = {
    "unsupported_method": "A method a path does not serve answers 404 NOT_FOUND like an "
                          "unknown path (WP-HTTP-5), not 405",
    "object_level_authorization": "Needs two users' resources; P01/P02 of the kit check "
                                  "isolation between spaces and actors",
    "allow_header_conformance": "Follows from 405 answers, which Waypost does not give",
    "max_response_time": "Timing is measured by benchmarks, never asserted",
}


def allowed(check: str, operation: str) -> list[int]:
    """Extra statuses ``check`` accepts on ``operation``."""
    return sorted({status for rule in ALLOWANCES if rule.check == check
                   and (not rule.operations or operation in rule.operations)
                   for status in rule.statuses})


def requirements_of(check: str) -> tuple[str, ...]:
    return next((c.requirements for c in (*FUZZ_CHECKS, *SETUP_CHECKS) if c.name == check), ())


def table() -> list[dict[str, Any]]:
    """The declared allowances, for reports and docs."""
    return [{"check": rule.check, "statuses": list(rule.statuses),
             "operations": list(rule.operations) or "every", "reason": rule.reason,
             "requirements": list(rule.requirements)} for rule in ALLOWANCES]
