"""Rules of the control plane: new consumers and tokens, and changes of authority between
requests (P02, P04, P07, P08)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from waypost.properties.commands import acks, control
from waypost.properties.model.state import ALL_SCOPES, COLLECTIONS, SPACE_ACTORS
from waypost.properties.rules.driver import RuleDriver, sample
from waypost.properties.rules.hypothesis_hooks import StepDraws


def provision(d: RuleDriver, data: StepDraws) -> None:
    """A consumer with a random view and filter, and a token with random scopes and
    recipients (P08)."""
    view = data.draw(st.sampled_from(["inbox", "space_log"]))
    scopes = data.draw(st.lists(st.sampled_from(ALL_SCOPES), unique=True, max_size=6))
    limited: bool = data.draw(st.booleans())
    actor = sample(data, list(SPACE_ACTORS["A"]))
    filter_, threads = _filter(d, data)
    recipients = (data.draw(st.lists(st.sampled_from(SPACE_ACTORS["A"]), max_size=2,
                                     unique=True)) if limited else None)
    sealed = [n for n, u in enumerate(d.model.uploads) if u.state == "sealed"
              and u.space == d.world.space_ids["A"]]
    blobs = data.draw(st.lists(st.sampled_from(sealed), max_size=2, unique=True)) \
        if sealed else []
    ours = [cid for name, cid, _ in COLLECTIONS if name == "A"]
    if data.draw(st.booleans()):
        filter_["collection_ids"] = data.draw(st.lists(st.sampled_from(ours), min_size=1,
                                                       max_size=1))
    collections = data.draw(st.lists(st.tuples(st.sampled_from(ours), st.sampled_from(
        [["read"], ["read"], ["write"], ["read", "write"]])), max_size=2,
        unique_by=lambda grant: grant[0]))
    d.run(control.provision, space_name="A", actor=actor, view=view, filter=filter_,
          scopes=sorted(set(scopes) | {"message.read"} if view == "space_log" else scopes),
          recipients=recipients, blobs=blobs,
          collections=[list(grant) for grant in collections], threads=threads)


def _filter(d: RuleDriver, data: StepDraws) -> tuple[dict[str, list[str]], list[int]]:
    """A consumer filter on producers and item types, and the messages (by number) whose
    threads it also filters on."""
    filter_: dict[str, list[str]] = {}
    if data.draw(st.booleans()):
        filter_["producer_ids"] = data.draw(st.lists(st.sampled_from(SPACE_ACTORS["A"]),
                                                     min_size=1, max_size=2, unique=True))
    if data.draw(st.booleans()):
        filter_["item_types"] = data.draw(st.lists(
            st.sampled_from(["message", "receipt", "memory_revision"]), min_size=1,
            max_size=2, unique=True))
    with_thread: bool = data.draw(st.booleans())
    threads: list[int] = []
    if d.world.message_order and with_thread:
        threads = [sample(data, list(range(len(d.world.message_order))))]
    return filter_, threads


def change_authority(d: RuleDriver, data: StepDraws) -> None:
    """Control-plane changes between requests: a rotated token keeps the grant fingerprint
    and cursors (P04, P07); a revoked token or disabled actor has no further effect (P02);
    a new view revision makes held cursors stale and starts the checkpoint at 0 (P07); the
    ACK limits (P10)."""
    mode = data.draw(st.sampled_from(["rotate", "regrant", "revoke", "revoke", "view",
                                      "view", "disable", "limits"]))
    if mode in ("regrant", "limits", "rotate", "revoke"):
        command = {"limits": acks.ack_limits, "regrant": control.regrant,
                   "rotate": control.rotate, "revoke": control.revoke}[mode]
        # a new token of a consumer that holds cursors reads one of them (P07)
        holding = {(c.space, c.consumer_id) for c in d.model.cursors}
        tokens = [t.handle for t in d.model.tokens.values()
                  if (t.space, t.consumer_id) in holding] if mode in ("regrant", "rotate") else []
        d.run(command, token=sample(data, tokens or d.handles()))
    elif mode == "disable" and len(d.world.commands) > 8:
        d.run(control.disable, space_name="A", actor=sample(data, list(SPACE_ACTORS["A"][1:])))
    elif mode == "view":
        view = data.draw(st.sampled_from(["inbox", "space_log"]))
        typed: bool = data.draw(st.booleans())
        filter_: dict[str, Any] = {"item_types": ["message"]} if typed else {}
        d.run(control.change_view, token=sample(data, d.handles("A")), view=view, filter=filter_)
