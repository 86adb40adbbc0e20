"""Published limits (protocol.md §11): what a deployment honours, advertised by describe."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Limits:
    """Defaults are the local SQLite deployment's; a D1 deployment publishes smaller ones."""

    ack_items: int = 20
    recipients: int = 64
    attachments: int = 16
    subject_bytes: int = 256
    body_text_bytes: int = 64 * 1024
    metadata_bytes: int = 4096
    memory_entries_per_revision: int = 10_000
    inline_items_per_publish: int = 1_000
    manifest_input_bytes: int = 16 * 1024 * 1024
    revision_manifest_bytes: int = 32 * 1024 * 1024
    upload_bytes: int = 64 * 1024 * 1024
    page_limit: int = 100
    upload_expiry_seconds: int = 3600
    wait_seconds: int = 30
    request_bytes: int = 1024 * 1024

    def published(self) -> dict[str, int]:
        """The ``limits`` object of ``GET /v1/describe``."""
        return asdict(self)


#: What a D1 deployment honours. A publish's inputs are staged in the prepare batch, in JSON
#: chunks of at most 1.9 MB (D1 takes values up to 2 MB), and a batch may hold 50 statements
#: (Workers Free). The largest entry escaped in JSON is under 15 KB (a 1 KiB path of control
#: characters is 6 KiB as \u00XX, 4 KiB of metadata of quotes 8 KiB, two 96-byte ids), so 4,000
#: entries need at most 32 chunks: the prepare batch fits with its guard, its state change, its
#: outcome read and its cleanup. Everything else fits D1 as the defaults of protocol.md §11 do.
D1_LIMITS = Limits(memory_entries_per_revision=4_000, revision_manifest_bytes=16 * 1024 * 1024)
