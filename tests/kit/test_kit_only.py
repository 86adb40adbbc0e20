"""``--only`` a property against a server that breaks that property: the run must fail and name
it. A property passes only if its own checks ran, and a failure counts under the property of
the requirement the failing check names, so the selection cannot hide a defect under another
property (docs/properties.md, "Requirements by property").

Each server is the reference with one defect: patched in this process (``test_kit_broken``), or
behind a front end of the test's (``tests/support/front_ends.py``) as a deployment's proxy or cache
would add it. The kit runs the ``ci`` profile with only that property selected."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.kit import test_kit_broken
from tests.support import front_ends
from tests.support.inprocess import Front, kit_client
from waypost.conformance import runner
from waypost.properties.catalogue import select
from waypost.properties.owners import property_of

pytestmark = pytest.mark.slow
KitApp = Any

#: property → (what is broken, how: a patch, a conftest fixture's name, or a front end)
BROKEN: dict[str, tuple[str, Any]] = {
    "P01": ("a foreign id answers unlike a missing one",
            test_kit_broken.foreign_ids_answer_differently),
    "P02": ("a cache serves a revoked token its last feed page",
            front_ends.rewriting(front_ends.feed_pages_cached_by_token())),
    "P03": ("replay ignores the fingerprint", test_kit_broken.replay_ignores_fingerprint),
    "P04": ("lookups show another fingerprint",
            front_ends.rewriting(front_ends.lookups_show_another_fingerprint)),
    "P05": ("a preview cache serves a message's text cut short",
            front_ends.rewriting(front_ends.messages_cut_by_a_preview_cache)),
    "P06": ("a page edge drops an item", "drop_page_edges"),
    "P07": ("a cursor is not bound to its consumer", test_kit_broken.cursor_not_bound_to_consumer),
    "P08": ("an inbox shows items for others", test_kit_broken.inbox_shows_other_recipients),
    "P09": ("ACK answers claim every requested stage, changed",
            front_ends.rewriting(front_ends.acks_claim_every_stage)),
    "P10": ("ACK answers never say the checkpoint",
            front_ends.rewriting(front_ends.checkpoint_never_reported)),
    "P11": ("CAS is skipped", test_kit_broken.cas_skipped),
    "P12": ("a no-op creates a revision", test_kit_broken.noop_creates_a_revision),
    "P13": ("a fixed revision follows the head", test_kit_broken.fixed_revision_follows_the_head),
    "P14": ("a snapshot deletes instead of tombstoning",
            test_kit_broken.snapshot_deletes_instead_of_tombstoning),
    "P15": ("a late PUT overwrites content", test_kit_broken.late_put_overwrites),
    "P16": ("a blob is readable by a non-recipient", test_kit_broken.blobs_readable_by_anyone),
    "P18": ("a temporary error is recorded as final", "record_temporary_errors_as_final"),
}
#: A second server for the properties whose defect the issue found hidden under another.
ALSO: dict[str, tuple[str, Any]] = {
    "P09": ("receipts may regress", test_kit_broken.receipts_may_regress),
    "P02": ("a revoked token still works", test_kit_broken.revoked_token_still_reads),
}
CASES = [(pid, *BROKEN[pid]) for pid in BROKEN] + [(pid, *ALSO[pid]) for pid in ALSO]


@pytest.mark.parametrize(("pid", "what", "how"), CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_only_a_property_fails_a_server_that_breaks_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
        kit_app: KitApp, kit_admin: str, pid: str, what: str, how: Any) -> None:
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
                            seed=test_kit_broken.SEED, selected=select(pid),
                            replay_dir=tmp_path / "replays", shrink_seconds=0)
        monkeypatch.undo()
    outcome = next(o for o in report.outcomes if o.prop.pid == pid)
    assert outcome.result == "fail", (what, [(o.prop.pid, o.result, o.checks, o.message)
                                             for o in report.outcomes if o.checks])
    assert outcome.failed >= 1
    assert property_of(tuple(outcome.evidence["requirements"])) == pid, outcome.message
    failing = [row for row in report.requirements if row.result == "fail"]
    assert failing
    assert all(pid in row.note for row in failing), [(r.requirement.rid, r.note) for r in failing]
