"""``--only`` a property against a server that breaks that property: the run must fail and name
it. A property passes only if its own checks ran, and a failure counts under the property of
the requirement the failing check names, so the selection cannot hide a defect under another
property (docs/properties.md, "Requirements by property").

Each server is the reference with one defect: patched in this process (``test_kit_broken``), or
behind a front end of the test's (``tests/support/front_ends.py``) as a deployment's proxy or cache
would add it. The kit runs the ``ci`` profile with only that property selected. The first
table plays the counterexample docs/properties.md names for each property; ``tox -e thorough``
runs each of them at five seeds."""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import test_crash_matrix_broken
from tests.properties.rules import test_kit_broken
from tests.support import broken_consumer, front_ends
from tests.support.inprocess import Front, kit_client
from waypost.conformance import runner
from waypost.properties.coverage.catalogue import select
from waypost.properties.verdicts.owners import property_of

pytestmark = pytest.mark.slow
KitApp = Any

#: property → (its counterexample in docs/properties.md, as a broken deployment: a patch, a
#: conftest fixture's name, or a front end). P17 and P18 are caught by their matrices instead
#: (:data:`ELSEWHERE`).
COUNTEREXAMPLES: dict[str, tuple[str, Any]] = {
    "P01": ("a foreign id answers unlike a missing one",
            test_kit_broken.foreign_ids_answer_differently),
    "P02": ("a revoked token still works", test_kit_broken.revoked_token_still_reads),
    "P03": ("retries create new messages", test_kit_broken.no_idempotency),
    "P04": ("lookups show another fingerprint",
            front_ends.rewriting(front_ends.lookups_show_another_fingerprint)),
    "P05": ("an ACK is saved partially", test_kit_broken.ack_saved_partially),
    "P06": ("a page edge drops an item", "drop_page_edges"),
    "P07": ("a cursor is not bound to its consumer", test_kit_broken.cursor_not_bound_to_consumer),
    "P08": ("an inbox shows items for others", test_kit_broken.inbox_shows_other_recipients),
    "P09": ("receipts may regress", test_kit_broken.receipts_may_regress),
    "P10": ("a retried ACK answers the current stage",
            front_ends.acks_replayed_at_the_current_stage),
    "P11": ("CAS is skipped", test_kit_broken.cas_skipped),
    "P12": ("a no-op creates a revision", test_kit_broken.noop_creates_a_revision),
    "P13": ("a fixed revision follows the head", test_kit_broken.fixed_revision_follows_the_head),
    "P14": ("a delta may delete what it upserts",
            test_kit_broken.delta_may_delete_what_it_upserts),
    "P15": ("a late PUT overwrites content", test_kit_broken.late_put_overwrites),
    "P16": ("an actor attaches another actor's blob without a grant",
            test_kit_broken.attachments_of_anyone),
}
#: The counterexamples of P17 and P18, and the broken deployment that plays each.
ELSEWHERE = {"P17": (broken_consumer, "ack-before-commit"),  # test_consumer_broken
             "P18": (test_crash_matrix_broken, "a crash after commit re-commits on retry")}
#: More servers: defects found hidden under another property, or missed, by earlier kits.
ALSO: dict[str, tuple[str, Any]] = {
    "P02": ("a cache serves a revoked token its last feed page",
            front_ends.rewriting(front_ends.feed_pages_cached_by_token())),
    "P03": ("replay ignores the fingerprint", test_kit_broken.replay_ignores_fingerprint),
    "P05": ("a preview cache serves a message's text cut short",
            front_ends.rewriting(front_ends.messages_cut_by_a_preview_cache)),
    "P07": ("a cursor is not bound to its grants", test_kit_broken.cursor_not_bound_to_grants),
    "P09": ("ACK answers claim every requested stage, changed",
            front_ends.rewriting(front_ends.acks_claim_every_stage)),
    "P10": ("ACK answers never say the checkpoint",
            front_ends.rewriting(front_ends.checkpoint_never_reported)),
    "P18": ("a temporary error is recorded as final", "record_temporary_errors_as_final"),
}
ALSO_P09 = ("ACK answers give receipt version 1", front_ends.rewriting(
    front_ends.acks_at_version_one))
CASES = [(pid, *COUNTEREXAMPLES[pid]) for pid in COUNTEREXAMPLES] + [
    (pid, *ALSO[pid]) for pid in ALSO] + [("P09", *ALSO_P09)]


def caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
           kit_app: KitApp, kit_admin: str, pid: str, what: str, how: Any, seed: int) -> None:
    """A ci run with only ``pid`` selected against the broken server fails ``pid``, and every
    failing requirement is of ``pid``; the failure shows what was expected beside what came."""
    front: Front | None = None
    patch = request.getfixturevalue(how) if isinstance(how, str) else how
    if getattr(how, "__module__", "") == front_ends.__name__:
        front, patch = how, None
    app: AbstractContextManager[Any] = kit_app(tmp_path / "data", test_hooks=pid == "P18")
    if pid == "P18":
        patch(monkeypatch, None)  # the fixture patches the module, for every app
        patch = None
    with app as client:
        if patch is not None:
            patch(monkeypatch, client)
        report = runner.run("broken", kit_client(client, front), kit_admin, profile="ci",
                            seed=seed, selected=select(pid), replay_dir=tmp_path / "replays",
                            shrink_seconds=0)
        monkeypatch.undo()
    outcome = next(o for o in report.outcomes if o.prop.pid == pid)
    assert outcome.result == "fail", (what, seed, [(o.prop.pid, o.result, o.checks, o.message)
                                                   for o in report.outcomes if o.checks])
    assert outcome.failed >= 1
    assert property_of(tuple(outcome.evidence["requirements"])) == pid, outcome.message
    assert set(outcome.evidence) - {"requirements"}, outcome.evidence  # what came, and more
    failing = [row for row in report.requirements if row.result == "fail"]
    assert failing
    assert all(pid in row.note for row in failing), [(r.requirement.rid, r.note) for r in failing]


@pytest.mark.parametrize(("pid", "what", "how"), CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_only_a_property_fails_a_server_that_breaks_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
        kit_app: KitApp, kit_admin: str, pid: str, what: str, how: Any) -> None:
    caught(tmp_path, monkeypatch, request, kit_app, kit_admin, pid, what, how,
           test_kit_broken.SEED)


# The counterexamples at five seeds each: tox -e thorough.
@pytest.mark.thorough
@pytest.mark.parametrize("seed", [5, 7, 11, 42, 20261130])
@pytest.mark.parametrize("pid", sorted(COUNTEREXAMPLES))
def test_every_counterexample_is_caught_at_every_seed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
        kit_app: KitApp, kit_admin: str, pid: str, seed: int) -> None:
    caught(tmp_path, monkeypatch, request, kit_app, kit_admin, pid, *COUNTEREXAMPLES[pid], seed)


def test_every_property_of_the_docs_has_its_counterexample_here() -> None:
    """docs/properties.md names one counterexample per property: each is a broken deployment
    above, or (P17, P18) one of the matrices' broken deployments."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "properties.md").read_text()
    named = set(re.findall(r"^### (P\d\d) .*?\n\n.*?Counterexample:", text, re.M | re.S))
    assert named == {f"P{n:02d}" for n in range(1, 19)}
    assert named == set(COUNTEREXAMPLES) | set(ELSEWHERE)
    assert ELSEWHERE["P17"][1] in ELSEWHERE["P17"][0].DEFECTS
    assert ELSEWHERE["P18"][1] in ELSEWHERE["P18"][0].VARIANTS
