"""Which requirement ids each command of the kit can check, read from the kit's own source.

A check names its requirement ids where it is made (``world.check(("WP-RCPT-6", …), …)``). This
module reads the kit's modules with :mod:`ast` and follows, from each command, every function
it calls or names (in its module, the modules it imports, and the methods of ``World``), with
the module constants they use: the ids found on the way are those the command's checks may
name. Nothing here is written by hand, so the catalogue's "checked by", ``--only``'s choice of
rules and the requirement table's "where checked" cannot drift from the checks.

The reading over-approximates what one run does (a branch not taken still counts);
``tests/properties/coverage/test_requirements.py`` checks that every id a command cited in a real run is among
those found here."""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache

from waypost.properties.coverage.command_names import COMMANDS
from waypost.properties.limits.registry import registry
from waypost.properties.verdicts.owners import requirements_of

PACKAGE = "waypost.properties"
ID = re.compile(r"^WP-[A-Z]+-\d+$")


@dataclass
class _Module:
    """What one module of the kit defines: functions (by qualified name), module constants,
    and the names its imports bring in."""

    name: str
    functions: dict[str, ast.AST] = field(default_factory=dict)
    constants: dict[str, ast.AST] = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)  # alias → module
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)  # name → (module, name)


def _parse(name: str) -> _Module:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(name)
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read(), spec.origin)
    module = _Module(name)
    for node in tree.body:
        _define(module, node)
    for found in ast.walk(tree):  # imports anywhere, also inside functions
        if isinstance(found, ast.ImportFrom) and (found.module or "").startswith(PACKAGE):
            _import(module, found)
    return module


def _define(module: _Module, node: ast.stmt) -> None:
    """Record a top-level function, a class's methods, or a module constant."""
    if isinstance(node, ast.FunctionDef):
        module.functions[node.name] = node
    elif isinstance(node, ast.ClassDef):
        for item in node.body:
            if isinstance(item, ast.FunctionDef):
                module.functions[f"{node.name}.{item.name}"] = item
    elif isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for leaf in (leaf for target in targets for leaf in ast.walk(target)):
            if isinstance(leaf, ast.Name):
                module.constants[leaf.id] = node


def _import(module: _Module, found: ast.ImportFrom) -> None:
    """``from waypost.properties[.x] import y``: a module alias, or a name of module x."""
    assert found.module is not None
    for alias in found.names:
        full = f"{found.module}.{alias.name}"
        if _is_module(full):
            module.modules[alias.asname or alias.name] = full
        else:
            module.imported[alias.asname or alias.name] = (found.module, alias.name)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


@cache
def _module(name: str) -> _Module:
    return _parse(name)


Key = tuple[str, str]  # (module, qualified name of a function or constant)


#: Classes whose methods a ``.name`` may be (the object a command or a rule is handed).
WORLD, DRIVER = (f"{PACKAGE}.commands.world", "World"), (f"{PACKAGE}.rules.driver", "RuleDriver")


def _edges(module: _Module, node: ast.AST,
           owner: tuple[str, str] = WORLD) -> tuple[set[str], set[Key]]:
    """The ids written in ``node`` and what it refers to: functions and constants of its own
    module, names it imported, ``alias.name`` of a kit module, and any ``.name`` that is a
    method of ``owner`` (``World`` by default)."""
    ids: set[str] = set()
    refs: set[Key] = set()
    world, cls = _module(owner[0]), owner[1]
    for leaf in ast.walk(node):
        if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str) and ID.match(leaf.value):
            ids.add(leaf.value)
        elif isinstance(leaf, ast.Name):
            if leaf.id in module.functions or leaf.id in module.constants:
                refs.add((module.name, leaf.id))
            elif leaf.id in module.imported:
                refs.add(module.imported[leaf.id])
        elif isinstance(leaf, ast.Attribute):
            base = leaf.value
            if isinstance(base, ast.Name) and base.id in module.modules:
                refs.add((module.modules[base.id], leaf.attr))
            elif f"{cls}.{leaf.attr}" in world.functions:
                refs.add((world.name, f"{cls}.{leaf.attr}"))
    return ids, refs


def _node(key: Key) -> tuple[_Module, ast.AST] | None:
    module = _module(key[0])
    node = module.functions.get(key[1]) or module.constants.get(key[1])
    if node is None and key[1] in module.imported:  # re-exported
        return _node(module.imported[key[1]])
    return (module, node) if node is not None else None


def _walk(start: Key, owner: tuple[str, str] = WORLD,
          stop: Callable[[Key], bool] = lambda key: False) -> Iterator[tuple[Key, set[str]]]:
    """Each function or constant ``start`` reaches (itself included), once, with the ids
    written in it; a key for which ``stop`` holds is yielded but not looked inside."""
    seen: set[Key] = set()
    pending: list[Key] = [start]
    while pending:
        key = pending.pop()
        if key in seen:
            continue
        seen.add(key)
        located = None if stop(key) else _node(key)
        if located is None:
            yield key, set()
            continue
        ids, refs = _edges(*located, owner=owner)
        yield key, ids
        pending.extend(refs - seen)


def requirement_ids(module: str, name: str) -> frozenset[str]:
    """Every requirement id that the function ``module.name`` (or what it reaches) names."""
    return frozenset(rid for _, ids in _walk((module, name)) for rid in ids)


@cache
def command_ids() -> dict[str, frozenset[str]]:
    """Command name → the requirement ids its checks may name (``properties/coverage/command_names.py``)."""
    return {name: requirement_ids(fn.__module__, fn.__name__)
            for name, fn in COMMANDS.items()}


def performed(draw: Callable[..., object]) -> frozenset[str]:
    """The names of the commands a rule's ``draw`` function performs: every command it names,
    directly or through the functions it calls or names (in its module, the modules it imports,
    and the methods of ``RuleDriver``), not looking inside a command."""
    commands = {(fn.__module__, fn.__name__): name for name, fn in COMMANDS.items()}
    return frozenset(commands[key] for key, _ in _walk(
        (draw.__module__, draw.__qualname__), DRIVER, stop=commands.__contains__)
        if key in commands)


@cache
def named_checks() -> dict[str, frozenset[str]]:
    """Every named check the state machine and the limit phase count under (``command X``,
    ``limit X``, ``invariant X``, the dead-token checks, the consumer matrix) → its ids."""
    checks = {f"command {name}": ids for name, ids in command_ids().items()
              if name != "check_limit"}
    for name, limit in registry().items():
        checks[f"limit {name}"] = requirement_ids(limit.check.__module__, limit.check.__name__)
    checks["invariant sequences_never_reused"] = requirement_ids(
        f"{PACKAGE}.rules.machine", "WaypostMachine._sequences_never_reused")
    dead = requirement_ids(f"{PACKAGE}.commands.world", "World.dead")
    checks["revoked token"] = dead - {"WP-CTRL-10"}
    checks["disabled actor"] = dead - {"WP-CTRL-13"}
    consumer = _module(f"{PACKAGE}.contract.consumer")
    checks["consumer matrix"] = frozenset().union(*(
        requirement_ids(consumer.name, fn) for fn in consumer.functions))
    return checks


def checked_by(pid: str) -> tuple[str, ...]:
    """The named checks that may check the property ``pid``: those whose ids include one of
    the property's (docs/properties.md, "Requirements by property")."""
    mine = requirements_of(pid)
    return tuple(name for name, ids in named_checks().items() if ids & mine)
