"""docs/examples.md is a fresh run of the reference (tools/worked_examples.py): never stale, an
example of every route of protocol.md §6.2 and §13 and of every code of §7, each answer as its
heading says and its JSON well-formed. The lists come from protocol.md's own tables."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tools.worked_examples import NOT_SHOWN, OUT, build

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()
ROUTE = re.compile(r"`((?:GET|POST|PUT|DELETE|PATCH) /[^`]*)`")
CODE = re.compile(r"`(\d{3}) ([A-Z_]+)`")


@dataclass
class Shown:
    heading: str
    request: str
    answer: str

    @property
    def route(self) -> str:
        return str(ROUTE.findall(self.heading)[-1])

    @property
    def answer_json(self) -> object:
        head, _, body = self.answer.partition("\n\n")
        assert "Content-Type: application/json" in head.split("\n"), self.heading
        return json.loads(body)


def _table(start: str, end: str) -> list[list[str]]:
    """The rows of the first table between two headings of protocol.md, cell by cell."""
    text = PROTOCOL[PROTOCOL.index(start):PROTOCOL.index(end, PROTOCOL.index(start))]
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def _routes() -> list[str]:
    return [row[0].strip("`").split("?")[0]
            for row in _table("### 6.2 Routes", "### 6.3") + _table("## 13. ", "## 14. ")]


def _codes() -> dict[str, int]:
    return {row[0].strip("`"): int(row[1]) for row in _table("## 7. Errors", "## 8. ")}


def _examples() -> list[Shown]:
    found = []
    for section in OUT.read_text().split("\n### ")[1:]:
        blocks = re.findall(r"^```http\n(.*?)\n```$", section, re.M | re.S)
        assert len(blocks) == 2, section.splitlines()[0]
        found.append(Shown(section.splitlines()[0], *blocks))
    return found


def test_the_examples_are_a_fresh_run() -> None:
    assert OUT.read_text() == build(), "stale: run python tools/worked_examples.py"


def test_every_route_and_every_code_has_an_example() -> None:
    examples = _examples()
    shown = {example.route for example in examples}
    routes = _routes()
    assert len(routes) > 25, routes
    for route in routes:
        if route.startswith("/"):  # a family of routes: /admin/v1/…, /_test/…
            prefix = route.rstrip("…")
            assert any(r.split(" ", 1)[1].startswith(prefix) for r in shown), route
        else:
            assert route in shown, f"no example of {route}"
    codes = _codes()
    assert {"INVALID_REQUEST", "NOT_FOUND", "UNAVAILABLE"} <= set(codes)
    assert set(NOT_SHOWN) <= set(codes)
    given = {code for example in examples for _, code in CODE.findall(example.heading)}
    for code in codes:
        if code in NOT_SHOWN:
            assert code not in given
            assert f"| `{code}` | {codes[code]} | not shown: {NOT_SHOWN[code]} |" in OUT.read_text()
        else:
            assert code in given, f"no example of {code}"


def test_every_example_is_what_its_heading_says() -> None:
    codes = _codes()
    for example in _examples():
        method, template = example.route.split(" ", 1)
        pattern = re.sub(r"\\\{\w+\\\}", "[^/?]+", re.escape(template))
        assert re.fullmatch(rf"{method} {pattern}(\?.*)? HTTP/1\.1",
                            example.request.split("\n")[0]), example.heading
        status = int(example.answer.split("\n")[0].split()[1])
        if "Content-Type: application/json" in example.answer.partition("\n\n")[0]:
            assert isinstance(example.answer_json, dict), example.heading
        for number, code in CODE.findall(example.heading):
            envelope = example.answer_json
            assert isinstance(envelope, dict), example.heading
            assert set(envelope) == {"error"}, example.heading
            assert set(envelope["error"]) == {"code", "message", "details"}, example.heading
            assert envelope["error"]["code"] == code, example.heading
            assert status == int(number) == codes[code], example.heading
        head, _, body = example.request.partition("\n\n")
        if "Content-Type: application/json" in head.split("\n"):
            json.loads(body)


def test_no_value_of_one_run_is_left() -> None:
    from tools.worked_examples_render import CURSOR, GENERATED_ID

    text = OUT.read_text()
    assert not GENERATED_ID.search(text)
    assert not CURSOR.search(text)
    assert "Bearer tok_" not in text
