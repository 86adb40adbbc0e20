"""Rules of faults and concurrency: a write with a fault on its way, then lookup and retry;
identical retries at once; several senders at once (P03, P05, P06, P11, P18)."""

from __future__ import annotations

from hypothesis import strategies as st

from waypost.properties.commands import faults
from waypost.properties.commands.faults import ACTIONS as FAULT_ACTIONS
from waypost.properties.commands.faults import POINTS as FAULT_POINTS
from waypost.properties.commands.faults import PROXY
from waypost.properties.rules.driver import RuleDriver, sample, words
from waypost.properties.rules.hypothesis_hooks import StepDraws
from waypost.properties.wire.proxy import ACTIONS as PROXY_ACTIONS


def fault(d: RuleDriver, data: StepDraws) -> None:
    """A write with a fault point armed on its way (crash, lost response, temporary error),
    sometimes a restart, then lookup and retry: exactly one result (P03, P18), where the
    target offers the fault hooks or through the fault proxy; or writes at the same time:
    parallel identical retries of one key, several senders at once (P03, P05, P06)."""
    proxy = d.world.session.proxy is not None
    together = data.draw(st.sampled_from(["fault", "fault", "retries", "senders"]))
    if together == "retries" or (together == "fault" and not (d.model.hooks or proxy)):
        d.run(faults.parallel_retries, token=sample(data, d.handles()),
              copies=data.draw(st.integers(2, 4)), send=d.plain_send(data))
        return
    if together == "senders":
        d.run(faults.concurrent_sends, token=sample(data, d.handles()),
              subjects=data.draw(st.lists(words, min_size=2, max_size=4)))
        return
    if d.model.hooks:
        point = data.draw(st.sampled_from(FAULT_POINTS))
        action = data.draw(st.sampled_from(FAULT_ACTIONS))
    else:  # a deployment without fault points: the proxy in front of it
        point, action = PROXY, data.draw(st.sampled_from(PROXY_ACTIONS))
    restart: bool = data.draw(st.booleans())
    writers = d.writers()
    memory_write: bool = data.draw(st.booleans())
    if writers and memory_write and _fault_publish(d, data, sample(data, writers), point,
                                                   action, restart):
        return
    d.run(faults.fault_send, token=sample(data, d.handles()), point=point, action=action,
          restart=restart, send=d.plain_send(data))


def _fault_publish(d: RuleDriver, data: StepDraws, token: str, point: str, action: str,
                   restart: bool) -> bool:
    """A publish to the writer's collection with the fault on its way; False if the writer
    has no blob to publish."""
    holder = d.model.tokens[token]
    collection = next(c for c, a in holder.collections.items() if "write" in a)
    blobs = d.owned_blobs(data, token)
    if not blobs:
        return False
    items = data.draw(st.lists(st.integers(0, 6).flatmap(lambda n: st.tuples(
        st.just(n), st.just(n), st.sampled_from(blobs), st.none())),
        min_size=1, max_size=3, unique_by=lambda e: e[0]))
    d.run(faults.fault_publish, token=token, point=point, action=action, restart=restart,
          publish={"collection": collection, "items": [list(e) for e in items],
                   "mode": data.draw(st.sampled_from(["delta", "snapshot"]))})
    return True
