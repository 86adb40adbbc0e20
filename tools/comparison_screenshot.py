"""Regenerate ``docs/comparison.png``, the README's picture of ``waypost conformance compare``:
two in-process runs of the kit (``ci`` profile, one seed), the reference and the reference with a
defect of the test suite patched in ("a cursor is not bound to its consumer",
``tests/properties/rules/test_kit_broken.py``), compared with ``--baseline``; the page down to the end of the
property matrix shot by Debian's chromium through Playwright. Run from the repository root:
``python tools/comparison_screenshot.py`` (``--chromium PATH`` or ``$WAYPOST_CHROMIUM`` names
another executable)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "comparison.png"
WIDTH = 1280


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chromium", default=os.environ.get("WAYPOST_CHROMIUM")
                        or shutil.which("chromium"), help="the Chromium executable")
    args = parser.parse_args()
    if not args.chromium:
        parser.error("no chromium: apt-get install chromium, or pass --chromium PATH")
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright

    from tests.properties.rules.test_kit_broken import SEED, cursor_not_bound_to_consumer
    from tests.support.kit_reports import kit_report
    from waypost.cli import main as waypost

    with tempfile.TemporaryDirectory(prefix="waypost-picture-") as work:
        os.chdir(work)  # the reports name their replay files from here: waypost-replays/…
        for name, patch in (("reference", None), ("broken", cursor_not_bound_to_consumer)):
            report = kit_report(Path(work) / f"{name}-data", name, patch, seed=SEED)
            Path(f"{name}.json").write_text(json.dumps(report, indent=1))
        status = waypost(["conformance", "compare", "--baseline", "reference.json",
                          "broken.json", "--html", "compare.html"])
        if status != 1:
            print(f"expected the broken server to get worse (exit status 1), got {status}",
                  file=sys.stderr)
            return 1
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium)
            page = browser.new_page(viewport={"width": WIDTH, "height": 900})
            page.goto((Path(work) / "compare.html").as_uri())
            matrix = page.locator("#properties").bounding_box()
            assert matrix is not None
            page.screenshot(path=str(OUT), full_page=True, clip={
                "x": 0, "y": 0, "width": WIDTH, "height": matrix["y"] + matrix["height"] + 16})
            browser.close()
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
