"""The comparison page in a real browser: Debian's chromium driven by Playwright (the ``browser``
tier, ``tests/conftest.py``). It reads at 400 px and at 1280 px without the page scrolling
sideways, a failed cell takes the reader to its details, it needs no JavaScript and fetches
nothing, and it prints with every section expanded."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.kit_reports import made_report
from waypost.cli import main

pytestmark = pytest.mark.browser

MESSAGE = "a cursor of another consumer was accepted"


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The page of ``compare --baseline``: the reference, then a port that fails P07, its
    hostile check content_type and its limit ack_items."""
    work = tmp_path_factory.mktemp("compare")
    base, port, out = work / "reference.json", work / "port.json", work / "compare.html"
    base.write_text(json.dumps(made_report("reference")))
    port.write_text(json.dumps(made_report(
        "https://port.example.test", failing={"P07": MESSAGE}, hostile_failing="content_type",
        limit_failing="ack_items", fuzz_finding=True)))
    assert main(["conformance", "compare", "--baseline", str(base), str(port),
                 "--html", str(out)]) == 1
    return out.as_uri()


@pytest.mark.parametrize("width", [400, 1280])
def test_the_page_reads_at_400_and_1280_px(page: Page, comparison: str, width: int) -> None:
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(comparison)
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scroll
    matrix = page.locator("#properties .scroll")
    assert matrix.evaluate("box => getComputedStyle(box).overflowX") == "auto"
    fits = matrix.evaluate("box => box.scrollWidth <= box.clientWidth")
    assert fits == (width == 1280)  # at 400 px the matrix scrolls in its own box
    row_header = page.locator("#properties tbody th").first
    assert row_header.evaluate("cell => getComputedStyle(cell).position") == "sticky"
    font = page.locator("#properties td").first.evaluate(
        "cell => parseFloat(getComputedStyle(cell).fontSize)")
    assert font >= 14
    assert fetched == [comparison]


def test_a_failed_cell_links_to_its_details(page: Page, comparison: str) -> None:
    page.set_viewport_size({"width": 400, "height": 800})
    page.goto(comparison)
    link = page.locator("#properties tr", has_text="P07").locator("td.fail a")
    expect(link).to_have_text("✗ FAIL")
    href = link.get_attribute("href")
    assert href is not None
    link.click()
    assert page.url.endswith(href)
    details = page.locator(href)
    expect(details).to_be_in_viewport()
    expect(details).to_contain_text(MESSAGE)
    expect(details).to_contain_text("waypost conformance replay waypost-replays/")
    expect(details).to_contain_text("--target https://port.example.test")


def test_the_page_needs_no_javascript(browser: Browser, comparison: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(comparison)
        expect(page.locator("#properties tr", has_text="P07").locator("td.fail")).to_be_visible()
        expect(page.locator("#changes")).to_contain_text("Worse: now failing")
    finally:
        context.close()


def test_the_page_prints_with_every_section_expanded(page: Page, comparison: str) -> None:
    page.goto(comparison)
    closed = page.locator("details:not([open]) tbody tr").first
    expect(closed).to_be_hidden()
    page.emulate_media(media="print")
    expect(closed).to_be_visible()
    assert page.locator("#properties .scroll").evaluate(
        "box => getComputedStyle(box).overflowX") == "visible"
    assert page.pdf(format="A4")[:5] == b"%PDF-"
