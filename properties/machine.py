"""The stateful Hypothesis command model: rules draw concrete arguments from the model's state
and hand them to :class:`World` commands, which speak HTTP and check every answer.

Every rule and invariant names the properties it exercises; ``teardown`` re-reads every live
consumer's whole view, so each example ends with a full comparison against the model.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from waypost.properties.http import Session
from waypost.properties.model import ALL_SCOPES
from waypost.properties.violations import check
from waypost.properties.world import SPACE_ACTORS, World

KINDS = ("info", "question", "result", "todo_suggestion", "memory_notice", "processing_result")
STAGES = ("received", "processed")
words = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=12)


class Run:
    """Where the machine sends its requests, shared by all examples of one run."""

    session: Session | None = None
    prefix: str = "kit"
    worlds = itertools.count()
    last: World | None = None  # the world of the most recent example (a failure's evidence)


def _sample(data: st.DataObject, options: list[Any]) -> Any:
    return data.draw(st.sampled_from(options))


class WaypostMachine(RuleBasedStateMachine):
    """One example = two fresh spaces, a run of commands, a full comparison at the end."""

    def __init__(self) -> None:
        super().__init__()
        assert Run.session is not None, "set Run.session before running the machine"
        self.world = World(Run.session, f"{Run.prefix}-{next(Run.worlds)}-")
        Run.last = self.world

    def run(self, name: str, **args: Any) -> None:
        self.world.run(name, args)

    def handles(self, space: str | None = None) -> list[str]:
        tokens = self.world.model.tokens.values()
        return [t.handle for t in tokens
                if space is None or t.space == self.world.space_ids[space]]

    def bound_items(self, space: str) -> list[list[Any]]:
        items = self.world.model.items.get(self.world.space_ids[space], [])
        return [[space, item.index] for item in items if item.bound]

    @initialize()
    def setup(self) -> None:
        self.run("setup")

    # ----- provisioning (control plane) ------------------------------------------------------

    @rule(data=st.data(), view=st.sampled_from(["inbox", "space_log"]),
          scopes=st.lists(st.sampled_from(ALL_SCOPES), unique=True, max_size=6),
          limited=st.booleans())
    def provision(self, data: st.DataObject, view: str, scopes: list[str],
                  limited: bool) -> None:
        """A consumer with a random view and filter, and a token with random scopes and
        recipients (P08)."""
        actor = _sample(data, list(SPACE_ACTORS["A"]))
        filter_: dict[str, list[str]] = {}
        if data.draw(st.booleans()):
            filter_["producer_ids"] = data.draw(st.lists(st.sampled_from(SPACE_ACTORS["A"]),
                                                         min_size=1, max_size=2, unique=True))
        if data.draw(st.booleans()):
            filter_["item_types"] = data.draw(st.lists(
                st.sampled_from(["message", "receipt", "memory_revision"]), min_size=1,
                max_size=2, unique=True))
        if self.world.message_order and data.draw(st.booleans()):
            message = self.world.model.messages[_sample(data, self.world.message_order)]
            filter_["thread_ids"] = [message.thread_id]
        recipients = (data.draw(st.lists(st.sampled_from(SPACE_ACTORS["A"]), max_size=2,
                                         unique=True)) if limited else None)
        self.run("provision", space_name="A", actor=actor, view=view, filter=filter_,
                 scopes=sorted(set(scopes) | {"message.read"} if view == "space_log"
                               else scopes), recipients=recipients)

    @rule(data=st.data())
    def rotate_token(self, data: st.DataObject) -> None:
        """Same grants, new token: same grant fingerprint, held cursors stay valid (P04, P07)."""
        self.run("rotate", token=_sample(data, self.handles()))

    @rule(data=st.data())
    def revoke_token(self, data: st.DataObject) -> None:
        """After revoke, the token has no further effect (P02)."""
        self.run("revoke", token=_sample(data, self.handles()))

    @precondition(lambda self: len(self.world.commands) > 8)
    @rule(data=st.data())
    def disable_actor(self, data: st.DataObject) -> None:
        """A disabled actor's tokens stop working at once (P02)."""
        self.run("disable", space_name="A", actor=_sample(data, list(SPACE_ACTORS["A"][1:])))

    @rule(data=st.data(), view=st.sampled_from(["inbox", "space_log"]))
    def change_view(self, data: st.DataObject, view: str) -> None:
        """A new view revision: held cursors go stale, the checkpoint starts at 0 (P07)."""
        filter_ = ({"item_types": ["message"]} if data.draw(st.booleans()) else {})
        self.run("change_view", token=_sample(data, self.handles("A")), view=view,
                 filter=filter_)

    # ----- messages --------------------------------------------------------------------------

    @rule(data=st.data(), kind=st.sampled_from(KINDS), subject=words, text=words)
    def send(self, data: st.DataObject, kind: str, subject: str, text: str) -> None:
        """New thread, reply in a thread, default or explicit recipients, non-members,
        unknown recipients (P02, P05, P06)."""
        token = _sample(data, self.handles())
        space = next(name for name, sid in self.world.space_ids.items()
                     if sid == self.world.token(token).space)
        candidates = [*SPACE_ACTORS[space], "zz-ghost", *SPACE_ACTORS["B" if space == "A"
                                                                      else "A"][:1]]
        recipients = data.draw(st.none() | st.lists(
            st.sampled_from(candidates), min_size=1, max_size=3))
        thread: Any = "new"
        reply = None
        choice = data.draw(st.sampled_from(["new", "new", "existing", "missing"]))
        if choice == "existing" and self.world.message_order:
            thread = data.draw(st.integers(0, len(self.world.message_order) - 1))
            if data.draw(st.booleans()):
                reply = data.draw(st.integers(0, len(self.world.message_order) - 1))
        elif choice == "missing":
            thread = "missing"
        options = data.draw(st.none() | st.lists(words, max_size=3))
        self.run("send", token=token, recipients=recipients, thread=thread, reply=reply,
                 kind=kind, subject=subject, text=text, options=options)

    @rule(data=st.data())
    def read_message(self, data: st.DataObject) -> None:
        """Readers get the exact message; others, foreign or not, the same 404 (P01, P05)."""
        target = data.draw(st.none() | st.integers(0, max(len(self.world.message_order) - 1, 0)))
        if not self.world.message_order:
            target = None
        self.run("read_message", token=_sample(data, self.handles()), target=target)

    # ----- feed ------------------------------------------------------------------------------

    @rule(data=st.data(), limit=st.integers(1, 7))
    def read_feed(self, data: st.DataObject, limit: int) -> None:
        """A page from the checkpoint or from any held cursor, also another consumer's (P06,
        P07, P08)."""
        cursors = self.world.model.cursors
        cursor = None
        if cursors and data.draw(st.booleans()):
            cursor = data.draw(st.integers(0, len(cursors) - 1))
        self.run("read_feed", token=_sample(data, self.handles()), cursor=cursor, limit=limit)

    @precondition(lambda self: bool(self.world.model.cursors))
    @rule(data=st.data(), where=st.integers(0, 10_000))
    def tamper_cursor(self, data: st.DataObject, where: int) -> None:
        """Any modified character makes a cursor invalid (P07)."""
        cursor = data.draw(st.integers(0, len(self.world.model.cursors) - 1))
        self.run("tamper", token=_sample(data, self.handles()), cursor=cursor, where=where)

    @rule(data=st.data())
    def check_view(self, data: st.DataObject) -> None:
        """A full re-read of one consumer's view equals the model's visible set (P06, P08)."""
        self.run("check_view", token=_sample(data, self.handles()))

    # ----- receipts --------------------------------------------------------------------------

    @precondition(lambda self: bool(self.bound_items("A")))
    @rule(data=st.data())
    def ack(self, data: st.DataObject) -> None:
        """1–20 distinct items with mixed stages (some invisible, foreign or missing), with or
        without a checkpoint (P01, P09, P10)."""
        choices = self.bound_items("A") + self.bound_items("B")[:2] + [None]
        refs = data.draw(st.lists(st.sampled_from(choices), min_size=0, max_size=20,
                                  unique_by=lambda ref: repr(ref)))
        lines = [[ref, data.draw(st.sampled_from(STAGES))] for ref in refs]
        cursors = self.world.model.cursors
        cursor: Any = None
        pick = data.draw(st.sampled_from(["none", "held", "tampered"]))
        if (pick == "held" and cursors) or not lines:
            cursor = data.draw(st.integers(0, len(cursors) - 1)) if cursors else None
        elif pick == "tampered":
            cursor = "tampered"
        if not lines and cursor is None:
            return
        self.run("ack", token=_sample(data, self.handles()), lines=lines, cursor=cursor)

    # ----- idempotency -----------------------------------------------------------------------

    @precondition(lambda self: bool(self.world.model.submissions))
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        """An unchanged retry of an earlier write returns the identical result (P03)."""
        self.run("retry", submission=data.draw(st.integers(
            0, len(self.world.model.submissions) - 1)))

    @precondition(lambda self: bool(self.world.model.submissions))
    @rule(data=st.data())
    def conflicting_retry(self, data: st.DataObject) -> None:
        """An altered retry under the same key is IDEMPOTENCY_CONFLICT (P03)."""
        self.run("conflict", submission=data.draw(st.integers(
            0, len(self.world.model.submissions) - 1)))

    @precondition(lambda self: bool(self.world.model.submissions))
    @rule(data=st.data())
    def lookup_submission(self, data: st.DataObject) -> None:
        """The lookup shows the committed result and the kit's own fingerprint (P03, P04)."""
        self.run("lookup", submission=data.draw(st.integers(
            0, len(self.world.model.submissions) - 1)))

    # ----- isolation -------------------------------------------------------------------------

    @precondition(lambda self: bool(self.bound_items("B")))
    @rule(data=st.data())
    def probe_foreign_ids(self, data: st.DataObject) -> None:
        """Another space's item answers exactly like a missing one (P01)."""
        self.run("probe_foreign", token=_sample(data, self.handles("A")),
                 item=_sample(data, self.bound_items("B")))

    # ----- invariants ------------------------------------------------------------------------

    @invariant()
    def sequences_never_reused(self) -> None:
        """Every item sequence the kit has seen is distinct (P06)."""
        seen = [item.sequence for items in self.world.model.items.values() for item in items
                if item.sequence is not None]
        check("P06", len(seen) == len(set(seen)), "a sequence was used twice", sequences=seen)

    def teardown(self) -> None:
        """Every live consumer's whole view must equal the model at the end of the example."""
        for handle in self.handles():
            self.world.run("check_view", {"token": handle})

