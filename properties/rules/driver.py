"""What the rules draw from: one example's world, with the handles, items and blobs a rule may
pick, and the way a rule hands a command to the world."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from waypost.properties.commands import blobs
from waypost.properties.commands.world import Command, World
from waypost.properties.rules.hypothesis_hooks import StepDraws

KINDS = ("info", "question", "result", "todo_suggestion", "memory_notice", "processing_result")
STAGES = ("received", "processed")
#: Metadata that canonical JSON must get right: escapes, DEL, non-ASCII keys, numbers.
METADATA = ({"note": "ü\x7f\n\"q\"", "x": 1.5}, {"list": [True, None, -0.0, 1e21, 2**53 - 1]},
            {"\U0001f600": "e", "\ue000": "f", "a": {}})
words = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=12)


def sample(data: StepDraws, options: list[Any]) -> Any:
    return data.draw(st.sampled_from(options))


class RuleDriver:
    """A rule's view of the example: the world, and what it holds to draw from."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.model = world.model

    def run(self, command: Command, **args: Any) -> None:
        """Perform ``command`` with these concrete arguments."""
        self.world.perform(command, args)

    def handles(self, space: str | None = None) -> list[str]:
        """The handles of the tokens the kit holds (of space ``space`` only, if given)."""
        tokens = self.model.tokens.values()
        return [t.handle for t in tokens
                if space is None or t.space == self.world.space_ids[space]]

    def bound_items(self, space: str) -> list[list[Any]]:
        """``[space, index]`` of the items of ``space`` whose ids the kit has seen."""
        items = self.model.items.get(self.world.space_ids[space], [])
        return [[space, item.index] for item in items if item.bound]

    def writers(self) -> list[str]:
        """Handles of tokens with a write grant on some collection."""
        return [t.handle for t in self.model.tokens.values()
                if any("write" in actions for actions in t.collections.values())]

    def owned_blobs(self, data: StepDraws, token: str) -> list[int]:
        """Sealed uploads the token's actor owns; one is made first if there is none."""
        model = self.model
        holder = model.tokens[token]

        def owned() -> list[int]:
            return [n for n, u in enumerate(model.uploads) if u.state == "sealed"
                    and u.owner_id == holder.actor_id and u.space == holder.space]

        if not owned() and model.live(holder) and holder.has("blob.write"):
            content = data.draw(st.binary(max_size=16)).hex()
            self.run(blobs.prepare, token=token, content=content, filename=None)
            if model.uploads and model.uploads[-1].owner_id == holder.actor_id:
                self.run(blobs.put, token=token, upload=len(model.uploads) - 1, right=True)
                self.run(blobs.seal, token=token, upload=len(model.uploads) - 1)
        return owned()

    def plain_send(self, data: StepDraws) -> dict[str, Any]:
        """Arguments of a send any live token with message.send may make."""
        return {"recipients": None, "thread": "new", "reply": None,
                "kind": data.draw(st.sampled_from(KINDS)), "subject": data.draw(words),
                "text": data.draw(words), "options": None}
