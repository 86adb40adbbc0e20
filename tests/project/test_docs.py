"""Documentation a test keeps true: the catalogue, docs/spec.md and the kit's commands agree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from waypost.properties.coverage.catalogue import CATALOGUE
from waypost.properties.coverage.command_names import COMMANDS
from waypost.properties.rules import RULES
from waypost.properties.rules.machine import WaypostMachine

ROOT = Path(__file__).resolve().parents[2]
SPEC = (ROOT / "docs" / "spec.md").read_text()


def test_every_property_has_a_row_in_the_spec() -> None:
    for prop in CATALOGUE:
        assert re.search(rf"^\| {prop.pid}[ |–]|^\| P1[1-8]–P1[0-9]", SPEC, re.M), prop.pid
        assert re.search(rf"^\| {prop.pid} \|.*$", SPEC, re.M), f"{prop.pid} has no row"


def test_catalogue_names_only_checks_that_name_the_property() -> None:
    """A command is claimed for a property only when one of its checks names one of the
    property's requirement ids (read from the source, never written by hand)."""
    from waypost.properties.coverage.check_sites import named_checks
    from waypost.properties.verdicts.owners import requirements_of

    checks = named_checks()
    for prop in CATALOGUE:
        assert prop.checked_by, f"{prop.pid}: no check of the kit names any of its ids"
        for name in prop.checked_by:
            assert checks[name] & requirements_of(prop.pid), (prop.pid, name)
            kind, _, what = name.partition(" ")
            if kind == "command":
                assert what in COMMANDS, name
            elif kind == "invariant":
                assert hasattr(WaypostMachine, what), name


def test_every_command_is_performed_by_a_rule() -> None:
    performed = {command for rule in RULES for command in rule.performs}
    assert performed <= set(COMMANDS)
    # every example's first command; the limit phase of each run
    assert set(COMMANDS) - performed == {"setup", "check_limit"}


def test_each_limit_check_names_the_rules_of_its_properties() -> None:
    from waypost.properties.coverage.check_sites import named_checks
    from waypost.properties.limits.registry import registry
    from waypost.properties.verdicts.owners import requirements_of

    for limit in registry().values():
        assert limit.properties, limit.name
        for pid in limit.properties:
            assert named_checks()[f"limit {limit.name}"] & requirements_of(pid), (limit.name, pid)


def test_the_spec_table_lists_the_computed_checks() -> None:
    from tools.spec_checks import render

    assert render(SPEC) == SPEC, "stale: run python tools/spec_checks.py"


def test_cli_help_names_every_command() -> None:
    from waypost.cli import parser

    text = parser().format_help()
    for command in ("serve", "admin", "conformance", "bench", "consumer", "mcp"):
        assert command in text


# The contract in docs/: requirement ids, no reference to texts outside the repository, and
# section citations that resolve.

PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()
PROPERTIES = (ROOT / "docs" / "properties.md").read_text()
DEFINED = re.compile(r"\*\*(WP-[A-Z]+-\d+)\*\*")
CITED = re.compile(r"\bWP-[A-Z]+-(?:\d+|#)")
KEYWORDS = re.compile(r"\b(MUST|SHOULD|SHALL|REQUIRED|RECOMMENDED)\b")


