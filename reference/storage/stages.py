"""The order of receipt stages in SQL: none < received < processed."""

from __future__ import annotations


def stage_rank(column: str) -> str:
    """none < received < processed, as an SQL expression."""
    return f"(CASE {column} WHEN 'processed' THEN 2 WHEN 'received' THEN 1 ELSE 0 END)"


#: An ACK line of ``submission_ack_items`` that moves its receipt forward.
ADVANCED = f"({stage_rank('requested_stage')} > {stage_rank('prior_stage')})"
