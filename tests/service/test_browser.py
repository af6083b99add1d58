"""The web page in a real headless Chromium (Debian's `chromium`, driven by Playwright with
`executable_path`; no browser download), against a real `neardup serve`."""
import os
import shutil

import httpx
import pytest

CHROMIUM = os.environ.get("NEARDUP_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="Debian's chromium is not installed")
def test_page_shows_clusters_side_by_side(server, rain):
    from playwright.sync_api import sync_playwright

    assert CHROMIUM, "CI must install Debian's chromium (apt-get install chromium)"
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.post("/v1/documents", json={"documents": rain}).status_code == 200
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server.url + "/")
            page.wait_for_selector(".card")
            cards = page.locator(".card")
            assert cards.count() == 1
            assert "agency-001" in cards.first.inner_text()
            assert "articles" in page.locator("#stats").inner_text()
            cards.first.click()
            page.wait_for_selector(".member.keeper")
            members = page.locator(".member")
            assert members.count() == 4  # the agency story, two near copies, one exact copy
            keeper = page.locator(".member.keeper")
            assert keeper.count() == 1
            assert "agency-001" in keeper.inner_text() and "keeper" in keeper.inner_text()
            # side by side: one row, left to right
            boxes = [members.nth(i).bounding_box() for i in range(members.count())]
            assert len({round(b["y"]) for b in boxes}) == 1
            assert boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"]
            # shared passages are highlighted in every alternate, and the edit is not
            alt = page.locator('.member[data-id="site-a-417"]')
            marks = alt.locator("mark.shared")
            assert marks.count() >= 1
            marked = " ".join(marks.all_inner_texts()).lower()
            assert "heavy rain is likely" in marked
            assert "evening" not in marked  # the one edited word breaks its 5-word runs
            assert "alternate" in alt.inner_text() and "J=0.8" in alt.inner_text()
            page.click("#back")
            page.wait_for_selector(".card")
            # the story's articles removed after the list was loaded: its card says so (it threw
            # "Cannot read properties of undefined" before)
            with httpx.Client(base_url=server.url, timeout=30) as c:
                for d in rain:
                    c.delete(f"/v1/documents/{d['id']}")
            cards.first.click()
            page.wait_for_selector("#detail p.empty")
            assert "its articles have been removed" in page.locator("#detail").inner_text()
            page.click("#back")
            assert errors == []
        finally:
            browser.close()