def _tracked_texts() -> dict[str, str]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    texts = {}
    for name in filter(None, names):
        path = ROOT / name
        if not path.is_file():
            continue
        try:
            texts[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary
    return texts


def _areas() -> set[str]:
    return set(re.findall(r"^\| `([A-Z]+)` \| §", PROTOCOL, re.M))


def test_requirement_ids_are_unique_and_well_formed() -> None:
    ids = DEFINED.findall(PROTOCOL)
    assert len(ids) > 150
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    areas = _areas()
    assert {"VAL", "AUTH", "IDEM", "HTTP", "ERR", "VIS", "FEED", "CUR", "RCPT", "MEM", "UPL",
            "LIM", "LOAD", "CTRL"} <= areas
    for rid in ids:
        match = re.fullmatch(r"WP-([A-Z]+)-([1-9][0-9]*)", rid)
        assert match, rid
        assert match.group(1) in areas, rid
    for other in ("properties.md", "spec.md", "porting.md"):
        assert not DEFINED.findall((ROOT / "docs" / other).read_text()), f"ids are defined in {other}"


def test_every_cited_requirement_id_exists() -> None:
    defined = set(DEFINED.findall(PROTOCOL + (ROOT / "docs" / "consumer.md").read_text()))
    for name, text in _tracked_texts().items():
        for rid in CITED.findall(text):
            if rid in ("WP-AREA-n",):
                continue
            assert rid in defined, f"{name} cites {rid}, which no doc of the contract defines"


def _blocks(text: str) -> list[str]:
    """Paragraphs, list items and table rows (code blocks left out)."""
    blocks: list[list[str]] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or not line.strip():
            blocks.append([])
            continue
        starts = re.match(r"(- |\| |#|> |\d+\. )", line)
        if starts or not blocks or not blocks[-1]:
            blocks.append([line])
        else:
            blocks[-1].append(line)
    return ["\n".join(block) for block in blocks if block]


def test_every_must_and_should_carries_an_id() -> None:
    normative = PROTOCOL[PROTOCOL.index("\n## 1. "):]
    for block in _blocks(normative):
        if KEYWORDS.search(block):
            assert DEFINED.search(block), f"a requirement without an id:\n{block}"
    for other in ("properties.md", "porting.md"):
        assert not KEYWORDS.search((ROOT / "docs" / other).read_text()), other


def test_the_repository_stands_alone() -> None:
    """No tracked file refers to a text outside the repository or to a path of one machine."""
    outside = ["../" + "shared", "shared" + "/spec", "seeds" + "/", "shared" + " spec",
               "seed" + " §", "RFC" + "-000", "design" + " input"]
    # the contract's own architecture text lies outside; ours is docs/architecture.md
    theirs = re.compile(r"(?<!docs/)(?<!\w)architecture" + r"\.md")
    machine = re.compile(r"(?<![\w.~-])/(?:work|home|root|mnt|Users)/|" + re.escape(str(ROOT)))
    for name, text in _tracked_texts().items():
        for needle in outside:
            assert needle not in text, f"{name} refers to {needle!r}"
        assert not theirs.search(text), f"{name} refers to an architecture text not in docs/"
        found = machine.search(text)
        assert found is None, f"{name} names a path of this machine: {found.group(0)!r}"


def _sections() -> set[str]:
    numbers = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", PROTOCOL, re.M))
    return numbers | {number.split(".")[0] for number in numbers}


def test_section_citations_resolve() -> None:
    """Every "protocol.md §N" (also §N.M and §N–§M) in the repository names a section of
    docs/protocol.md; every bare § inside it too; every P-number near "properties.md" exists."""
    sections = _sections()
    assert {str(n) for n in range(1, 15)} <= sections
    cite = re.compile(r"protocol\.md`?\)?,?\s*§(\d+(?:\.\d+)?)(?:\s*(?:–|-|to)\s*§?(\d+(?:\.\d+)?))?")
    for name, text in _tracked_texts().items():
        for match in cite.finditer(text):
            for number in filter(None, match.groups()):
                assert number in sections, f"{name}: {match.group(0)!r} names no section"
        for match in re.finditer(r"properties\.md\W{0,4}(P\d\d)", text):
            assert f"### {match.group(1)} " in PROPERTIES, f"{name}: {match.group(0)!r}"
    for match in re.finditer(r"(?<!RFC \d{4} )§(\d+(?:\.\d+)?)", PROTOCOL):
        assert match.group(1) in sections, f"docs/protocol.md cites §{match.group(1)}"


def test_properties_doc_keeps_the_numbering() -> None:
    assert re.findall(r"^### (P\d\d) ", PROPERTIES, re.M) == [p.pid for p in CATALOGUE]


def test_the_architecture_map_is_current_and_its_folders_are_those_on_disk() -> None:
    """docs/architecture.md: its property map is what the checks compute, and its folder list
    is exactly the packages of the five source folders."""
    from tools.architecture_map import OUT, render

    text = OUT.read_text()
    assert text == render(text), "stale map: run python tools/architecture_map.py"
    block = text.split("## The folders", 1)[1].split("```")[1]
    listed = {line.split()[0].rstrip("/") for line in block.splitlines() if line.strip()}
    on_disk = {str(path.parent.relative_to(ROOT)) for top in (
        "commands", "reference", "adapters", "properties", "conformance")
        for path in (ROOT / top).rglob("__init__.py")}
    assert listed == on_disk
