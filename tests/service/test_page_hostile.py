"""The web page at `/` with hostile and awkward articles, as a news feed could carry them: HTML
and script in ids, sources, titles, texts and fields, right-to-left overrides, very long words,
astral characters, CRLF and tabs, awkward ids, a story of 55 articles, texts of 1 MB, a story
whose keeper was removed and one merged into another. One real `neardup serve`, one headless
Chromium (Debian's `chromium`, driven by Playwright with `executable_path`)."""

import os
import shutil
import unicodedata

import httpx
import pytest

CHROMIUM = os.environ.get("NEARDUP_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"), reason="Debian's chromium is not installed"
)

A = (
    "officials said heavy rain is likely across the northern districts tonight with flooding "
    "expected near the river and schools closed on monday as crews clear the roads"
)
B = (
    "the council voted on tuesday to reopen the old market hall after three years of repairs "
    "and a long dispute over the cost of the new roof"
)
C = (
    "traders who left the hall during the works may return from june the mayor said adding that "
    "rents would stay at the level agreed before the closure"
)
D = (
    "the striking port workers and their employers will meet again on friday after talks broke down "
    "late on wednesday over pay and the length of shifts at the container terminal"
)
E = (
    "ships have been waiting outside the harbour for four days and exporters say the delays are already "
    "costing them orders from buyers abroad who cannot wait much longer"
)
F = (
    "the union said its members would return to work only if the company agreed to hire more staff "
    "before the busy season starts in the autumn"
)
# the shared body: astral characters (two UTF-16 units each), CRLF and a tab inside it
BODY = A.replace("rain", "rain 😀", 1).replace("the northern", "the\r\n\tnorthern", 1) + " 𝄞 " + B + " " + C

PWN = "window.__pwned"
HOSTILE_ID = f'<img src=x onerror="{PWN}=1">"\' onmouseover="{PWN}=2" x=\''
HOSTILE_TITLE = f"</textarea><script>{PWN}=3</script>&amp;lt;<b>bold</b>"
HOSTILE_SOURCE = f"javascript:{PWN}=4 <img src=x onerror={PWN}=5>"
KEEPER_TEXT = f"<script>{PWN}=6</script> " + BODY + f" </textarea><img src=x onerror={PWN}=7>"
COPY_ID = "a/b%2Fc#d?e=f&g "
COPY_TEXT = "🎉😀 𝒜𝒷\r\n" + BODY + "\ttoday"
RLO_ID = "\u202eexe.txt"
RLO_SOURCE = "\u202eevil"
LONG = "x" * 3000
# every bidi control (Unicode's Bidi_Control): in ids and sources they must act on nothing
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
BIDI_IDS = [f"ab{c}cd{c}ef-{ord(c):x}" for c in BIDI_CONTROLS]
BIDI_SOURCES = [f"src{c}(1){c}xy" for c in BIDI_CONTROLS]
# invisible characters: "ab\u200bcd" and "abcd" looked the same; each shown as a box too
INVISIBLE = (
    "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\u3164\ufeff\uffa0"
)
INVISIBLE_IDS = [f"ab{c}cd-{ord(c):x}" for c in INVISIBLE]
EMOJI_ID = (
    "fam-\U0001f469\u200d\U0001f469\u200d\U0001f467-\u2764\ufe0f\u200d\U0001f525"  # joiners inside emoji sequences
)
G = (
    "the museum will open a new wing next spring to show the paintings that were kept in storage for decades "
    "while the roof of the east gallery was rebuilt"
)
# grapheme clusters of more than one code point, each to straddle the service's cut of a snippet
CLUSTERS = {
    "flag": "\U0001f1eb\U0001f1f7",
    "accent": "e\u0301",
    "zwj": "\U0001f469\u200d\U0001f469\u200d\U0001f467",
    "hangul": "\u1100\u1161\u11a8",
}

FIND = """([ident, sel]) => {  // the member whose data-id is `ident` (no CSS escaping of it needed)
  const m = [...document.querySelectorAll('.member')].find(e => e.dataset.id === ident);
  return m ? [...m.querySelectorAll(sel)].map(e => e.textContent) : null;
}"""


