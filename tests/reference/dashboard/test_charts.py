"""The dashboard's charts: a value axis with a few round gridlines, and every value printed
where a touch screen sees it (not only in a hover tooltip)."""

from __future__ import annotations

import pytest

from waypost.reference.http.dashboard import charts


@pytest.mark.parametrize(("peak", "top", "values"), [
    (0, 1, [0, 1]), (1, 1, [0, 1]), (3, 3, [0, 1, 2, 3]), (7, 8, [0, 2, 4, 6, 8]),
    (10, 10, [0, 5, 10]), (1530, 2000, [0, 500, 1000, 1500, 2000]),
    (10_000, 10_000, [0, 5000, 10_000])])
def test_the_axis_has_round_steps_and_reaches_the_peak(peak: int, top: int,
                                                       values: list[int]) -> None:
    assert charts.axis(peak) == (top, values)
    assert len(values) - 1 <= charts.GRIDLINES


@pytest.mark.parametrize(("value", "shown"), [(0, "0"), (999, "999"), (1000, "1k"),
                                               (1530, "1.5k"), (999_950, "1M"), (2_400_000, "2.4M")])
def test_values_are_printed_short(value: int, shown: str) -> None:
    assert charts.compact(value) == shown


def test_a_column_prints_its_value_above_it_and_the_axis_its_gridlines() -> None:
    hours = [(f"{hour:02d}:00", 0) for hour in range(24)]
    hours[4], hours[5], hours[19] = ("04:00", 12), ("05:00", 40), ("19:00", 1530)
    chart = charts.columns("items per hour", hours, label_every=6)
    printed = {bar.label: bar.shown.text for bar in chart.bars if bar.shown}
    assert printed == {"04:00": "12", "05:00": "40", "19:00": "1.5k"}
    peak = chart.bars[19]
    assert peak.shown is not None
    assert peak.shown.y < peak.y  # above its bar
    assert [g.label.text for g in chart.gridlines] == ["0", "500", "1k", "1.5k", "2k"]
    assert [label.text for label in chart.labels] == ["00:00", "06:00", "12:00", "18:00"]
    assert chart.empty == ""


def test_a_value_too_wide_for_its_column_between_two_others_is_left_to_the_tooltip() -> None:
    chart = charts.columns("busy", [(str(n), 1500 + n) for n in range(24)])
    assert [bar.shown for bar in chart.bars] == [None] * 24
    assert charts.columns("quiet", [("a", 0)]).empty == "none in this period"


def test_rows_name_each_thing_cut_long_names_and_print_exact_values() -> None:
    chart = charts.rows("behind", [("alice-inbox", 0), ("bob-inbox", 2),
                                   ("a-very-long-consumer-name-indeed", 10_000)])
    assert [label.text for label in chart.labels] == ["alice-inbox", "bob-inbox",
                                                      "a-very-long-consume…"]
    assert [bar.shown and bar.shown.text for bar in chart.bars] == ["0", "2", "10,000"]
    assert [bar.label for bar in chart.bars][-1] == "a-very-long-consumer-name-indeed"
    assert chart.bars[2].width > chart.bars[1].width > chart.bars[0].width == 0
    assert [g.label.text for g in chart.gridlines] == ["0", "5k", "10k"]
    empty = charts.rows("behind", [], empty="no consumer has read yet")
    assert (empty.bars, empty.gridlines, empty.empty) == ([], [], "no consumer has read yet")
