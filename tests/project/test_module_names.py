"""One name, one place: no module name of the kit's model and checks (properties/) is also a
module of its runs (conformance/), so a name in a traceback or a review says which wing it is."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _names(folder: str) -> set[str]:
    return {path.name for path in (ROOT / folder).rglob("*.py") if path.name != "__init__.py"}


def test_no_module_name_is_in_both_wings_of_the_kit() -> None:
    assert not _names("properties") & _names("conformance")
