"""Small server-rendered bar charts: the geometry here, the SVG in ``templates/_chart.html``
(presentation attributes only: the Content-Security-Policy allows no inline styles)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH = 480
HEIGHT = 120
LABEL_ROOM = 16  # below the bars, for the first and last labels


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    value: int


@dataclass(frozen=True)
class Chart:
    title: str
    bars: list[Bar]
    peak: int
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def baseline(self) -> int:
        return self.height - LABEL_ROOM


def bars(title: str, points: Sequence[tuple[str, int]]) -> Chart:
    """One bar per ``(label, value)``, scaled so the highest fills the chart."""
    peak = max((value for _, value in points), default=0)
    room = HEIGHT - LABEL_ROOM - 4
    step = WIDTH / max(len(points), 1)
    drawn = []
    for index, (label, value) in enumerate(points):
        height = 0.0 if peak == 0 else room * value / peak
        drawn.append(Bar(round(index * step + 1, 1), round(HEIGHT - LABEL_ROOM - height, 1),
                         round(max(step - 2, 1), 1), round(height, 1), label, value))
    return Chart(title, drawn, peak)
