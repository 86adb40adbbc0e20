"""The stateful Hypothesis command model: rules draw concrete arguments from the model's state
and hand them to :class:`World` commands, which speak HTTP and check every answer.

Every rule and invariant names the properties it exercises; ``teardown`` re-reads every live
consumer's whole view, so each example ends with a full comparison against the model.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from waypost.properties.faults import ACTIONS as FAULT_ACTIONS
from waypost.properties.faults import POINTS as FAULT_POINTS
from waypost.properties.faults import PROXY
from waypost.properties.http import Session
from waypost.properties.memory import COLLECTIONS
from waypost.properties.model import ALL_SCOPES
from waypost.properties.proxy import ACTIONS as PROXY_ACTIONS
from waypost.properties.violations import check
from waypost.properties.world import SPACE_ACTORS, World

KINDS = ("info", "question", "result", "todo_suggestion", "memory_notice", "processing_result")
STAGES = ("received", "processed")
WEIGHTED = ("send",) * 5 + ("ack",) * 4 + ("read_feed",) * 3 + ("check_view",) * 4 + (
    "read_message",) * 2 + ("resubmit",) * 3 + ("upload",) * 3 + ("memory",) * 6 + (
    "fault",) * 2 + (
    "provision", "change_authority", "probe", "probe")
#: Metadata that canonical JSON must get right: escapes, DEL, non-ASCII keys, numbers.
METADATA = ({"note": "ü\x7f\n\"q\"", "x": 1.5}, {"list": [True, None, -0.0, 1e21, 2**53 - 1]},
            {"\U0001f600": "e", "\ue000": "f", "a": {}})
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

    def provision(self, data: st.DataObject) -> None:
        """A consumer with a random view and filter, and a token with random scopes and
        recipients (P08)."""
        view = data.draw(st.sampled_from(["inbox", "space_log"]))
        scopes = data.draw(st.lists(st.sampled_from(ALL_SCOPES), unique=True, max_size=6))
        limited: bool = data.draw(st.booleans())
        actor = _sample(data, list(SPACE_ACTORS["A"]))
        filter_: dict[str, list[str]] = {}
        if data.draw(st.booleans()):
            filter_["producer_ids"] = data.draw(st.lists(st.sampled_from(SPACE_ACTORS["A"]),
                                                         min_size=1, max_size=2, unique=True))
        if data.draw(st.booleans()):
            filter_["item_types"] = data.draw(st.lists(
                st.sampled_from(["message", "receipt", "memory_revision"]), min_size=1,
                max_size=2, unique=True))
        with_thread: bool = data.draw(st.booleans())
        if self.world.message_order and with_thread:
            message = self.world.model.messages[_sample(data, self.world.message_order)]
            filter_["thread_ids"] = [message.thread_id]
        recipients = (data.draw(st.lists(st.sampled_from(SPACE_ACTORS["A"]), max_size=2,
                                         unique=True)) if limited else None)
        sealed = [n for n, u in enumerate(self.world.model.uploads) if u.state == "sealed"
                  and u.space == self.world.space_ids["A"]]
        blobs = data.draw(st.lists(st.sampled_from(sealed), max_size=2, unique=True)) \
            if sealed else []
        ours = [cid for name, cid, _ in COLLECTIONS if name == "A"]
        if data.draw(st.booleans()):
            filter_["collection_ids"] = data.draw(st.lists(st.sampled_from(ours), min_size=1,
                                                           max_size=1))
        collections = data.draw(st.lists(st.tuples(st.sampled_from(ours), st.sampled_from(
            [["read"], ["read"], ["write"], ["read", "write"]])), max_size=2,
            unique_by=lambda grant: grant[0]))
        self.run("provision", space_name="A", actor=actor, view=view, filter=filter_,
                 scopes=sorted(set(scopes) | {"message.read"} if view == "space_log"
                               else scopes), recipients=recipients, blobs=blobs,
                 collections=[list(grant) for grant in collections])

    def change_authority(self, data: st.DataObject) -> None:
        """Control-plane changes between requests: a rotated token keeps the grant fingerprint
        and cursors (P04, P07); a revoked token or disabled actor has no further effect (P02);
        a new view revision makes held cursors stale and starts the checkpoint at 0 (P07)."""
        mode = data.draw(st.sampled_from(["rotate", "regrant", "revoke", "revoke", "view",
                                          "view", "disable", "limits"]))
        if mode in ("regrant", "limits"):
            self.run("regrant" if mode == "regrant" else "ack_limits",
                     token=_sample(data, self.handles()))
        elif mode == "rotate":
            self.run("rotate", token=_sample(data, self.handles()))
        elif mode == "revoke":
            self.run("revoke", token=_sample(data, self.handles()))
        elif mode == "disable" and len(self.world.commands) > 8:
            self.run("disable", space_name="A", actor=_sample(data, list(SPACE_ACTORS["A"][1:])))
        elif mode == "view":
            view = data.draw(st.sampled_from(["inbox", "space_log"]))
            typed: bool = data.draw(st.booleans())
            self.run("change_view", token=_sample(data, self.handles("A")), view=view,
                     filter={"item_types": ["message"]} if typed else {})

    # ----- messages --------------------------------------------------------------------------

    def send(self, data: st.DataObject) -> None:
        """New thread, reply in a thread, default or explicit recipients, non-members,
        unknown recipients (P02, P05, P06). Most draws are valid, some deliberately not."""
        kind, subject, text = (data.draw(st.sampled_from(KINDS)), data.draw(words),
                               data.draw(words))
        token = _sample(data, self.handles())
        space = next(name for name, sid in self.world.space_ids.items()
                     if sid == self.world.token(token).space)
        own = list(SPACE_ACTORS[space])
        wrong = data.draw(st.sampled_from([False, False, False, True]))  # a deliberate error
        invalid = ["zz-ghost", SPACE_ACTORS["B" if space == "A" else "A"][0]] if wrong else []
        recipients = data.draw(st.none() | st.lists(
            st.sampled_from(own + invalid), min_size=1, max_size=3))
        thread: Any = "new"
        reply = None
        choice = data.draw(st.sampled_from(["new", "existing"] + (["missing"] if wrong else [])))
        if choice == "existing" and self.world.message_order:
            sender = self.world.token(token)
            member_of = [n for n, mid in enumerate(self.world.message_order)
                         if sender.actor_id in self.world.model.threads.get(
                             (sender.space, self.world.model.messages[mid].thread_id), ())]
            everything = list(range(len(self.world.message_order)))
            thread = data.draw(st.sampled_from(everything if wrong or not member_of
                                               else member_of))
            if data.draw(st.booleans()):
                reply = data.draw(st.integers(0, len(self.world.message_order) - 1))
        elif choice == "missing":
            thread = "missing"
        options = data.draw(st.none() | st.lists(words, max_size=3))
        attachments = None
        sealed = [n for n, u in enumerate(self.world.model.uploads) if u.state == "sealed"
                  or wrong]
        attach: bool = data.draw(st.booleans())
        if sealed and attach:
            attachments = data.draw(st.lists(st.sampled_from(sealed), max_size=3, unique=True))
        self.run("send", token=token, recipients=recipients, thread=thread, reply=reply,
                 kind=kind, subject=subject, text=text, options=options,
                 attachments=attachments)

    def read_message(self, data: st.DataObject) -> None:
        """Readers get the exact message; others, foreign or not, the same 404 (P01, P05)."""
        if not self.world.message_order:
            return self.send(data)
        last = len(self.world.message_order) - 1
        target = data.draw(st.sampled_from([None, *[data.draw(st.integers(0, last))] * 4]))
        self.run("read_message", token=_sample(data, self.handles()), target=target)

    # ----- feed ------------------------------------------------------------------------------

    def read_feed(self, data: st.DataObject) -> None:
        """A page from the checkpoint or from any held cursor, also another consumer's (P06,
        P07, P08)."""
        limit = data.draw(st.integers(1, 7))
        cursors = self.world.model.cursors
        cursor = None
        from_cursor: bool = data.draw(st.booleans())
        if cursors and from_cursor:
            cursor = data.draw(st.integers(0, len(cursors) - 1))
        self.run("read_feed", token=_sample(data, self.handles()), cursor=cursor, limit=limit)

    def check_view(self, data: st.DataObject) -> None:
        """Page through one consumer's whole view with random page sizes: every visible item
        exactly once, in order (P06, P08)."""
        sizes = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
        self.run("check_view", token=_sample(data, self.handles()), sizes=sizes)

    # ----- receipts --------------------------------------------------------------------------

    def ack(self, data: st.DataObject) -> None:
        """1–20 distinct items with mixed stages, mostly visible to the token's consumer, some
        invisible, foreign or missing; with or without a checkpoint (P01, P09, P10)."""
        if not self.bound_items("A"):
            return self.send(data)
        consumers = {(space, consumer) for space, consumer, _ in self.world.model.receipts}
        acked_before = [t.handle for t in self.world.model.tokens.values()
                        if (t.space, t.consumer_id) in consumers]
        token = _sample(data, acked_before * 3 + self.handles())  # later ACKs meet earlier ones
        holder = self.world.token(token)
        visible = [[space, item.index] for space in SPACE_ACTORS
                   for item in self.world.model.items.get(self.world.space_ids[space], [])
                   if item.bound and self.world.model.visible(item, holder)
                   and item.type != "receipt"]
        wrong = data.draw(st.sampled_from([False, False, False, True]))  # a deliberate error
        acked = {item_id for (space, consumer, item_id) in self.world.model.receipts
                 if space == holder.space and consumer == holder.consumer_id}
        again = [ref for ref in visible
                 if getattr(self.world.item_ref(ref), "item_id", None) in acked]
        visible = visible + again * 3  # stages on items already acknowledged: no-ops, regressions
        others = self.bound_items("A")[:3] + self.bound_items("B")[:2] + [None]
        if wrong and visible:  # good items around one bad one: all must be rejected (P05)
            refs = data.draw(st.lists(st.sampled_from(visible), min_size=1, max_size=5,
                                      unique_by=repr))
            bad = data.draw(st.sampled_from([o for o in others if o not in refs]))
            refs.insert(data.draw(st.integers(0, len(refs))), bad)
        else:
            refs = data.draw(st.lists(st.sampled_from(visible or others), min_size=0,
                                      max_size=20, unique_by=repr))
        lines = [[ref, data.draw(st.sampled_from(self.stages_for(holder, ref)))] for ref in refs]
        mine = [n for n, held in enumerate(self.world.model.cursors)
                if held.consumer_id == holder.consumer_id and held.space == holder.space]
        pick = data.draw(st.sampled_from(["none", "mine", "any", "tampered"] if wrong
                                         else ["none", "mine"]))
        cursor: Any = None
        if pick == "mine" and mine:
            cursor = data.draw(st.sampled_from(mine))
        elif pick == "any" and self.world.model.cursors:
            cursor = data.draw(st.integers(0, len(self.world.model.cursors) - 1))
        elif pick == "tampered":
            cursor = "tampered"
        if not lines and cursor is None:
            return
        self.run("ack", token=token, lines=lines, cursor=cursor,
                 recheck=data.draw(st.sampled_from([True, False, False])))

    def stages_for(self, holder: Any, ref: Any) -> tuple[str, ...]:
        """Stages to try: for an item already processed mostly a lower one (a regression a
        correct server must answer as a no-op), else both (P09)."""
        item = self.world.item_ref(ref)
        if item is None or item.item_id is None:
            return STAGES
        stage, _version = self.world.model.receipts.get(
            (holder.space, holder.consumer_id, item.item_id), ("none", 0))
        return ("received", "received", "processed") if stage == "processed" else STAGES

    # ----- idempotency -----------------------------------------------------------------------

    def resubmit(self, data: st.DataObject) -> None:
        """An earlier write again: unchanged → the identical stable result; altered →
        IDEMPOTENCY_CONFLICT; looked up → the committed result and the kit's own fingerprint
        (P03, P04)."""
        if not self.world.model.submissions:
            return self.send(data)
        mode = data.draw(st.sampled_from(["retry", "retry", "conflict", "lookup", "reuse"]))
        sends = [n for n, sub in enumerate(self.world.model.submissions.values())
                 if sub.operation == "message.send"]
        if mode == "reuse":
            if sends:
                self.run("reuse_key", token=_sample(data, self.handles()),
                         submission=_sample(data, sends))
            return
        self.run(mode, submission=data.draw(st.integers(
            0, len(self.world.model.submissions) - 1)))

    # ----- isolation -------------------------------------------------------------------------

    def probe(self, data: st.DataObject) -> None:
        """A tampered cursor is CURSOR_INVALID (P07); another space's item answers an ACK
        exactly like a missing one (P01)."""
        where = data.draw(st.integers(0, 10_000))
        foreign = self.bound_items("B")
        tamper: bool = data.draw(st.booleans())
        if self.world.model.cursors and (tamper or not foreign):
            cursor = data.draw(st.integers(0, len(self.world.model.cursors) - 1))
            self.run("tamper", token=_sample(data, self.handles()), cursor=cursor, where=where)
        elif foreign:
            self.run("probe_foreign", token=_sample(data, self.handles("A")),
                     item=_sample(data, foreign))

    # ----- uploads and blobs ----------------------------------------------------------------

    def upload(self, data: st.DataObject) -> None:
        """Prepare, PUT (the declared or other bytes), seal, read; rarely let the server clock
        run past the expiry where the target offers the clock hook (P15, P16)."""
        uploads = self.world.model.uploads
        mode = data.draw(st.sampled_from(["blob", "read", "put", "seal", "read", "blob",
                                          "prepare", "clock"] if uploads else ["blob"]))
        token = _sample(data, self.handles())
        if mode in ("prepare", "blob"):
            content = data.draw(st.binary(max_size=64)).hex()
            name = data.draw(st.none() | st.sampled_from(["a.txt", "notes/b.md"]))
            self.run("prepare", token=token, content=content, filename=name)
            if mode == "blob" and len(uploads) and uploads[-1].content.hex() == content:
                self.run("put", token=token, upload=len(uploads) - 1, right=True)
                self.run("seal", token=token, upload=len(uploads) - 1)
            return
        wanted = {"put": "awaiting", "seal": "stored", "read": "sealed"}.get(mode)
        ready = [n for n, u in enumerate(uploads) if u.state == wanted]
        index = data.draw(st.sampled_from(ready * 3 + list(range(len(uploads)))))
        owner = next((t.handle for t in self.world.model.tokens.values()
                      if t.actor_id == uploads[index].owner_id
                      and t.space == uploads[index].space), token)
        mine: bool = data.draw(st.sampled_from([True, True, True, False]))
        who = owner if mine else token
        if mode == "put":
            self.run("put", token=who, upload=index, right=data.draw(st.sampled_from(
                [True, True, False])))
        elif mode == "seal":
            self.run("seal", token=who, upload=index)
        elif mode == "read":
            target = data.draw(st.sampled_from([index, index, index, None]))
            self.run("read_blob", token=token, upload=target)
        else:
            self.run("advance_clock", ms=data.draw(st.sampled_from([1000, 3_600_001])))

    # ----- memory ----------------------------------------------------------------------------

    def memory(self, data: st.DataObject) -> None:
        """Publish (snapshot or delta, inline or manifest, at the head or beside it), race two
        publishers at one head, read heads and fixed revisions with random page sizes, move an
        item cursor to another revision, try the revision limit (P11–P14, P16)."""
        model = self.world.model
        action = data.draw(st.sampled_from(["publish"] * 8 + ["read"] * 3 + [
            "head", "race", "cursor", "limit"]))
        writers = [t.handle for t in model.tokens.values()
                   if any("write" in actions for actions in t.collections.values())]
        writers = writers[:1] * 4 + writers  # most publishes build up one collection's history
        token = _sample(data, writers if writers and data.draw(
            st.sampled_from([True, True, True, False])) else self.handles())
        holder = model.tokens[token]
        own = [cid for cid, actions in holder.collections.items() if "write" in actions]
        known = [cid for _, cid, _ in COLLECTIONS]
        collection = _sample(data, [*own * 10, *known, "zz-missing"])
        if action == "head":
            self.run("read_collection", token=token, collection=collection)
            return
        target = model.collections.get((holder.space, collection))
        head = target.head if target is not None else 0
        if action in ("read", "cursor"):
            revision = data.draw(st.integers(0, head + 1))
            if action == "cursor":
                self.run("cursor_elsewhere", token=token, collection=collection,
                         revision=revision)
                return
            self.run("read_revision", token=token, collection=collection, revision=revision,
                     sizes=data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)),
                     tombstones=data.draw(st.booleans()))
            return
        if action == "limit":
            self.run("revision_limit", token=token, collection=collection)
            return
        blobs = self.owned_blobs(data, token)
        wrong = data.draw(st.sampled_from([False, False, False, False, True]))
        pool = blobs if not wrong else blobs + list(range(len(model.uploads)))
        if not pool:
            return
        # An item keeps its own path (n) or moves to n + 7, so paths rarely collide unless the
        # draw is deliberately wrong.
        entry = st.integers(0, 6).flatmap(lambda n: st.tuples(
            st.just(n), st.sampled_from([n, n, n, n + 7]) if not wrong else st.integers(0, 8),
            st.sampled_from(pool), st.none() | st.fixed_dictionaries({"k": st.integers(0, 2)})
            | st.sampled_from(METADATA)))
        if action == "race":
            fresh = list(range(7, 12))  # ids only a race adds
            change = data.draw(st.lists(st.sampled_from(fresh).flatmap(
                lambda n: st.tuples(st.just(n), st.just(n + 20), st.sampled_from(blobs or pool),
                                    st.none())), min_size=1, max_size=2, unique_by=lambda e: e[0]))
            self.run("race", token=token, collection=collection,
                     items=[list(e) for e in change])
            return
        unique = {"unique_by": (lambda e: e[0], lambda e: e[1])} if not wrong else {}
        items = data.draw(st.lists(entry, max_size=4, **unique))  # type: ignore[arg-type]
        mode = data.draw(st.sampled_from(["delta", "snapshot"]))
        seen = sorted(int(item_id[1:]) for item_id in (target.states[-1] if target else {}))
        deletes = [] if (mode == "snapshot" and not wrong) or not (seen or wrong) else data.draw(
            st.lists(st.sampled_from(seen) if seen and not wrong else st.integers(0, 6),
                     max_size=2, unique=True))
        if not wrong:
            deletes = [n for n in deletes if n not in {e[0] for e in items}]
        self.run("publish", token=token, collection=collection,
                 offset=data.draw(st.sampled_from([0, 0, 0, 0, 0, -1, 1])), mode=mode,
                 items=[list(e) for e in items], deletes=deletes,
                 manifest=data.draw(st.sampled_from([False, False, False, True])))

    def owned_blobs(self, data: st.DataObject, token: str) -> list[int]:
        """Sealed uploads the token's actor owns; one is made first if there is none."""
        model = self.world.model
        holder = model.tokens[token]

        def owned() -> list[int]:
            return [n for n, u in enumerate(model.uploads) if u.state == "sealed"
                    and u.owner_id == holder.actor_id and u.space == holder.space]

        if not owned() and model.live(holder) and holder.has("blob.write"):
            content = data.draw(st.binary(max_size=16)).hex()
            self.run("prepare", token=token, content=content, filename=None)
            if model.uploads and model.uploads[-1].owner_id == holder.actor_id:
                self.run("put", token=token, upload=len(model.uploads) - 1, right=True)
                self.run("seal", token=token, upload=len(model.uploads) - 1)
        return owned()

    # ----- faults ----------------------------------------------------------------------------

    def fault(self, data: st.DataObject) -> None:
        """A write with a fault point armed on its way (crash, lost response, temporary error),
        sometimes a restart, then lookup and retry: exactly one result (P03, P18), where the
        target offers the fault hooks; or writes at the same time: parallel identical retries
        of one key, several senders at once (P03, P05, P06)."""
        model = self.world.model
        proxy = Run.session is not None and Run.session.proxy is not None
        together = data.draw(st.sampled_from(["fault", "fault", "retries", "senders"]))
        if together == "retries" or (together == "fault" and not (model.hooks or proxy)):
            self.run("parallel_retries", token=_sample(data, self.handles()),
                     copies=data.draw(st.integers(2, 4)), send=self.plain_send(data))
            return
        if together == "senders":
            self.run("concurrent_sends", token=_sample(data, self.handles()),
                     subjects=data.draw(st.lists(words, min_size=2, max_size=4)))
            return
        if model.hooks:
            point = data.draw(st.sampled_from(FAULT_POINTS))
            action = data.draw(st.sampled_from(FAULT_ACTIONS))
        else:  # a deployment without fault points: the proxy in front of it
            point, action = PROXY, data.draw(st.sampled_from(PROXY_ACTIONS))
        restart: bool = data.draw(st.booleans())
        writers = [t.handle for t in model.tokens.values()
                   if any("write" in granted for granted in t.collections.values())]
        memory_write: bool = data.draw(st.booleans())
        if writers and memory_write:
            token = _sample(data, writers)
            holder = model.tokens[token]
            collection = next(c for c, a in holder.collections.items() if "write" in a)
            blobs = self.owned_blobs(data, token)
            if blobs:
                items = data.draw(st.lists(st.integers(0, 6).flatmap(lambda n: st.tuples(
                    st.just(n), st.just(n), st.sampled_from(blobs), st.none())),
                    min_size=1, max_size=3, unique_by=lambda e: e[0]))
                self.run("fault_publish", token=token, point=point, action=action,
                         restart=restart, publish={
                             "collection": collection, "items": [list(e) for e in items],
                             "mode": data.draw(st.sampled_from(["delta", "snapshot"]))})
                return
        token = _sample(data, self.handles())
        self.run("fault_send", token=token, point=point, action=action, restart=restart,
                 send=self.plain_send(data))

    def plain_send(self, data: st.DataObject) -> dict[str, Any]:
        """Arguments of a send any live token with message.send may make."""
        return {"recipients": None, "thread": "new", "reply": None,
                "kind": data.draw(st.sampled_from(KINDS)), "subject": data.draw(words),
                "text": data.draw(words), "options": None}

    # ----- the one rule ---------------------------------------------------------------------

    @rule(data=st.data())
    def step(self, data: st.DataObject) -> None:
        """One command, drawn with weights that keep publications, reads and ACKs frequent
        (Hypothesis would favour rules by name order otherwise)."""
        getattr(self, data.draw(st.sampled_from(WEIGHTED)))(data)

    # ----- invariants ------------------------------------------------------------------------

    @invariant()
    def sequences_never_reused(self) -> None:
        """Within a space, every item sequence the kit has seen is distinct (P06)."""
        for items in self.world.model.items.values():
            seen = [item.sequence for item in items if item.sequence is not None]
            check("P06", len(seen) == len(set(seen)), "a sequence was used twice",
                  sequences=seen)

    def teardown(self) -> None:
        """Every live view must equal the model at the end of the example: one re-read per
        (consumer, grant fingerprint), since tokens with equal grants see the same items."""
        seen: set[tuple[str, str]] = set()
        for token in self.world.model.tokens.values():
            view = (token.consumer_id, token.grant_fingerprint)
            if view not in seen and self.world.model.live(token):
                seen.add(view)
                self.world.run("check_view", {"token": token.handle})
        for collection in self.world.model.collections.values():
            reader = next((t for t in self.world.model.tokens.values() if t.space ==
                           collection.space and self.world.model.live(t)
                           and t.has("memory.read")
                           and t.may(collection.collection_id, "read")), None)
            for revision in range(1, collection.head + 1) if reader else ():
                assert reader is not None
                self.world.run("read_revision", {
                    "token": reader.handle, "collection": collection.collection_id,
                    "revision": revision, "sizes": [100], "tombstones": True})

