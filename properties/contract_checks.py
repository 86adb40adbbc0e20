"""The contract checks of the hostile phase: one-shot checks of requirements the stateful model
does not exercise — the route table and the MCP entry (``contract_routes``); control-plane
replays, failures and reads (``contract_control``); the values of provisioning and thread
members (``contract_provision``); token expiry, test hooks and the order of errors
(``contract_auth``); times, long paths, error details and generated ids
(``contract_values``); how ``details.field`` names a place (``contract_fields``); failures no
key records, reference grants, writes without their scope, collection filters
(``contract_grants``); a stalled upload (``contract_load``); heads that do not parse
(``contract_wire``).

Each check is a :class:`~waypost.properties.hostile.HostileCheck` with its requirement ids;
``conformance/hostile.py`` runs them after the hostile-input checks, each in a fresh space, and
importing this module tags them in the requirement registry (``hostile <name>``)."""

from __future__ import annotations

from waypost.properties import (
    contract_auth,
    contract_control,
    contract_fields,
    contract_grants,
    contract_ids,
    contract_load,
    contract_provision,
    contract_routes,
    contract_values,
    contract_wire,
)
from waypost.properties.hostile import HostileCheck
from waypost.properties.requirements import register

CHECKS: tuple[HostileCheck, ...] = (
    *contract_routes.CHECKS, *contract_control.CHECKS, *contract_ids.CHECKS,
    *contract_provision.CHECKS, *contract_auth.CHECKS, *contract_values.CHECKS,
    *contract_fields.CHECKS, *contract_grants.CHECKS, *contract_load.CHECKS,
    *contract_wire.CHECKS)

for _check in CHECKS:
    register(f"hostile {_check.name}", _check.requirements)
