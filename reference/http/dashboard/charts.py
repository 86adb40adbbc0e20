"""Small server-rendered bar charts: the geometry here, the SVG in ``templates/_chart.html``
(presentation attributes only: the Content-Security-Policy allows no inline styles).

Every chart has a value axis with a few gridlines, and prints each bar's value beside it
where it fits; under the chart, a list opens with every value that is not zero, so a touch
screen (no hover) reads them all. Time series are columns; a chart of named
things (consumers) is rows, one per name, so long names stay readable on a phone."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH = 480
#: Columns: room left of the plot for the axis's values, above it for the bars' values,
#: below it for the time labels.
AXIS_ROOM, TOP_ROOM, LABEL_ROOM, COLUMNS_HEIGHT = 34, 14, 18, 150
#: Rows: room for the names, for the values right of the bars, the axis's values on top.
NAME_ROOM, VALUE_ROOM, ROW = 132, 44, 20
#: At most this many gridlines above zero.
GRIDLINES = 4
#: A name longer than this is cut (its whole text stays in the bar's tooltip).
NAME_CHARS = 20


@dataclass(frozen=True)
class Label:
    """A text of the chart, at (x, y), anchored at its start, middle or end."""
    x: float
    y: float
    text: str
    anchor: str = "middle"


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    value: int
    #: The value as printed beside the bar (None where it does not fit).
    shown: Label | None


@dataclass(frozen=True)
class Gridline:
    """One line of the value axis: from (x1, y1) to (x2, y2), with its value."""
    x1: float
    y1: float
    x2: float
    y2: float
    label: Label


@dataclass(frozen=True)
class Chart:
    title: str
    bars: list[Bar]
    gridlines: list[Gridline]
    labels: list[Label]
    width: int
    height: int
    #: What an empty chart says instead ("" when it has bars with values).
    empty: str = ""


def compact(value: int) -> str:
    """``1234`` → ``1.2k``: a value short enough to print above a narrow bar (one that
    rounds up to the next unit takes it: ``999,950`` → ``1M``)."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        scaled = round(value / size, 1)
        if value >= size or (suffix == "M" and scaled >= 1):
            return f"{scaled:.1f}".removesuffix(".0") + suffix
    return str(value)


def axis(peak: int) -> tuple[int, list[int]]:
    """The axis's top and its gridline values: steps of 1, 2 or 5 × 10ⁿ, at most
    :data:`GRIDLINES` above zero, the top at or above ``peak``."""
    rough = max(peak, 1) / GRIDLINES
    magnitude = 10 ** math.floor(math.log10(rough)) if rough >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= rough)
    top = step * math.ceil(max(peak, 1) / step)
    return top, list(range(0, top + 1, step))


def columns(title: str, points: Sequence[tuple[str, int]], label_every: int = 1) -> Chart:
    """One column per ``(label, value)`` in order (a time series); every ``label_every``-th
    label is printed under its column."""
    peak = max((value for _, value in points), default=0)
    top, values = axis(peak)
    base = COLUMNS_HEIGHT - LABEL_ROOM
    room = base - TOP_ROOM
    step = (WIDTH - AXIS_ROOM) / max(len(points), 1)
    gridlines = [Gridline(AXIS_ROOM, y, WIDTH, y, Label(AXIS_ROOM - 4, y + 4, compact(value), "end"))
                 for value in values for y in [round(base - room * value / top, 1)]]
    bars, labels = [], []
    for index, (label, value) in enumerate(points):
        x = AXIS_ROOM + index * step
        height = room * value / top
        fits = value > 0 and len(compact(value)) * 6 <= step * _room(points, index)
        shown = Label(round(x + step / 2, 1), round(base - height - 3, 1), compact(value))
        bars.append(Bar(round(x + 1, 1), round(base - height, 1), round(max(step - 2, 1), 1),
                        round(height, 1), label, value, shown if fits else None))
        if index % label_every == 0:
            labels.append(Label(round(min(max(x + step / 2, AXIS_ROOM + 16), WIDTH - 16), 1),
                                COLUMNS_HEIGHT - 4, label))
    return Chart(title, bars, gridlines, labels, WIDTH, COLUMNS_HEIGHT,
                 "" if peak else "none in this period")


def _room(points: Sequence[tuple[str, int]], index: int) -> float:
    """How many columns' width the value of column ``index`` may take: its own, and half of
    each neighbour that prints nothing (a zero)."""
    free = [0 <= at < len(points) and points[at][1] == 0 for at in (index - 1, index + 1)]
    return 1 + 0.5 * sum(free)


def rows(title: str, points: Sequence[tuple[str, int]], empty: str = "none") -> Chart:
    """One row per ``(name, value)``: the name left, the bar, its value right of it (``empty``
    says what no rows mean)."""
    peak = max((value for _, value in points), default=0)
    top, values = axis(peak)
    room = WIDTH - NAME_ROOM - VALUE_ROOM
    height = TOP_ROOM + ROW * max(len(points), 1) + 2
    gridlines = [Gridline(x, TOP_ROOM - 2, x, height, Label(x, TOP_ROOM - 4, compact(value)))
                 for value in values for x in [round(NAME_ROOM + room * value / top, 1)]
                 if points]
    bars, labels = [], []
    for index, (name, value) in enumerate(points):
        y = TOP_ROOM + index * ROW
        length = room * value / top
        exact = f"{value:,}"
        shown = exact if len(exact) <= VALUE_ROOM // 6 else compact(value)
        bars.append(Bar(NAME_ROOM, y + 3, round(length, 1), ROW - 6, name, value,
                        Label(round(NAME_ROOM + length + 4, 1), y + ROW - 6, shown, "start")))
        cut = name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"
        labels.append(Label(NAME_ROOM - 6, y + ROW - 6, cut, "end"))
    return Chart(title, bars, gridlines, labels, WIDTH, height, "" if points else empty)
