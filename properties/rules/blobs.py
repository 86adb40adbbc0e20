"""Rules of uploads and blobs: prepare, PUT, seal and read, by the owner or others; the server
clock past an upload's expiry (P15, P16)."""

from __future__ import annotations

from hypothesis import strategies as st

from waypost.properties.commands import blobs
from waypost.properties.rules.driver import RuleDriver, sample
from waypost.properties.rules.hypothesis_hooks import StepDraws

WANTED = {"put": "awaiting", "seal": "stored", "read": "sealed"}


def upload(d: RuleDriver, data: StepDraws) -> None:
    """Prepare, PUT (the declared or other bytes), seal, read; rarely let the server clock
    run past the expiry where the target offers the clock hook (P15, P16)."""
    uploads = d.model.uploads
    mode = data.draw(st.sampled_from(["blob", "read", "put", "seal", "read", "blob",
                                      "prepare", "clock"] if uploads else ["blob"]))
    token = sample(data, d.handles())
    if mode in ("prepare", "blob"):
        content = data.draw(st.binary(max_size=64)).hex()
        name = data.draw(st.none() | st.sampled_from(["a.txt", "notes/b.md"]))
        d.run(blobs.prepare, token=token, content=content, filename=name)
        if mode == "blob" and len(uploads) and uploads[-1].content.hex() == content:
            d.run(blobs.put, token=token, upload=len(uploads) - 1, right=True)
            d.run(blobs.seal, token=token, upload=len(uploads) - 1)
            if uploads[-1].state == "sealed" and data.draw(st.sampled_from([False, False, True])):
                # a late PUT of other bytes, then the blob read: unchanged (P15's counterexample)
                d.run(blobs.put, token=token, upload=len(uploads) - 1, right=False)
                d.run(blobs.read_blob, token=token, upload=len(uploads) - 1)
        return
    ready = [n for n, u in enumerate(uploads) if u.state == WANTED.get(mode)]
    index = data.draw(st.sampled_from(ready * 3 + list(range(len(uploads)))))
    owner = next((t.handle for t in d.model.tokens.values()
                  if t.actor_id == uploads[index].owner_id
                  and t.space == uploads[index].space), token)
    mine: bool = data.draw(st.sampled_from([True, True, True, False]))
    who = owner if mine else token
    if mode == "put":
        d.run(blobs.put, token=who, upload=index, right=data.draw(st.sampled_from(
            [True, True, False])))
    elif mode == "seal":
        d.run(blobs.seal, token=who, upload=index)
    elif mode == "read":
        target = data.draw(st.sampled_from([index, index, index, None]))
        d.run(blobs.read_blob, token=token, upload=target)
    else:
        ms = data.draw(st.sampled_from([1000, 3_600_001, 3_600_001]))
        if ms > 1000:
            _expire_and_seal(d, data, token, ms)
        else:
            d.run(blobs.advance_clock, ms=ms)


def _expire_and_seal(d: RuleDriver, data: StepDraws, token: str, ms: int) -> None:
    """An upload prepared, the server clock moved past its expiry, then the upload sealed by
    its owner: sealing raced the expiry's cleanup and the expiry won (P15: WP-UPL-8)."""
    uploads = d.model.uploads
    writer = next((t.handle for t in d.model.tokens.values()
                   if t.has("blob.write") and d.model.live(t)), token)
    before = len(uploads)
    d.run(blobs.prepare, token=writer, content=data.draw(st.binary(max_size=16)).hex(),
          filename=None)
    d.run(blobs.advance_clock, ms=ms)
    if len(uploads) > before:
        d.run(blobs.seal, token=writer, upload=before)
