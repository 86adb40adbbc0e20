"""The feed history checker (properties/model/history.py) names each anomaly of a delivery with its
evidence: which items, and the first place it shows; an exact delivery has none."""

from __future__ import annotations

import dataclasses
import json

import pytest

from waypost.properties.model.history import Anomaly, analyse


def test_a_delivery_equal_to_the_model_has_no_anomaly() -> None:
    assert analyse(["a", "b", "c"], ["a", "b", "c"], [1, 2, 5]) == []
    assert analyse([], []) == []


def test_items_never_delivered_are_lost_in_commit_order() -> None:
    assert analyse(["a", "b", "c", "d"], ["b", "d"]) == [
        Anomaly("lost", ("a", "c"), "visible in the model, never delivered")]


def test_items_delivered_twice_are_duplicated_once_each_sorted() -> None:
    assert analyse(["z", "b", "a"], ["z", "b", "a", "a", "z", "a"]) == [
        Anomaly("duplicated", ("a", "z"), "delivered more than once")]


def test_items_not_in_the_model_are_unexpected_in_delivery_order() -> None:
    assert analyse(["a"], ["z", "a", "y", "z"]) == [
        Anomaly("duplicated", ("z",), "delivered more than once"),
        Anomaly("unexpected", ("z", "y"), "delivered but not visible")]


def test_a_delivery_in_another_order_names_the_first_swap() -> None:
    assert analyse(["a", "b", "c", "d"], ["a", "c", "b", "d"]) == [
        Anomaly("out_of_order", ("c", "b"), "position 1: delivered c, committed first b")]


def test_order_is_judged_among_the_items_delivered_at_their_first_delivery() -> None:
    """A lost, an unexpected and a repeated item do not shift the positions compared."""
    anomalies = analyse(["a", "b", "c", "d"], ["x", "d", "a", "d", "c"])
    assert [anomaly.kind for anomaly in anomalies] == [
        "lost", "duplicated", "unexpected", "out_of_order"]
    assert anomalies[0].item_ids == ("b",)
    assert anomalies[-1] == Anomaly("out_of_order", ("d", "a"),
                                    "position 0: delivered d, committed first a")


def test_order_is_the_commit_order_whatever_the_ids() -> None:
    assert analyse(["b", "a"], ["a", "b"]) == [
        Anomaly("out_of_order", ("a", "b"), "position 0: delivered a, committed first b")]


def test_ids_read_from_json_are_compared_by_value() -> None:
    """The kit's ids come from parsed answers: equal ids, distinct objects."""
    expected = json.loads('["fi_1", "fi_2", "fi_3"]')
    observed = json.loads('["fi_1", "fi_3", "fi_2"]')
    assert analyse(expected, observed) == [
        Anomaly("out_of_order", ("fi_3", "fi_2"),
                "position 1: delivered fi_3, committed first fi_2")]


def test_a_redelivery_later_in_the_history_is_not_out_of_order() -> None:
    assert [anomaly.kind for anomaly in analyse(["a", "b"], ["a", "b", "a"])] == ["duplicated"]


def test_a_sequence_that_goes_backwards_names_the_two_items_and_sequences() -> None:
    assert analyse(["a", "b", "c", "d"], ["a", "b", "c", "d"], [3, 7, 5, 9]) == [
        Anomaly("sequence", ("b", "c"), "sequence 5 after 7")]


def test_a_repeated_sequence_is_not_strictly_increasing() -> None:
    assert analyse(["a", "b"], ["a", "b"], [4, 4]) == [
        Anomaly("sequence", ("a", "b"), "sequence 4 after 4")]


def test_a_backwards_step_is_found_anywhere_in_the_history() -> None:
    assert analyse(["a", "b", "c", "d", "e"], ["a", "b", "c", "d", "e"], [1, 2, 5, 4, 6]) == [
        Anomaly("sequence", ("c", "d"), "sequence 4 after 5")]


def test_only_the_first_backwards_step_is_named() -> None:
    anomalies = analyse(["a", "b", "c", "d"], ["a", "b", "c", "d"], [10, 2, 1, 0])
    assert anomalies == [Anomaly("sequence", ("a", "b"), "sequence 2 after 10")]


def test_every_anomaly_of_one_delivery_is_named_in_a_fixed_order() -> None:
    anomalies = analyse(["a", "b", "c"], ["c", "a", "c", "x"], [5, 6, 2, 8])
    assert anomalies == [
        Anomaly("lost", ("b",), "visible in the model, never delivered"),
        Anomaly("duplicated", ("c",), "delivered more than once"),
        Anomaly("unexpected", ("x",), "delivered but not visible"),
        Anomaly("out_of_order", ("c", "a"), "position 0: delivered c, committed first a"),
        Anomaly("sequence", ("a", "c"), "sequence 2 after 6"),
    ]


def test_an_anomaly_is_an_immutable_value() -> None:
    anomaly = Anomaly("lost", ("a",), "why")
    assert {anomaly, Anomaly("lost", ("a",), "why")} == {anomaly}
    with pytest.raises(dataclasses.FrozenInstanceError):
        anomaly.kind = "duplicated"


def test_an_anomaly_reads_as_json() -> None:
    assert Anomaly("lost", ("a", "b"), "why").as_json() == {
        "kind": "lost", "item_ids": ["a", "b"], "detail": "why"}
    assert Anomaly("lost", ("a",)).as_json()["detail"] == ""
