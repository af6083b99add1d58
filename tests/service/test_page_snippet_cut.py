"""The page leaves out the last grapheme cluster of a card's snippet when the snippet is as long
as the service cuts it (it may be a piece of a cluster: the page cannot see what follows the
cut). That rests on the page knowing the service's cut: checked here, in-process, against what
`GET /v1/clusters` sends."""

from neardup.service.page import PAGE, SNIPPET_CUT


def _story(client, ident, text):
    r = client.post(
        "/v1/documents",
        json={
            "documents": [
                {"id": ident, "text": text, "published_at": 1},
                {"id": ident + "-c", "text": text + " today", "published_at": 2},
            ]
        },
    )
    assert r.status_code == 200 and r.json()["results"][1]["status"] == "duplicate", r.text
    return r.json()["results"][0]["cluster"]


def test_the_service_cuts_snippets_where_the_page_expects(client):
    # astral characters: one code point each in Python, two UTF-16 units in the page
    long_text = " ".join(f"w{i} 😀" for i in range(200))
    short_text = " ".join(f"s{i}" for i in range(20))
    long_cl = _story(client, "long", long_text)
    short_cl = _story(client, "short", short_text)
    cards = {c["cluster"]: c["snippet"] for c in client.get("/v1/clusters?limit=10").json()}
    assert cards[long_cl] == long_text[:SNIPPET_CUT]  # SNIPPET_CUT code points, from the start
    assert cards[short_cl] == short_text  # shorter: whole, and shorter than the cut
    assert len(short_text) < SNIPPET_CUT
    # and the page is served with that figure
    page = client.get("/")
    assert page.status_code == 200 and page.text == PAGE
    assert f"const SNIPPET_CUT = {SNIPPET_CUT};" in page.text and "@SNIPPET_CUT@" not in page.text


def test_a_cards_snippet_starts_with_the_keepers_title(client):
    """The service keeps a POST's title among the article's fields (it is not compared); the
    cards' snippets read it from the top-level title only, so no card ever showed one."""
    text = " ".join(f"t{i}" for i in range(40))
    r = client.post(
        "/v1/documents",
        json={
            "documents": [
                {"id": "k", "text": text, "title": "Heavy rain in Goa", "published_at": 1},
                {"id": "k-c", "text": text + " today", "title": "Rain: Goa on alert", "published_at": 2},
            ]
        },
    )
    assert r.status_code == 200, r.text
    cl = r.json()["results"][0]["cluster"]
    cards = {c["cluster"]: c["snippet"] for c in client.get("/v1/clusters?limit=10").json()}
    assert cards[cl] == ("Heavy rain in Goa — " + text)[:SNIPPET_CUT]
