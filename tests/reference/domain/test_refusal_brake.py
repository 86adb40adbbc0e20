"""The brake on refused credentials (reference/domain/refusal_brake.py): a burst at once, then a
steady rate; keys apart; holds bounded; a client that stops is forgiven; keys bounded."""

from __future__ import annotations

import pytest

from waypost.reference.domain.refusal_brake import RefusalBrake


def test_a_burst_passes_then_each_refusal_waits_its_turn() -> None:
    brake = RefusalBrake(rate=10, burst=3)
    assert [brake.hold("k", 100.0) for _ in range(6)] == pytest.approx(
        [0, 0, 0, 0.1, 0.2, 0.3])
    assert brake.hold("another", 100.0) == 0
    # at the steady rate, every refusal is held until its turn comes and no longer
    assert brake.hold("k", 100.35) == pytest.approx(0.05)


def test_holds_are_bounded_and_a_client_that_stops_is_forgiven() -> None:
    brake = RefusalBrake(rate=10, burst=3, longest_hold=0.5)
    holds = [brake.hold("k", 0.0) for _ in range(1000)]
    assert max(holds) == pytest.approx(0.5)
    # forgiven one burst, one longest hold and one interval after it stopped
    assert [brake.hold("k", 0.8) for _ in range(3)] == [0, 0, 0]
    assert brake.hold("k", 0.8) > 0


def test_the_least_recently_refused_key_is_forgotten() -> None:
    brake = RefusalBrake(rate=1, burst=1, keys=2)
    assert [brake.hold(key, 0.0) for key in ("a", "b", "c")] == [0, 0, 0]
    assert brake.hold("c", 0.0) == 1
    assert brake.hold("a", 0.0) == 0  # forgotten: a burst of its own again
