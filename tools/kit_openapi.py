"""Generate ``conformance/openapi/waypost-1.json`` (the kit's own copy of the contract's OpenAPI
document) from the reference's ``/openapi.json``, without the reference's test hooks (run from
the repository root: ``python tools/kit_openapi.py``). The kit never imports the reference;
``tests/reference/http/test_openapi.py`` fails when the copy is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "conformance" / "openapi" / "waypost-1.json"
#: Schemas only the test hooks (``/_test/…``, not part of the contract) use.
HOOK_SCHEMAS = frozenset({"Clock", "ClockAdvanceRequest", "ArmFaultRequest", "Faults",
                          "EmptyRequest", "Restarted"})


def kit_document(served: dict[str, Any]) -> dict[str, Any]:
    """The served document less the test hooks' paths and schemas."""
    components = served["components"]
    return {**served,
            "paths": {path: item for path, item in served["paths"].items()
                      if not path.startswith("/_test/")},
            "components": {**components, "schemas": {
                name: schema for name, schema in components["schemas"].items()
                if name not in HOOK_SCHEMAS}}}


def render() -> str:
    from waypost.reference.http import openapi

    return json.dumps(kit_document(openapi.document()), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
