"""The keeper rule: earliest time, then --prefer-source order, then id."""

import numpy as np

import neardup
from neardup.stages.keepers import pick_keepers, source_ranks

TEXT = (
    "heavy rain is likely over coastal karnataka and goa for the next three days the weather "
    "office said on sunday and fishermen have been advised not to venture into the sea"
)


def copies(specs):
    """Records that are all exact copies of one text (one cluster), from (id, time, source)."""
    return [
        {"id": i, "text": TEXT + ("" if n % 2 else " "), "published_at": t, "source": s}
        for n, (i, t, s) in enumerate(specs)
    ]


def keeper(recs, **kw):
    res = neardup.dedup(recs, **kw)
    assert len(res.clusters) == 1
    return res.clusters[0]["keeper"], [m["id"] for m in res.clusters[0]["members"]]


def test_earliest_time_wins_over_input_order_and_source():
    recs = copies(
        [
            ("b", "2026-07-12T10:00:00Z", "agency"),
            ("a", "2026-07-12T09:00:00Z", "site-x"),
            ("c", "2026-07-12T11:00:00Z", "agency"),
        ]
    )
    assert keeper(recs, prefer_source=["agency"]) == ("a", ["b", "c"])


def test_time_zones_are_compared_as_instants():
    # 09:30 in India (UTC+5:30) is 04:00 UTC: earlier than 05:00 UTC
    recs = copies([("utc", "2026-07-12T05:00:00Z", None), ("ist", "2026-07-12T09:30:00+05:30", None)])
    assert keeper(recs)[0] == "ist"


def test_rfc_2822_times_are_read():
    # an RSS-style date (its parser is imported on first use): 09:00 +0200 is 07:00 UTC
    from neardup.io.records import parse_time

    assert parse_time("Sun, 12 Jul 2026 09:00:00 +0200") == parse_time("2026-07-12T07:00:00Z")
    recs = copies([("iso", "2026-07-12T08:00:00Z", None), ("rss", "Sun, 12 Jul 2026 09:00:00 +0200", None)])
    assert keeper(recs)[0] == "rss"


def test_same_time_preferred_source_in_listed_order():
    t = "2026-07-12T09:00:00Z"
    recs = copies([("x1", t, "site-x"), ("b1", t, "site-b"), ("ag", t, "agency"), ("a1", t, "site-a")])
    assert keeper(recs, prefer_source=["agency", "site-a"]) == ("ag", ["a1", "b1", "x1"])
    assert keeper(recs, prefer_source=["site-b", "agency"])[0] == "b1"
    assert keeper(recs, prefer_source="site-a,agency")[0] == "a1"


def test_ties_broken_by_id():
    t = "2026-07-12T09:00:00Z"
    recs = copies([("z", t, "s"), ("m", t, "s"), ("k", t, "s")])
    assert keeper(recs) == ("k", ["m", "z"])


def test_missing_times_come_last():
    recs = copies([("a", None, "agency"), ("b", "2026-07-12T09:00:00Z", "site"), ("c", None, "agency")])
    for r in recs:
        if r["published_at"] is None:
            del r["published_at"]
    assert keeper(recs, prefer_source=["agency"]) == ("b", ["a", "c"])


def test_without_time_field_source_then_id_decide():
    recs = copies([("a", "2026-07-12T09:00:00Z", "site"), ("b", "2026-07-13T09:00:00Z", "agency")])
    assert keeper(recs, time_field=None, prefer_source=["agency"])[0] == "b"
    assert keeper(recs, time_field=None)[0] == "a"


def test_epoch_numbers_and_reuters_dates():
    recs = copies([("late", 1_800_000_000, None), ("early", 1_700_000_000.5, None)])
    assert keeper(recs)[0] == "early"
    recs = copies([("x", "26-FEB-1987 15:10:44.60", None), ("y", "26-FEB-1987 15:01:01.79", None)])
    assert keeper(recs)[0] == "y"


def test_pick_keepers_vectorised_groups():
    labels = np.array([0, 0, 2, 0, 2, 5])
    members = np.array([0, 1, 2, 3, 4])
    times = np.array([3.0, 1.0, np.nan, 1.0, 7.0, 0.0])
    src = source_ranks(["s", "agency", "s", "s", None, "s"], ["agency"])
    assert src.tolist() == [1, 0, 1, 1, 1, 1]
    ids = np.array([0, 1, 2, 3, 4, 5])
    ordered, starts = pick_keepers(labels, members, times, src, ids)
    # cluster 0: docs 1 and 3 share time 1.0, doc 1 is from the agency; doc 0 is later
    # cluster 2: doc 4 has a time, doc 2 has none
    assert ordered.tolist() == [1, 3, 0, 4, 2]
    assert starts.tolist() == [0, 3]
