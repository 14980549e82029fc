"""End to end in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright's Python package.

Open the view on a copy of the example store, search, archive a result, and see it move from Active to
Archived — with the page's own CSS and JS loaded under its Content-Security-Policy and no console errors.
`.ci/install-browser.sh` installs both; without them the test is skipped and says which one is missing.
Set DOCS_SCREENSHOT=path.png to also save a screenshot of the search page (docs/screenshot.png).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_mcp.canon.files import read_frontmatter
from memory_mcp.edges.web import UiServer, make_server
from memory_mcp.tools.service import MemoryService

from .helpers import EXAMPLE_STORE

try:
    from playwright.sync_api import Page, sync_playwright
except ImportError:  # the optional `ui-test` extra
    sync_playwright = None

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


CHROMIUM = _chromium()

pytestmark = [
    pytest.mark.skipif(
        sync_playwright is None, reason="Playwright's Python package is not installed (run .ci/install-browser.sh)"
    ),
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium executable found (run .ci/install-browser.sh)"),
]


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[tuple[UiServer, Path]]:
    root = tmp_path / "store"
    shutil.copytree(EXAMPLE_STORE, root, ignore=shutil.ignore_patterns(".index"))
    service = MemoryService(root)
    server = make_server(service, 0).start()  # a free loopback port
    try:
        yield server, root
    finally:
        server.stop()
        service.close()


@pytest.fixture
def page() -> Iterator[Page]:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 860})
        finally:
            browser.close()


def test_search_archive_and_see_it_moved(ui: tuple[UiServer, Path], page: Page) -> None:
    server, root = ui
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    page.goto(server.url)
    assert page.locator("li.item").count() == len(list((root / "memories").glob("*.md")))
    # the stylesheet really applied (CSP allows our own assets): the header is the dark bar
    assert page.eval_on_selector("header.top", "e => getComputedStyle(e).backgroundColor") == "rgb(29, 35, 48)"
    # the font stack resolved (custom properties inside `font`): Korean fonts after the UI font, so Hangul
    # falls back to an installed Korean font instead of boxes
    body_fonts = page.eval_on_selector("body", "e => getComputedStyle(e).fontFamily")
    assert body_fonts.startswith("system-ui"), body_fonts
    for korean in ("Noto Sans CJK KR", "Apple SD Gothic Neo", "Malgun Gothic"):
        assert korean in body_fonts, body_fonts

    page.fill("input[name=q]", "postgres backup")
    page.press("input[name=q]", "Enter")
    page.wait_for_url(lambda url: "q=postgres+backup" in url)
    if os.environ.get("DOCS_SCREENSHOT"):
        page.screenshot(path=os.environ["DOCS_SCREENSHOT"])
    hit = page.locator("li.item[data-state=active]").first
    mem_id = hit.get_attribute("data-id")
    title = hit.locator("a.title").inner_text()
    assert "postgres" in (title + hit.locator(".excerpt").inner_text()).lower()

    hit.locator("a.title").click()
    page.wait_for_url(lambda url: f"/memory/{mem_id}" in url)
    assert page.locator("form.purge").count() == 0  # an active memory is archived or deprecated before a purge

    page.click("button[name=archive]")
    page.wait_for_url(lambda url: f"/memory/{mem_id}?done=archive" in url)
    assert "Archived." in page.locator(".flash.ok").inner_text()
    # purge stays disabled until the title is typed (the page's JS); nothing is purged here
    purge = page.locator("form.purge button")
    assert purge.is_disabled()
    page.fill("form.purge input[name=confirm_text]", title)
    assert purge.is_enabled()
    page.fill("form.purge input[name=confirm_text]", "")
    assert page.locator(".mem-meta .badge.state-archived").count() == 1
    path = next(p for p in (root / "memories").glob("*.md") if read_frontmatter(p)["id"] == mem_id)
    assert read_frontmatter(path)["state"] == "archived"

    page.click("header nav >> text=Memories")
    page.click("nav.tabs a[data-state=archived]")
    page.wait_for_url(lambda url: "state=archived" in url)
    assert page.locator(f"li.item[data-id='{mem_id}']").count() == 1
    page.click("nav.tabs a[data-state=active]")
    page.wait_for_url(lambda url: "state=active" in url)
    assert page.locator(f"li.item[data-id='{mem_id}']").count() == 0
    assert page.locator("li.item").count() > 0
    assert problems == []
