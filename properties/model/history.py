"""A feed history checker in the style of Jepsen's queue checkers.

Given what a consumer should have seen (the model's visible items, in commit order) and what it
did see (item ids in delivery order), it names every anomaly with its evidence: ``lost`` (never
delivered), ``duplicated`` (delivered more than once), ``unexpected`` (delivered but not
visible), ``out_of_order`` (delivered in another order than committed), ``sequence`` (sequences
not strictly increasing).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Anomaly:
    kind: str
    item_ids: tuple[str, ...]
    detail: str = ""

    def as_json(self) -> dict[str, object]:
        return {"kind": self.kind, "item_ids": list(self.item_ids), "detail": self.detail}


def _out_of_order(expected: Sequence[str], observed: Sequence[str], counts: Counter[str],
                  wanted: set[str]) -> list[Anomaly]:
    """The first place the delivered order differs from the committed one, if any."""
    common = [item for item in dict.fromkeys(observed) if item in wanted]
    in_model_order = [item for item in expected if item in counts]
    if common == in_model_order:
        return []
    # a server may repeat one id for several items: the lists may differ in length too
    first = next((i for i, (a, b) in enumerate(zip(common, in_model_order, strict=False))
                  if a != b), min(len(common), len(in_model_order)))
    got = common[first] if first < len(common) else "nothing"
    want = in_model_order[first] if first < len(in_model_order) else "nothing"
    return [Anomaly("out_of_order", (got, want),
                    f"position {first}: delivered {got}, committed first {want}")]


def analyse(expected: Sequence[str], observed: Sequence[str],
            sequences: Sequence[int] = ()) -> list[Anomaly]:
    """Every way ``observed`` differs from ``expected`` (empty when they are equal)."""
    anomalies: list[Anomaly] = []
    counts = Counter(observed)
    wanted = set(expected)
    lost = tuple(item for item in expected if item not in counts)
    if lost:
        anomalies.append(Anomaly("lost", lost, "visible in the model, never delivered"))
    duplicated = tuple(sorted(item for item, n in counts.items() if n > 1))
    if duplicated:
        anomalies.append(Anomaly("duplicated", duplicated, "delivered more than once"))
    unexpected = tuple(item for item in dict.fromkeys(observed) if item not in wanted)
    if unexpected:
        anomalies.append(Anomaly("unexpected", unexpected, "delivered but not visible"))
    anomalies += _out_of_order(expected, observed, counts, wanted)
    backwards = [i for i in range(1, len(sequences)) if sequences[i] <= sequences[i - 1]]
    if backwards:
        i = backwards[0]
        anomalies.append(Anomaly("sequence", (observed[i - 1], observed[i]),
                                 f"sequence {sequences[i]} after {sequences[i - 1]}"))
    return anomalies
