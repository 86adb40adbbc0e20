"""The kit's profiles: how much a run explores. A module of its own, with no import of the
kit's machinery, so that the command line lists them without loading Hypothesis."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    """How much to explore: examples (fresh spaces each) × steps per example, how long
    Hypothesis may spend shrinking a failure (each shrink step reruns a whole example), and how
    many of the consumer's fault points P17 crashes it at, with every flow (None: all of them;
    a sample is drawn from the run's seed)."""

    examples: int
    steps: int
    shrink_seconds: float
    consumer_points: int | None = None


PROFILES = {
    "quick": Profile(examples=15, steps=25, shrink_seconds=20, consumer_points=1),
    "ci": Profile(examples=80, steps=50, shrink_seconds=60),
    "thorough": Profile(examples=500, steps=80, shrink_seconds=300),
}
