"""A written HTML page as the tests read it: its tags and attributes, the text of each element
with an id, and its tables' rows with each cell's class, text and link."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

#: Elements that have no end tag.
VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "col", "area", "base", "source"}


@dataclass
class Cell:
    tag: str
    classes: set[str]
    text: str = ""
    link: str | None = None


class Page(HTMLParser):
    """Parse ``html`` once; read :attr:`tags`, :attr:`attributes`, :attr:`texts` (the text of
    each element with an id, by id), :attr:`rows` (each ``<tr>``'s cells) and :attr:`opened`
    (each ``<details>`` id → whether it has ``open``)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []  # tag, name, value
        self.texts: dict[str, str] = {}
        self.rows: list[list[Cell]] = []
        self.opened: dict[str, bool] = {}
        self._open: list[tuple[str, str | None]] = []  # tag, id
        self._cell: Cell | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        self.tags.append(tag)
        self.attributes += [(tag, name, value) for name, value in values.items()]
        if tag == "details" and "id" in values:
            self.opened[values["id"]] = "open" in values
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self._cell = Cell(tag, set(values.get("class", "").split()))
            self.rows[-1].append(self._cell)
        elif tag == "a" and self._cell is not None:
            self._cell.link = values.get("href")
        if tag not in VOID:
            self._open.append((tag, values.get("id")))
            if "id" in values:
                self.texts[values["id"]] = ""

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            opened, _ = self._open.pop()
            if opened == tag:
                break
        if tag in ("td", "th"):
            self._cell = None

    def handle_data(self, data: str) -> None:
        for _, anchor in self._open:
            if anchor is not None:
                self.texts[anchor] += data
        if self._cell is not None:
            self._cell.text += data

    def row(self, key: str) -> list[Cell]:
        """The cells of the first row whose header starts with ``key`` (``P07``, an id)."""
        return next(row for row in self.rows if row and row[0].text.split()[:1] == [key])
