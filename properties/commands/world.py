"""The core of the kit's commands: one example's spaces, the model of them, the session that
reaches the server, and the ways every command checks an answer.

The commands themselves live by area, as the protocol's services do: ``control`` (spaces,
actors, consumers, tokens), ``messages``, ``feed``, ``acks``, ``submissions`` (retries and
lookups), ``blobs``, ``memory`` and ``revisions``, ``faults``, ``timing``. The rules call them
by reference; ``coverage/command_names.py`` names them all, for replay files, which list them
by name. Commands take only concrete, JSON-able arguments (handles of tokens, indexes of
messages, items and cursors), so a replay file that lists them reruns the same requests."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any, TypeVar

from waypost.properties.commands.server_wide import ServerWide
from waypost.properties.model.matching import MISSING, masked
from waypost.properties.model.state import SPACE_ACTORS, Item, Model, Recorded, Token
from waypost.properties.verdicts.owners import Ids
from waypost.properties.verdicts.violations import Ledger, PropertyViolation
from waypost.properties.wire.http import Answer, Session

#: A command: a function of the world and concrete, JSON-able arguments
#: (``coverage/command_names.py`` names them all, for replay files).
Command = Callable[..., None]
A = TypeVar("A")
R = TypeVar("R")


def carrying(call: Callable[[A], R]) -> Callable[[A], R]:
    """``call``, to run on a pool's thread in the caller's context (the named check its
    checks count under)."""
    parent = contextvars.copy_context()
    return lambda arg: parent.copy().run(call, arg)


class ProvisioningFailed(RuntimeError):
    """The control plane refused to set up an example: the run cannot go on (no property of
    the data plane is involved)."""


class World:
    """One example's spaces, the model of them, and the session that reaches the server."""

    def __init__(self, session: Session, prefix: str, ledger: Ledger,
                 shared: ServerWide | None = None) -> None:
        self.session = session
        self.shared = shared or ServerWide()  # what the run's workers share
        session.trace = []  # one example's exchanges only
        self.ledger = ledger
        self.model = Model()
        self.prefix = prefix
        self.space_ids = {name: f"{prefix}{name}" for name in SPACE_ACTORS}
        self.commands: list[dict[str, Any]] = []
        self.message_order: list[str] = []
        self.boundary: dict[str, bool] = {}  # a limit check's steps: "at", "over" -> held
        self._next = 0
        self._moves_seen = len(self.shared.moves)  # clock moves before this example

    def perform(self, command: Command, args: dict[str, Any]) -> None:
        """Perform one command (the state machine, the limit phase and replays all come here),
        recorded by its name for the replay file."""
        name = command.__name__
        check = f"limit {args.get('limit')}" if name == "check_limit" else f"command {name}"
        try:
            with self.shared.command(), self.ledger.checking(check):
                self._note_clock_moves()
                self.commands.append({"command": name, "args": args})
                command(self, **args)
        except PropertyViolation as violation:  # the evidence of this very example
            violation.commands = list(self.commands)
            violation.exchanges = [e.as_json() for e in self.session.trace]
            raise

    # ----- helpers ---------------------------------------------------------------------------

    def rid(self) -> str:
        self._next += 1
        return f"{self.prefix}{self._next}"

    def token(self, handle: str) -> Token:
        return self.model.tokens[handle]

    def space_name(self, token: Token) -> str:
        return next(name for name, sid in self.space_ids.items() if sid == token.space)

    def item_ref(self, ref: Any) -> Item | None:
        """``[space name, index]`` → the model's item (None for None)."""
        if ref is None:
            return None
        space, index = ref
        item: Item = self.model.items[self.space_ids[space]][index]
        return item

    def recorded(self, index: int) -> Recorded:
        return list(self.model.submissions.values())[index]

    def as_(self, token: Token, method: str, path: str, body: Any = None,
            params: dict[str, Any] | None = None, raw: bytes | None = None) -> Answer:
        return self.session.call(method, path, bearer=token.secret, who=token.handle, body=body,
                                 params=params, raw=raw)

    def admin_ok(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.session.admin(method, path, body)
        if answer.status not in (200, 201) or not isinstance(answer.json, dict):
            raise ProvisioningFailed(f"provisioning {method} {path} failed: {answer.status} "
                                     f"{answer.json}")
        data: dict[str, Any] = answer.json
        return data

    # ----- checks ----------------------------------------------------------------------------

    def _note_clock_moves(self) -> None:
        """The clock moves other workers made since this world's last command, written into its
        commands as its own (so that its replay moves the clock there too)."""
        self._moves_seen, moves = self.shared.moves_since(self._moves_seen, self)
        self.commands.extend({"command": "advance_clock", "args": {"ms": ms},
                              "by": "another worker"} for ms in moves)

    def check(self, ids: Ids, ok: bool, message: str, **evidence: Any) -> bool:
        """One check of the requirement ids ``ids`` (:meth:`Ledger.check`)."""
        return self.ledger.check(ids, ok, message, **evidence)

    def expect_refusal(self, answer: Answer, allowed: set[str], ids: Ids, what: str) -> None:
        """An error answer with one of the ``allowed`` codes."""
        self.check(ids, answer.status >= 400 and answer.code in allowed,
                   f"{what}: expected one of {sorted(allowed)}, got {answer.status} "
                   f"{answer.code}", answer=answer.json)

    def expect_like_missing(self, answer: Answer, reader: Token, path: str, probed: str,
                            ids: Ids, what: str) -> None:
        """``NOT_FOUND``, and exactly the answer a missing id gets (the probed id masked)."""
        self.expect_refusal(answer, {"NOT_FOUND"}, ids, what)
        missing = self.as_(reader, "GET", path.format(MISSING))
        self.check(ids, (answer.status, masked(answer.json, probed)) == (
            missing.status, masked(missing.json, MISSING)),
            f"{what} must answer exactly like a missing one",
            probed=answer.json, missing=missing.json)

    def dead(self, token: Token, answer: Answer, what: str) -> bool:
        """A request of a revoked token or a disabled actor: it must be 401 (P02)."""
        if self.model.live(token):
            return False
        rule = "WP-CTRL-13" if token.revoked else "WP-CTRL-10"
        with self.ledger.checking("revoked token" if token.revoked else "disabled actor"):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, ("WP-AUTH-2", rule, "WP-AUTH-10"),
                                f"{what} with a dead token")
        return True
