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
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
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


def _browser(p):
    return p.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    )


def _open_first_story(page, url):
    page.goto(url + "/")
    page.wait_for_selector(".card")
    page.locator(".card").first.click()
    page.wait_for_selector(".member.keeper")


def _shared_runs(text: str, other: str, k: int) -> list[str]:
    """The runs of `text` covered by a k-character shingle of `other` (lower-case ASCII)."""
    grams = {other[i : i + k] for i in range(len(other) - k + 1)}
    mark = [False] * len(text)
    for i in range(len(text) - k + 1):
        if text[i : i + k] in grams:
            mark[i : i + k] = [True] * k
    runs, cur = [], ""
    for c, m in zip(text, mark):
        if m:
            cur += c
        elif cur:
            runs.append(cur)
            cur = ""
    return runs + ([cur] if cur else [])


STORY = (
    "officials said heavy rain is likely across the northern districts tonight with flooding "
    "expected near the river and schools closed on monday as crews clear the roads"
)


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="Debian's chromium is not installed")
def test_page_highlights_as_the_index_compares_and_keeps_big_ids_exact(tmp_path):
    """Three things the page got wrong: a copy in full-width letters (an exact copy to the
    index, NFKC) had nothing highlighted; an index of character shingles had nothing
    highlighted (the page assumed 5 words); integer ids past 2^53 were shown rounded."""
    from playwright.sync_api import sync_playwright
    from srv_helpers import Server

    from neardup.index import Index

    assert CHROMIUM, "CI must install Debian's chromium (apt-get install chromium)"
    width = "".join(chr(ord(c) + 0xFEE0) if "a" <= c <= "z" else c for c in STORY.upper())  # Ａ..Ｚ
    words_ix, chars_ix = tmp_path / "words", tmp_path / "chars"
    Index.create(words_ix).close()
    Index.create(chars_ix, unit="char", k=4, threshold=0.5).close()
    big, bigger = 9007199254740993, 12345678901234567890123
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            s = Server(words_ix)
            try:
                with httpx.Client(base_url=s.url, timeout=30) as c:
                    r = c.post(
                        "/v1/documents",
                        json={
                            "documents": [
                                {"id": big, "text": STORY, "title": "Rain <b>likely</b>"},
                                {"id": bigger, "text": width},
                            ]
                        },
                    )
                    assert r.status_code == 200 and r.json()["results"][1]["match"] == "exact"
                page = browser.new_page()
                errors = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                _open_first_story(page, s.url)
                assert page.locator("#detail h2").inner_text().endswith(f"keeper {bigger}")
                ids = page.locator(".member").evaluate_all("els => els.map(e => e.dataset.id)")
                assert ids == [str(bigger), str(big)]  # not 1.2345678901234568e+22, 9007199254740992
                for ident, text in ((bigger, width), (big, STORY)):  # (the keeper: the smaller id text)
                    marks = page.locator(f'.member[data-id="{ident}"] mark.shared').all_inner_texts()
                    assert marks == [text]  # all of it: the index's NFKC, lower-case words
                assert page.locator(".member .title").inner_text() == "Rain <b>likely</b>"  # as text
                assert errors == []
            finally:
                s.stop()
            s = Server(chars_ix)
            try:
                with httpx.Client(base_url=s.url, timeout=30) as c:
                    r = c.post(
                        "/v1/documents",
                        json={
                            "documents": [
                                {"id": "a", "text": "internationalization organization"},
                                {"id": "b", "text": "internationalizations organizational"},
                            ]
                        },
                    )
                    assert r.json()["results"][1]["status"] == "duplicate"
                page = browser.new_page()
                _open_first_story(page, s.url)
                marked = page.locator('.member[data-id="b"] mark.shared').all_inner_texts()
                assert marked == _shared_runs(
                    "internationalizations organizational", "internationalization organization", 4
                )
                assert marked == ["internationalization", " organizational"]  # (the "s" is in no shared 4-gram)
            finally:
                s.stop()
        finally:
            browser.close()


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="Debian's chromium is not installed")
def test_page_keyboard_back_and_reload(server, rain):
    """Space opens a card as Enter does, focus moves to the story and back to its card, the
    browser's Back returns to the list (it left the page), and the list is read again."""
    from playwright.sync_api import sync_playwright

    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.post("/v1/documents", json={"documents": rain}).status_code == 200
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 360, "height": 700})
            page.goto(server.url + "/")
            page.wait_for_selector(".card")
            assert page.locator(".card").first.get_attribute("role") == "button"
            page.locator(".card").first.focus()
            page.keyboard.press(" ")
            page.wait_for_selector(".member.keeper")
            assert page.evaluate("document.activeElement.tagName") == "H2"
            assert page.evaluate("location.hash").startswith("#story-")
            page.go_back()
            page.wait_for_function("document.activeElement.className === 'card'")  # once the list is read again
            assert page.is_hidden("#detail")
            assert page.url.startswith(server.url)  # still the page
            # a story with copies added while the list was shown appears after the next visit
            with httpx.Client(base_url=server.url, timeout=30) as c:
                c.post(
                    "/v1/documents",
                    json={"documents": [{"id": "n1", "text": STORY}, {"id": "n2", "text": STORY + " today"}]},
                )
            page.keyboard.press("Enter")
            page.wait_for_selector(".member.keeper")
            page.click("#back")
            page.wait_for_function("document.querySelectorAll('.card').length === 2")
            # a long id with no spaces wraps inside its card on a narrow screen
            with httpx.Client(base_url=server.url, timeout=30) as c:
                other = "the council voted on tuesday to reopen the old market hall after three years of repairs"
                c.post(
                    "/v1/documents",
                    json={"documents": [{"id": "L" * 400, "text": other}, {"id": "M" * 400, "text": other + " today"}]},
                )
            page.reload()
            page.wait_for_function("document.querySelectorAll('.card').length === 3")
            assert page.evaluate("document.documentElement.scrollWidth") <= 360
        finally:
            browser.close()
