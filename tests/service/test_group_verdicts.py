"""The group commit answers each request as if the requests had been added one after the other:
a verdict gives its story's keeper and alternates as they were after its own request, never
the articles of a later request of the same group (found by a tester: two copies of one story
in one group, and the first was told the second was its keeper)."""

from __future__ import annotations

from concurrent.futures import Future

from neardup.index import Index
from neardup.service.writer import FIELDS, GroupWriter


def _group(gw: GroupWriter, reqs: list[list[dict]]) -> list[Future]:
    futs = [Future() for _ in reqs]
    gw.write_group(list(zip(reqs, futs)))
    return futs


def _answers(futs: list[Future]) -> list[list[dict]]:
    return [[v.as_dict() for v in f.result(timeout=10)] for f in futs]


def _one_by_one(path, reqs: list[list[dict]], **create) -> list[list[dict]]:
    with Index.create(path, **create) as ix:
        return [[v.as_dict() for v in ix.add(r)] for r in reqs]


def _batches(ix: Index) -> int:
    return ix._conn().execute("SELECT COUNT(*) FROM batches").fetchone()[0]


def test_two_requests_joining_one_story_get_the_story_after_their_own(tmp_path):
    text = "storm floods the river valley as rain keeps falling on the hills all week long"
    # b, added later, is the keeper by the rule (an earlier time): a's verdict must not say so
    reqs = [
        [{"id": "a", "text": text, "published_at": "2024-01-02T00:00:00Z"}],
        [{"id": "b", "text": text + " today", "published_at": "2024-01-01T00:00:00Z"}],
    ]
    with Index.create(tmp_path / "ix") as ix:
        gw = GroupWriter(ix, FIELDS)
        try:
            got = _answers(_group(gw, reqs))
        finally:
            gw.close()
        ix.check()
        assert ix.stats()["documents"] == 2
    want = _one_by_one(tmp_path / "alone", reqs)
    assert got == want
    assert got[0][0]["keeper"] == "a" and got[0][0]["alternates"] == []
    assert got[1][0]["keeper"] == "b" and got[1][0]["alternates"] == ["a"]


def test_a_request_merging_a_story_another_request_joined(tmp_path, rain):
    """One request joins a story of the archive; a later request of the group holds the copy
    that merges it with another story: the first is answered as it stood before the merge."""
    with Index.create(tmp_path / "ix", prefer_source=["agency"]) as ix:
        ix.add(rain[:2])
        reqs = [[rain[2]], [rain[3], rain[4]], [rain[5]]]
        gw = GroupWriter(ix, FIELDS)
        try:
            got = _answers(_group(gw, reqs))
        finally:
            gw.close()
    with Index.create(tmp_path / "alone", prefer_source=["agency"]) as ix:
        ix.add(rain[:2])
        want = [[v.as_dict() for v in ix.add(r)] for r in reqs]
    assert got == want


def test_requests_of_separate_stories_stay_one_commit(tmp_path):
    reqs = [[{"id": f"s{i}", "text": f"story {i} " + " ".join(f"w{i}x{j}" for j in range(30))}] for i in range(3)]
    with Index.create(tmp_path / "ix") as ix:
        gw = GroupWriter(ix, FIELDS)
        try:
            before = _batches(ix)
            got = _answers(_group(gw, reqs))
            assert _batches(ix) == before + 1  # one add for the group
        finally:
            gw.close()
    assert got == _one_by_one(tmp_path / "alone", reqs)
