"""What a SQL driver is: something that runs commit plans atomically and reads consistently."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from waypost.reference.storage.plan import CommitPlan, Row, Statement


class Driver(Protocol):
    """The private SQL boundary both drivers implement (SQLite via apsw; D1 via a batch)."""

    name: str

    async def run(self, plan: CommitPlan) -> list[Row]:
        """Execute every statement atomically and return the rows of the plan's outcome read."""
        ...

    async def read(self, statements: Sequence[Statement]) -> list[list[Row]]:
        """Run read-only statements against one consistent snapshot; rows per statement."""
        ...

    async def migrate(self) -> list[int]:
        """Apply pending migrations, each with its ``schema_migrations`` row; return versions applied."""
        ...

    async def aclose(self) -> None:
        """Release the connection."""
        ...