def _post(c, docs):
    r = c.post("/v1/documents", json={"documents": docs})
    assert r.status_code == 200, r.text
    return r.json()["results"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(server, browser, stories): the articles posted, one browser for the module."""
    from playwright.sync_api import sync_playwright
    from srv_helpers import Server

    from neardup.index import Index

    assert CHROMIUM, "CI must install Debian's chromium (apt-get install chromium)"
    ix = tmp_path_factory.mktemp("hostile") / "ix"
    Index.create(ix).close()
    s = Server(ix)
    stories = {}
    try:
        with httpx.Client(base_url=s.url, timeout=120) as c:
            r = _post(
                c,
                [
                    {
                        "id": HOSTILE_ID,
                        "text": KEEPER_TEXT,
                        "title": HOSTILE_TITLE,
                        "source": HOSTILE_SOURCE,
                        "published_at": 1,
                        "fields": {"url": f"javascript:{PWN}=8", "html": f"<img src=x onerror={PWN}=9>"},
                    },
                    {"id": COPY_ID, "text": COPY_TEXT, "title": "", "source": RLO_SOURCE, "published_at": 2},
                    {"id": RLO_ID, "text": BODY + " " + LONG, "source": "שָׁלוֹם", "title": "כותרת", "published_at": 3},
                    {"id": 42, "text": BODY + " again", "title": "&amp;lt; \u05d0", "published_at": 4},
                ],
            )
            assert {x["cluster"] for x in r} == {r[0]["cluster"]} and r[0]["status"] == "new"
            stories["hostile"] = r[0]["cluster"]
            # words the index tells apart and the page did not: an acute accent used as an
            # apostrophe (NFKC: a space and a combining mark, which joins the next word)
            k, t = D + " they don´t think the river " + E + " " + F, D + " they don't think the river " + E + " " + F
            r = _post(
                c, [{"id": "acute-k", "text": k, "published_at": 1}, {"id": "acute-c", "text": t, "published_at": 2}]
            )
            assert r[1]["status"] == "duplicate", r
            stories["acute"] = r[0]["cluster"]
            r = _post(c, [{"id": f"many/{i}", "text": B + f" n{i}"} for i in range(55)])
            assert len({x["cluster"] for x in r}) == 1
            stories["many"] = r[0]["cluster"]
            big = "🎉 " + "word " * 200_000 + A  # 1 MB
            r = _post(
                c,
                [
                    {"id": "big-k", "text": big, "published_at": 1},
                    {"id": "big-c", "text": big + " x", "published_at": 2},
                ],
            )
            assert r[1]["status"] == "duplicate"
            stories["big"] = r[0]["cluster"]
            r = _post(
                c,
                [
                    {"id": "gone-k", "text": C + " one", "source": "s1", "published_at": 1},
                    {"id": "gone-c1", "text": C + " two", "published_at": 2},
                    {"id": "gone-c2", "text": C + " three", "published_at": 3},
                ],
            )
            stories["gone"], stories["gone-keeper"] = r[0]["cluster"], r[0]["keeper"]
            left, right = A + " w1 w2 w3 w4 w5", "v1 v2 v3 v4 v5 " + A
            r = _post(c, [{"id": "L", "text": left}, {"id": "L2", "text": left + " w6"}])
            stories["left"] = r[0]["cluster"]
            r = _post(c, [{"id": "R", "text": right}, {"id": "R2", "text": "v0 " + right}])
            stories["right"] = r[0]["cluster"]
            r = _post(
                c,
                [
                    {"id": i, "text": D + f" {n}", "source": src, "published_at": n}
                    for n, (i, src) in enumerate(zip(BIDI_IDS, BIDI_SOURCES))
                ],
            )
            assert {x["cluster"] for x in r} == {r[0]["cluster"]} and r[0]["keeper"] == BIDI_IDS[0]
            stories["bidi"] = r[0]["cluster"]
            r = _post(
                c,
                [
                    {"id": i, "text": G + f" {n}", "published_at": n}
                    for n, i in enumerate(INVISIBLE_IDS + [EMOJI_ID, "abcd"])
                ],
            )
            assert {x["cluster"] for x in r} == {r[0]["cluster"]}
            stories["invisible"] = r[0]["cluster"]
            stories["cut"] = {}
            for name, text in _cut_texts().items():
                r = _post(
                    c,
                    [
                        {"id": f"cut-{name}", "text": text, "published_at": 1},
                        {"id": f"cut-{name}-c", "text": text + " today", "published_at": 2},
                    ],
                )
                assert r[1]["status"] == "duplicate" and r[0]["keeper"] == f"cut-{name}", r
                stories["cut"][name] = r[0]["cluster"]
        p = sync_playwright().start()
        try:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            try:
                yield s, browser, stories
            finally:
                browser.close()
        finally:
            p.stop()
    finally:
        s.stop()


def _cut_texts() -> dict[str, str]:
    """Keepers' texts whose snippet (their first SNIPPET_CUT code points) is cut inside one of
    CLUSTERS, after a start holding astral characters (two UTF-16 units each, one code point);
    and two not cut inside a cluster: one of fewer code points, one of plain letters. Words of
    their own for each (no two of these stories match)."""
    from neardup.service.page import SNIPPET_CUT

    def words(name, n):
        return " ".join(f"{name}{i}" + (" 😀" if i % 7 == 0 else "") for i in range(n))

    out = {}
    for name, cluster in CLUSTERS.items():
        before = words(name, 60)[: SNIPPET_CUT - len(cluster) + 1]  # the cut falls after the cluster's first code point
        assert len(before) < SNIPPET_CUT < len(before) + len(cluster)
        out[name] = before + cluster + " " + words(name + "-end", 20)
    out["short"] = words("short", 20) + " " + CLUSTERS["flag"] + " end"
    out["plain"] = words("plain", 60)
    assert len(out["short"]) < SNIPPET_CUT < len(out["plain"]) and "\r" not in out["plain"]
    assert out["plain"][SNIPPET_CUT - 1 : SNIPPET_CUT + 1].isascii()  # (ASCII: one code point a cluster, CR LF aside)
    return out


def _page(browser, url, **kw):
    page = browser.new_page(**kw)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("dialog", lambda d: (errors.append("dialog " + d.message), d.dismiss()))
    page.goto(url + "/")
    page.wait_for_selector(".card")
    return page, errors


def _open(page, cluster):
    page.locator(f'.card[data-cluster="{cluster}"]').click()
    page.wait_for_selector(".member.keeper")


def test_hostile_strings_show_as_text_and_run_nothing(site):
    s, browser, st = site
    page, errors = _page(browser, s.url)
    card = page.locator(f'.card[data-cluster="{st["hostile"]}"]')
    assert HOSTILE_ID in card.inner_text()
    _open(page, st["hostile"])
    for i in range(page.locator(".member").count()):  # an injected onmouseover would run now
        page.locator(".member").nth(i).hover()
    assert page.evaluate(f"typeof {PWN}") == "undefined"
    assert (
        page.evaluate("document.querySelectorAll('#detail img, #detail script, #cards img, #cards script').length") == 0
    )
    ids = page.locator(".member").evaluate_all("els => els.map(e => e.dataset.id)")
    assert sorted(ids) == sorted([HOSTILE_ID, COPY_ID, RLO_ID, "42"])
    assert page.evaluate(FIND, [HOSTILE_ID, ".title"]) == [HOSTILE_TITLE]
    assert page.evaluate(FIND, [HOSTILE_ID, "h3"])[0].startswith(HOSTILE_ID)
    assert page.evaluate(FIND, [HOSTILE_ID, ".meta"])[0].startswith(HOSTILE_SOURCE + " · ")
    assert page.evaluate(FIND, [HOSTILE_ID, ".text"]) == [KEEPER_TEXT.replace("\r\n", "\n")]
    assert page.evaluate(FIND, ["42", ".title"]) == ["&amp;lt; \u05d0"]
    assert page.evaluate(FIND, [COPY_ID, ".text"]) == [COPY_TEXT.replace("\r\n", "\n")]  # (HTML reads CRLF as LF)
    assert errors == []


def test_shared_passages_after_astral_characters_crlf_and_tabs(site):
    """The highlighted passages are the shared body exactly: not shifted by the astral
    characters before and inside it (two UTF-16 units each), CRLF and tabs kept."""
    s, browser, st = site
    page, errors = _page(browser, s.url)
    _open(page, st["hostile"])
    shown = BODY.replace("\r\n", "\n")  # (HTML reads CRLF as LF)
    for ident in (HOSTILE_ID, COPY_ID, RLO_ID, "42"):
        assert page.evaluate(FIND, [ident, "mark.shared"]) == [shown], ident
    assert errors == []


def test_shared_passages_are_the_words_the_index_compared(site):
    """`don´t` is "don" and "\u0301t" to the index (NFKC turns ´ into a space and a combining
    mark) and `don't` is "don" and "t": the runs through that word are not shared. The
    page highlighted the whole text, as if the index had seen the same words."""
    s, browser, st = site
    page, errors = _page(browser, s.url)
    _open(page, st["acute"])
    assert page.evaluate(FIND, ["acute-c", "mark.shared"]) == [D + " they don", "think the river " + E + " " + F]
    assert page.evaluate(FIND, ["acute-k", "mark.shared"]) == [D + " they don", "think the river " + E + " " + F]
    assert errors == []


# strings whose tokens the page made differently from the index: (unit, text)
AWKWARD = [
    ("word", "they don´t care"),
    ("word", "می\u200cخواهم"),
    ("word", "🅰️ blood type"),
    ("word", "Ⓐnd ⓑ"),
    ("word", "ΟΔΟΣ'Α ΟΔΟΣ"),
    ("word", "፩፪ num"),
    ("word", "¨umlaut"),
    ("word", "café cafe\u0301 ½ x² ﬁne"),
    ("word", "𝐇𝐞𝐥𝐥𝐨 😀 wörld İstanbul"),
    ("word", "a\ufeffb\r\n\tc"),
    ("whitespace", "x\x85y z\x1cw"),
    ("whitespace", "a\ufeffb İ"),
    ("whitespace", "tab\there\r\ncrlf 😀x"),
    ("char", "é cafe\u0301"),
    ("char", "ΟΔΟΣ end"),
    ("char", "x\x85y\x1cz"),
    ("char", "a\ufeffb"),
    ("char", "\u1100\u1161 jamo"),
    ("char", "´acute ﬁ 😀 𝐇\r\n\t i"),
    ("char", "  lead and trail  "),
]


def test_tokens_are_the_index_tokens(site):
    """The page's tokens (and so its shingles) are the index's, for each unit: the index
    normalises the whole text (NFKC, then lower-case) before it splits it into Rust's `\\w`
    runs, Python's white space or characters; the page split first, then normalised each
    piece. And each token's span is the piece of the original text it came from."""
    from neardup.shingle import Shingler

    s, browser, _ = site
    page, errors = _page(browser, s.url)
    page.wait_for_function("typeof tokens === 'function'")
    for unit, text in AWKWARD:
        got = page.evaluate(
            """([unit, text]) => {
            const was = SHINGLE.unit; SHINGLE.unit = unit;
            try { return tokens(text).map(t => [t.w, text.slice(t.s, t.e)]); } finally { SHINGLE.unit = was; }
        }""",
            [unit, text],
        )
        words = [w for w, _ in got]
        assert list(dict.fromkeys(words)) == Shingler(k=1, unit=unit).shingles(text), (unit, text)
        for w, piece in got:  # the span holds what the token came from (final sigma aside)
            norm = (piece if unit == "whitespace" else unicodedata.normalize("NFKC", piece)).lower()
            if w == " ":  # (a char token for a run of white space)
                assert any(c.isspace() for c in norm), (unit, text, piece)
            else:
                assert w.replace("ς", "σ") in norm.replace("ς", "σ"), (unit, text, w, piece)
    assert errors == []


def test_long_words_and_right_to_left_overrides_keep_the_layout(site):
    """A 3000-letter word wrapped inside its card (it made its card 24000 px wide); a story
    title naming a 400-letter id wraps; an id or source holding U+202E (RIGHT-TO-LEFT
    OVERRIDE) does not turn the page's own text around it ("J=0.9" read "9.0=J", the keeper
    badge moved before the id), nor does a Hebrew source ("1970-01-01 00:00" read "00:00
    1970-01-01"); a Hebrew title reads right to left."""
    s, browser, st = site
    page, errors = _page(browser, s.url, viewport={"width": 800, "height": 700})
    _open(page, st["hostile"])
    widths = page.locator(".member").evaluate_all("els => els.map(e => e.getBoundingClientRect().width)")
    assert max(widths) < 400, widths
    assert page.evaluate("document.documentElement.scrollWidth") <= 800
    order = """([ident, needle]) => {  // is the first character of `needle` left of its last?
      const m = [...document.querySelectorAll('.member')].find(e => e.dataset.id === ident);
      const w = document.createTreeWalker(m, NodeFilter.SHOW_TEXT);
      for (let n; (n = w.nextNode());) {
        const i = n.data.indexOf(needle);
        if (i < 0) continue;
        const r = document.createRange(), x = [];
        for (const k of [i, i + needle.length - 1]) { r.setStart(n, k); r.setEnd(n, k + 1); x.push(r.getBoundingClientRect().left); }
        return x[0] < x[1];
      }
      return null;
    }"""
    assert page.evaluate(order, [COPY_ID, "J="]) is True  # after the source with U+202E
    assert page.evaluate(order, [COPY_ID, "UTC"]) is True
    assert page.evaluate(order, [RLO_ID, "1970-01-01 00:00"]) is True  # after a Hebrew source (no override)
    badge_after_id = """(ident) => {
      const m = [...document.querySelectorAll('.member')].find(e => e.dataset.id === ident);
      const h = m.querySelector('h3'), r = document.createRange();
      r.setStart(h, 0); r.setEnd(h, 1);  // the id (its text, or the element holding it)
      return h.querySelector('.badge').getBoundingClientRect().left > r.getBoundingClientRect().left;
    }"""
    assert page.evaluate(badge_after_id, RLO_ID) is True
    # right-to-left titles and texts read right to left
    assert (
        page.evaluate(
            """(ident) => {
      const m = [...document.querySelectorAll('.member')].find(e => e.dataset.id === ident);
      return getComputedStyle(m.querySelector('.title')).direction;
    }""",
            RLO_ID,
        )
        == "rtl"
    )
    page.click("#back")
    page.wait_for_selector(".card")
    with httpx.Client(base_url=s.url, timeout=30) as c:
        r = _post(c, [{"id": "L" * 400, "text": B + " " + C}, {"id": "M" * 400, "text": B + " " + C + " today"}])
    page.reload()
    page.wait_for_selector(f'.card[data-cluster="{r[0]["cluster"]}"]')
    _open(page, r[0]["cluster"])
    assert page.evaluate("document.documentElement.scrollWidth") <= 800
    assert errors == []


def test_big_stories_removed_keepers_and_merged_stories(site):
    s, browser, st = site
    page, errors = _page(browser, s.url)
    _open(page, st["many"])
    assert page.locator(".member").count() == 55
    assert page.locator(".member.keeper").count() == 1
    assert page.locator("mark.shared").count() == 55
    page.click("#back")
    page.wait_for_selector(".card")
    _open(page, st["big"])  # two texts of 1 MB
    marks = page.evaluate("""() => [...document.querySelectorAll('.member')].map(m =>
        [m.dataset.id, [...m.querySelectorAll('mark.shared')].map(k => [k.textContent.length,
         k.textContent.slice(0, 9), k.textContent.slice(-9)]), m.querySelector('.text').textContent.length])""")
    n = len("word " * 200_000 + A)
    assert sorted(marks) == [
        ["big-c", [[n, "word word", "the roads"]], n + 5],
        ["big-k", [[n, "word word", "the roads"]], n + 3],
    ]
    page.click("#back")
    page.wait_for_selector(".card")
    # the list is shown; then a story's keeper is removed and two stories merge
    with httpx.Client(base_url=s.url, timeout=30) as c:
        assert c.delete(f"/v1/documents/{st['gone-keeper']}").status_code == 200
        r = _post(c, [{"id": "bridge", "text": "v4 v5 " + A + " w1 w2"}])
        assert r[0]["cluster"] in (st["left"], st["right"])
        merged, into = {st["left"], st["right"]} - {r[0]["cluster"]}, r[0]["cluster"]
        assert c.get(f"/v1/clusters/{merged.pop() if len(merged) == 1 else st['right']}").json()["merged_into"] == into
    other = st["right"] if into == st["left"] else st["left"]
    _open(page, other)  # the card (still listed) of the story merged into the other one since
    assert page.locator("#detail h2").inner_text().startswith(f"Story {into}: 5 articles")
    assert page.locator(".member").count() == 5
    page.click("#back")
    page.wait_for_selector(".card")
    _open(page, st["gone"])
    keeper = page.locator(".member.keeper").get_attribute("data-id")
    assert keeper in ("gone-c1", "gone-c2") and page.locator(".member").count() == 2
    assert page.locator("#detail h2").inner_text().endswith(f"keeper {keeper}")
    assert errors == []


# each visible code point of an element, in the order of the text (DOM order), with its box (top,
# bottom, left); a bidi control's box (.ctl) counts as one
READING = """(el) => {
  const out = [], r = document.createRange();
  const walk = n => {
    for (const c of n.childNodes) {
      if (c.nodeType === Node.ELEMENT_NODE && c.classList.contains("ctl")) {
        const b = c.getBoundingClientRect();
        out.push(["ctl:" + c.dataset.cp, [b.top, b.bottom, b.left], b.width]);
      } else if (c.nodeType === Node.ELEMENT_NODE) {
        walk(c);
      } else if (c.nodeType === Node.TEXT_NODE) {
        for (let i = 0; i < c.data.length;) {
          const n = c.data.codePointAt(i) > 0xffff ? 2 : 1;
          r.setStart(c, i); r.setEnd(c, i + n);
          const b = r.getBoundingClientRect();
          out.push([c.data.slice(i, i + n), [b.top, b.bottom, b.left], b.width]);
          i += n;
        }
      }
    }
  };
  walk(el);
  return out;
}"""
# what a person copying the element gets (its text as selected, not the boxes' marks)
COPIED = """(el) => {
  const sel = getSelection(), r = document.createRange();
  r.selectNodeContents(el); sel.removeAllRanges(); sel.addRange(r);
  const t = sel.toString(); sel.removeAllRanges(); return t;
}"""


def _reads_in_order(page, el, text: str, marked: str = BIDI_CONTROLS) -> None:
    """`el` (a <bdi> showing `text`) shows its code points left to right, each bidi control (or
    other `marked` character) as a visible box in its place, and copies as `text` itself."""
    shown = el.evaluate(READING)
    expect = [f"ctl:\\u{ord(c):04x}" if c in marked else c for c in text]
    assert [c for c, _, _ in shown] == expect, (text, shown)
    for (_, (t0, b0, x0), _), (_, (t1, b1, x1), _) in zip(shown, shown[1:]):  # each after the one before:
        same_line = min(b0, b1) > max(t0, t1)
        assert x1 > x0 if same_line else t1 >= b0 - 1, (text, shown)  # right of it, or on a line below (wrapped)
    assert all(w >= 10 for c, _, w in shown if c.startswith("ctl:")), shown  # the box is seen: "\u202e"
    assert el.text_content() == text and el.evaluate(COPIED) == text


def test_bidi_controls_in_ids_and_sources_read_in_order(site):
    """An id or source holding a bidi control was isolated from the page's words (<bdi>) but
    not from itself: "\u202eexe.txt" read "txt.exe", "ab\u202ecd\u202eef" read "abfedc", and an
    LRM or an isolate was invisible. Each control now sits in a box of its own, shown as its
    escape, where it acts on nothing: every id and source reads in the order of its code points
    (on the card, in the story's title, over each member and in its source line), and copying
    it still copies the id itself."""
    s, browser, st = site
    page, errors = _page(browser, s.url, viewport={"width": 1400, "height": 900})
    card = page.locator(f'.card[data-cluster="{st["bidi"]}"]')
    _reads_in_order(page, card.locator(".meta bdi").first, BIDI_IDS[0])
    _reads_in_order(page, card.locator(".meta bdi").nth(1), BIDI_SOURCES[0])
    _open(page, st["bidi"])
    _reads_in_order(page, page.locator("#detail h2 bdi"), BIDI_IDS[0])
    for ident, src in zip(BIDI_IDS, BIDI_SOURCES):
        member = page.locator(".member").filter(has=page.locator(f'[title^="U+{ord(ident[2]):04X} "]')).first
        assert member.get_attribute("data-id") == ident
        _reads_in_order(page, member.locator("h3 bdi"), ident)
        _reads_in_order(page, member.locator(".meta bdi"), src)
        assert (
            member.locator("h3 .ctl").first.get_attribute("title")
            == f"U+{ord(ident[2]):04X} {unicodedata.name(ident[2])}"
        )
    # and the page's own words around them read as before (the badge after the id, "J=" after the source)
    _open_again = page.locator(".member").nth(1)
    h3 = _open_again.locator("h3")
    assert h3.locator(".badge").bounding_box()["x"] > h3.locator("bdi").bounding_box()["x"]
    meta = _open_again.locator(".meta").inner_text()
    assert " · " in meta and "J=" in meta
    assert errors == []


def test_invisible_characters_in_ids_are_shown(site):
    """Ids that differ by an invisible character (a zero-width space, a joiner, a BOM, a soft
    hyphen, a filler) looked the same as each other and as "abcd": each such character is a box
    of its own now, named on hover; a joiner inside an emoji sequence is left alone (the
    sequence shows as one emoji)."""
    s, browser, st = site
    page, errors = _page(browser, s.url, viewport={"width": 1400, "height": 900})
    _open(page, st["invisible"])
    for ident in INVISIBLE_IDS:
        c = ident[2]
        member = page.locator(".member").filter(has=page.locator(f'[title^="U+{ord(c):04X} "]')).first
        assert member.get_attribute("data-id") == ident
        _reads_in_order(page, member.locator("h3 bdi"), ident, marked=INVISIBLE)
        assert member.locator("h3 .ctl").get_attribute("title") == f"U+{ord(c):04X} {unicodedata.name(c)}"
    plain = (
        page.locator(".member").filter(has=page.locator("h3 bdi", has_text="abcd")).filter(has_not=page.locator(".ctl"))
    )
    assert [m.get_attribute("data-id") for m in plain.all()] == ["abcd"]
    emoji = page.locator(".member").filter(has=page.locator("h3 bdi", has_text="fam-"))
    assert emoji.get_attribute("data-id") == EMOJI_ID
    assert emoji.locator("h3 .ctl").count() == 0 and emoji.locator("h3 bdi").text_content() == EMOJI_ID
    assert errors == []


def test_snippets_end_on_a_grapheme_boundary(site):
    """A card's snippet is the keeper's text cut by the service at SNIPPET_CUT code points: cut
    inside a flag it showed one regional indicator (a lone letter box), inside "e" + U+0301 an
    "e" without its accent, inside a ZWJ family one or two of its people, inside a Hangul
    syllable (three jamo) part of it. The page now leaves out the last cluster of a snippet
    that long, whole or not (it cannot tell which: what follows the cut is not sent), so what
    is shown is the text up to a cluster boundary, then "…"; a shorter snippet is the whole
    text, with no "…"."""
    from neardup.service.page import SNIPPET_CUT

    s, browser, st = site
    page, errors = _page(browser, s.url)
    texts = _cut_texts()
    shown = {
        name: page.locator(f'.card[data-cluster="{cl}"] .snippet').text_content() for name, cl in st["cut"].items()
    }
    for name, cluster in CLUSTERS.items():
        whole = texts[name][: texts[name].index(cluster, SNIPPET_CUT - len(cluster))]  # up to the cut cluster
        assert shown[name] == whole + "…", (name, shown[name][-12:])
    assert shown["short"] == texts["short"]  # (the flag whole, no "…")
    assert shown["plain"] == texts["plain"][: SNIPPET_CUT - 1] + "…"  # its last cluster left out
    # each shown cluster is a whole cluster of the text, as the browser segments them
    assert (
        page.evaluate(
            """([shown, texts]) => Object.keys(shown).every(k => {
      const seg = t => [...new Intl.Segmenter(undefined, {granularity: "grapheme"}).segment(t)].map(g => g.segment);
      const a = seg(shown[k].replace(/…$/, "")), b = seg(texts[k]);
      return a.every((g, i) => g === b[i]);
    })""",
            [shown, texts],
        )
        is True
    )
    assert errors == []
