"""The contract checks of the hostile phase: one-shot checks of requirements the stateful model
does not exercise — the route table and the MCP entry (``contract_routes``); control-plane
replays, failures and reads (``contract_control``); the values of provisioning and thread
members (``contract_provision``); token expiry, test hooks and the order of errors
(``contract_auth``); times, long paths, error details and generated ids
(``contract_values``); a stalled upload (``contract_load``).

Each check is a :class:`~waypost.properties.hostile.HostileCheck` with its requirement ids;
``conformance/hostile.py`` runs them after the hostile-input checks, each in a fresh space, and
importing this module tags them in the requirement registry (``hostile <name>``)."""

from __future__ import annotations

from waypost.properties import (
    contract_auth,
    contract_control,
    contract_ids,
    contract_load,
    contract_provision,
    contract_routes,
    contract_values,
)
from waypost.properties.hostile import HostileCheck
from waypost.properties.requirements import register

CHECKS: tuple[HostileCheck, ...] = (
    *contract_routes.CHECKS, *contract_control.CHECKS, *contract_ids.CHECKS,
    *contract_provision.CHECKS, *contract_auth.CHECKS, *contract_values.CHECKS, *contract_load.CHECKS)

for _check in CHECKS:
    register(f"hostile {_check.name}", _check.requirements)
