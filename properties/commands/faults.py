"""Fault and concurrency commands of the kit (P03, P05, P06, P18). Faults need targets that
offer the test hooks: arm a fault point with an action, perform a write, maybe restart the
server, then resolve the write. Concurrency needs nothing: parallel identical retries of one key,
several senders at once.

A write whose connection dropped, or that answered ``503``, is indeterminate (Jepsen's
``:info``): it may or may not have committed. The command resolves it at once, the way a client
must: it looks the key up (a temporary error must never be a recorded failure), then retries with
the same request. The retry must publish — replaying the lookup's result if that was committed —
and afterwards the model holds exactly one outcome, so every later read checks that nothing was
lost or doubled. Arguments are concrete, so a replay file reruns the same faults.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from waypost.properties.commands import memory
from waypost.properties.commands.messages import SEND_ANSWER, record_send, send_body, submit_send
from waypost.properties.commands.world import carrying
from waypost.properties.model.matching import shaped
from waypost.properties.model.state import Token
from waypost.properties.protocol.constants import FAULT_ACTIONS, REQUIRED_FAULT_POINTS
from waypost.properties.wire.http import DROPPED, Answer

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

#: The points of §14 on the path every write takes (reserve, object, prepare, commit,
#: response), from the contract's data file: those a send or a publish passes. The others
#: (upload, seal, cleanup, ACK) are the crash matrix's (``waypost conformance crash-matrix``).
POINTS = tuple(point for point in REQUIRED_FAULT_POINTS
               if point.split(".")[0] in ("reserve", "object", "prepare", "commit", "response"))
#: The "point" of a fault the proxy injects (its actions: proxy.ACTIONS).
PROXY = "proxy"
ACTIONS = FAULT_ACTIONS


def arm(world: World, point: str, action: str) -> bool:
    """Arm the fault: a point on the target (its hooks), or ``point == "proxy"`` the fault proxy
    in front of it. False where the target has neither."""
    if point == PROXY:
        if world.session.proxy is None:
            return False
        world.session.proxy.arm(action)
        return True
    if not world.model.hooks:
        return False
    answer = world.session.admin("POST", "/_test/faults", {"point": point, "action": action})
    world.session.hook_faults += answer.status == 200
    return world.check(("WP-HOOK-4", "WP-HOOK-7"), answer.status == 200,
                       f"a target with fault hooks must arm {point} ({action})",
                       status=answer.status, answer=answer.json)


def disarm(world: World, point: str, restart: bool) -> None:
    """Disarm what the write did not pass, and restart the target if asked (test hooks)."""
    if point == PROXY:
        assert world.session.proxy is not None
        world.session.proxy.disarm()
        return
    cleared = world.session.admin("DELETE", "/_test/faults")  # a point never passed
    world.check("WP-HOOK-4", cleared.status == 200, "DELETE /_test/faults must disarm",
                status=cleared.status, answer=cleared.json)
    if restart:
        restarted = world.session.admin("POST", "/_test/restart", {})
        world.check("WP-HOOK-5", restarted.status == 200, "POST /_test/restart must restart",
                    status=restarted.status, answer=restarted.json)


def fault_send(world: World, token: str, point: str, action: str, restart: bool,
               send: dict[str, Any]) -> None:
    """``message.send`` with a fault on its way (P03, P18)."""
    sender = world.token(token)
    body = send_body(world, sender, **send)
    answer = None
    if world.model.live(sender) and not world.model.send_errors(sender, body):
        with world.shared.alone():  # no other worker's request meets the armed fault
            if arm(world, point, action):
                answer = world.session.call("POST", "/v1/messages", bearer=sender.secret,
                                            who=sender.handle, body=body, may_drop=True)
                disarm(world, point, restart)
    if answer is None:
        submit_send(world, sender, body)  # no fault where nothing would be written
        return
    if answer.status == 201:  # the fault point was not on this write's path, or lost nothing
        if action == "duplicate":  # the network delivered it twice: the second is a replay
            world.check("WP-IDEM-6", answer.replayed, "a request delivered twice must be replayed the "
                        "second time", answer=answer.json)
        else:
            world.check("WP-IDEM-7", not answer.replayed,
                        "a first answer must not say Waypost-Replayed")
        record_send(world, sender, body, answer.json)
        return
    result = resolve(world, sender, "message.send", "/v1/messages", body, 201, answer,
                     f"{action} at {point}")
    if result is not None:
        record_send(world, sender, body, result)


def resolve(world: World, writer: Token, operation: str, path: str, body: dict[str, Any],
            status: int, interrupted: Answer, fault: str) -> dict[str, Any] | None:
    """A write the fault interrupted (no answer, or 503) is indeterminate: look it up, then
    retry it. Returns the one stable result, or None."""
    if not world.check(("WP-HOOK-6", "WP-ERR-7", "WP-LOAD-5"), interrupted.status in (DROPPED, 503),
                       "a fault must end the write without an answer, or with 503 UNAVAILABLE",
                       status=interrupted.status, answer=interrupted.json, fault=fault):
        return None
    lookup = world.as_(writer, "GET", f"/v1/submissions/{operation}/{body['request_id']}")
    state = lookup.json.get("state") if lookup.status == 200 and isinstance(
        lookup.json, dict) else "absent"
    world.check(("WP-IDEM-11", "WP-ERR-7"), state in ("absent", "pending", "committed"),
                "after a crash or a temporary error the key must be absent, pending or committed — "
                "never a recorded failure", lookup=lookup.json, status=lookup.status)
    retry = world.as_(writer, "POST", path, body)
    if not world.check(("WP-IDEM-5", "WP-AUTH-11"), retry.status == status,
                       f"the retry of an interrupted write must succeed with {status}",
                       status=retry.status, answer=retry.json, state=state):
        return None
    if state == "committed":
        committed = lookup.json.get("result")
        committed = committed if isinstance(committed, dict) else {}
        world.check(("WP-IDEM-5", "WP-IDEM-6"), retry.replayed and (retry.status, retry.json) == (
            committed.get("status"), committed.get("body")),
                    "the retry of a committed write must replay the recorded result",
                    retry=retry.json, recorded=committed, replayed=retry.replayed)
    again = world.as_(writer, "POST", path, body)
    world.check("WP-IDEM-6", (again.status, again.json) == (retry.status, retry.json)
                and again.replayed,
                "a second retry must replay the first one's result", first=retry.json,
                again=again.json)
    result: Any = retry.json
    return result if isinstance(result, dict) else {"unexpected": result}


def fault_publish(world: World, token: str, point: str, action: str, restart: bool,
                  publish: dict[str, Any]) -> None:
    """``memory.publish`` at the head with a fault on its way (P11, P18): exactly one revision
    results, whatever the crash left."""
    writer = world.token(token)
    target = world.model.collections.get((writer.space, publish["collection"]))
    items = memory.item_inputs(world, publish["items"])
    body: dict[str, Any] = {"request_id": world.rid(), "expected_revision": target.head
                            if target else 0, "mode": publish["mode"], "items": items}
    valid = target is not None and world.model.live(writer) and memory.real_change(
        world, writer, target, body)
    faulted = None
    if valid:
        with world.shared.alone():  # no other worker's request meets the armed fault
            if arm(world, point, action):
                faulted = world.session.call("POST", memory.path_of(publish["collection"]),
                                             bearer=writer.secret, who=writer.handle,
                                             body=body, may_drop=True)
                disarm(world, point, restart)
    if faulted is None:
        answer = world.as_(writer, "POST", memory.path_of(publish["collection"]), body)
        memory.expect_publish(world, writer, publish["collection"], body,
                              {"items": items}, answer)
        return
    assert target is not None
    path, answer = memory.path_of(target.collection_id), faulted
    if answer.status != 201:
        result = resolve(world, writer, "memory.publish", path, body, 201, answer,
                         f"{action} at {point}")
        if result is None:
            return
        answer = Answer(201, result, False)
    elif action == "duplicate":  # delivered twice: its replay answered; the model saw one
        answer = Answer(201, answer.json, not world.check(
            "WP-IDEM-6", answer.replayed, "a request delivered twice must be replayed the second time",
            answer=answer.json))
    memory.expect_publish(world, writer, target.collection_id, body, {"items": items}, answer)


def parallel_retries(world: World, token: str, copies: int, send: dict[str, Any]) -> None:
    """The same ``message.send`` from ``copies`` clients at once: one stable result for all —
    every answer 201 with identical ids (or SUBMISSION_PENDING, resolved by a later retry), at
    most one not marked replayed, exactly one message (P03)."""
    sender = world.token(token)
    body = send_body(world, sender, **send)
    if not world.model.live(sender) or world.model.send_errors(sender, body):
        submit_send(world, sender, body)
        return
    with ThreadPoolExecutor(copies) as pool:
        answers = list(pool.map(carrying(
            lambda _: world.as_(sender, "POST", "/v1/messages", body)), range(copies)))
    pending = [a for a in answers if a.code == "SUBMISSION_PENDING"]
    done = [a for a in answers if a.status == 201]
    if not world.check("WP-IDEM-12", len(done) + len(pending) == copies,
                       "parallel retries of one key must all succeed (or say SUBMISSION_PENDING)",
                       answers=[[a.status, a.json] for a in answers]):
        return
    if not done:
        done = [world.as_(sender, "POST", "/v1/messages", body)]
    world.check(("WP-IDEM-12", "WP-IDEM-6"), all(a.json == done[0].json for a in done)
                and sum(not a.replayed for a in done) <= 1,
                "parallel retries of one key must give one result, replayed to all but one",
                answers=[[a.status, a.replayed, a.json] for a in done])
    record_send(world, sender, body, done[0].json)


def concurrent_sends(world: World, token: str, subjects: list[str]) -> None:
    """Distinct messages from several clients at once: all published, with distinct sequences;
    every view then shows each exactly once, in sequence order (P05, P06)."""
    sender = world.token(token)
    bodies = [send_body(world, sender, None, "new", None, "info", subject, "at once", None)
              for subject in subjects]
    if not world.model.live(sender) or any(world.model.send_errors(sender, b) for b in bodies):
        for body in bodies:
            submit_send(world, sender, body)
        return
    with ThreadPoolExecutor(len(bodies)) as pool:
        answers = list(pool.map(carrying(
            lambda b: world.as_(sender, "POST", "/v1/messages", b)), bodies))
    if not world.check(("WP-LOAD-3", "WP-MSG-9"), all(a.status == 201 and shaped(a.json, SEND_ANSWER)
                                  and str(a.json["sequence"]).isdigit() for a in answers),
                       "concurrent sends must all publish",
                       answers=[[a.status, a.json] for a in answers]):
        return
    sequences = [int(a.json["sequence"]) for a in answers]
    if not world.check("WP-FEED-1", len(set(sequences)) == len(sequences),
                       "concurrent sends got the same sequence", sequences=sequences):
        return
    # The model learns them in commit order, which the sequences tell.
    for body, answer in sorted(zip(bodies, answers, strict=True),
                               key=lambda pair: int(pair[1].json["sequence"])):
        record_send(world, sender, body, answer.json)
