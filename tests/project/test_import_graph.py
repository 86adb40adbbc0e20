"""No import circle anywhere in the package (tools/import_graph.py): every import counts, the
ones inside functions and under ``TYPE_CHECKING`` too."""

from __future__ import annotations

from tools.import_graph import cycles, graph


def test_the_package_has_no_import_cycle() -> None:
    found = cycles(graph())
    assert not found, "import cycles (python tools/import_graph.py):\n" + "\n".join(
        " -> ".join(component) for component in found)


def test_the_cycle_finder_finds_a_circle_and_only_it() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [["a", "b", "c"]]


def test_type_only_and_function_level_imports_are_edges() -> None:
    edges = graph()
    world = "waypost.properties.commands.world"
    assert world in edges["waypost.properties.commands.acks"]  # a TYPE_CHECKING import
    assert "waypost.properties.model.fixture_sets" in edges["waypost.properties.wire.http"]
