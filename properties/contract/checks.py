"""The contract checks of the hostile phase: one-shot checks of requirements the stateful model
does not exercise — the route table and the MCP entry (``routes``); control-plane
replays, failures and reads (``control``); the values of provisioning and thread
members (``provision``); token expiry, test hooks and the order of errors
(``auth``); times, long paths, error details and generated ids
(``values``); how ``details.field`` names a place (``fields``); failures no
key records, reference grants, writes without their scope, collection filters
(``grants``); a stalled upload (``stalled_upload``); heads that do not parse
(``wire``).

Each check is a :class:`~waypost.properties.hostile.probes.HostileCheck` with its requirement ids;
``conformance/hostile_phase.py`` runs them after the hostile-input checks, each in a fresh space, and
importing this module tags them in the requirement registry (``hostile <name>``)."""

from __future__ import annotations

from waypost.properties.contract import auth as contract_auth
from waypost.properties.contract import control as contract_control
from waypost.properties.contract import fields as contract_fields
from waypost.properties.contract import grants as contract_grants
from waypost.properties.contract import ids as contract_ids
from waypost.properties.contract import provision as contract_provision
from waypost.properties.contract import routes as contract_routes
from waypost.properties.contract import stalled_upload as contract_load
from waypost.properties.contract import values as contract_values
from waypost.properties.contract import wire as contract_wire
from waypost.properties.coverage.registered import register
from waypost.properties.hostile.probes import HostileCheck

CHECKS: tuple[HostileCheck, ...] = (
    *contract_routes.CHECKS, *contract_control.CHECKS, *contract_ids.CHECKS,
    *contract_provision.CHECKS, *contract_auth.CHECKS, *contract_values.CHECKS,
    *contract_fields.CHECKS, *contract_grants.CHECKS, *contract_load.CHECKS,
    *contract_wire.CHECKS)

for _check in CHECKS:
    register(f"hostile {_check.name}", _check.requirements)
