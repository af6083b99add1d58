"""Index round trips, the daily-batch flow against one `neardup dedup`, removal, compaction."""

import json
import os
import sqlite3

import ix_helpers as h
import numpy as np
import pytest

import neardup
from neardup.demo import records as demo_records
from neardup.errors import RecordError
from neardup.index import (
    DocumentNotFoundError,
    DuplicateIdError,
    Index,
    IndexConfigError,
    IndexExistsError,
    IndexNotFoundError,
)


def test_rain_story_round_trip(tmp_path):
    recs = demo_records()
    with Index.create(tmp_path / "ix", prefer_source=["agency"]) as ix:
        vs = ix.add(recs)
        by = {v.id: v for v in vs}
        assert by["agency-001"].status == "new" and by["agency-001"].is_keeper
        for cid in ("site-a-417", "site-b-092"):
            assert by[cid].status == "duplicate" and by[cid].keeper == "agency-001"
            assert by[cid].cluster == by["agency-001"].cluster and by[cid].match == "near"
            assert 0.8 <= by[cid].similarity < 1
        assert by["site-c-310"].status == "new" and by["site-c-310"].alternates == []
        assert all(v.inserted for v in vs)
    # reopen: everything is still there
    with Index.open(tmp_path / "ix") as ix:
        d = ix.get_document("site-a-417")
        assert d["keeper"] == "agency-001" and d["match"] == "near" and "sunday evening" in d["text"].lower()
        c = ix.get_cluster(d["cluster"], texts=True)
        assert c["keeper"] == "agency-001" and c["members"][0]["is_keeper"] and all("text" in m for m in c["members"])
        st = ix.stats()
        assert st["documents"] == len(recs) and st["clusters"] == 1
        rows = list(ix.clusters())
        ref = neardup.dedup(recs, None, prefer_source=["agency"])
        assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters)
        # query does not insert
        q = ix.query(recs[0]["text"] + " also read more")
        assert q[0].status == "duplicate" and not q[0].inserted
        assert ix.stats()["documents"] == len(recs)
        assert ix.check()["texts"] == len(recs)


@pytest.mark.parametrize("paths", ["level0", "segments"])
def test_daily_batches_equal_one_dedup(tmp_path, corpus, request, paths):
    tuning = request.getfixturevalue("small_segments") if paths == "segments" else {}
    ref = neardup.dedup(corpus, None, prefer_source=["agency"])
    days = h.days(corpus, 4)
    with Index.create(tmp_path / "ix", prefer_source=["agency"], **tuning) as ix:
        for day in days:
            ix.add(h.write_jsonl(tmp_path / f"day{len(day)}.jsonl", day))
        rows = list(ix.clusters())
        st = ix.stats()
    assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters)
    assert h.member_sims(rows) == h.member_sims(ref.clusters)
    assert st["documents"] == len(corpus)
    if paths == "segments":
        assert st["segments"] >= 1
    # the last day merged clusters (bridge articles)
    con = sqlite3.connect(tmp_path / "ix" / "index.sqlite")
    assert con.execute("SELECT COUNT(*) FROM clusters WHERE merged_into IS NOT NULL").fetchone()[0] > 0


def test_one_document_at_a_time_equals_dedup(tmp_path, corpus):
    """(Every add of one document takes the plan's steps for a few documents: ``Steps.small_plan``.)"""
    docs = corpus[:150] + [d for d in corpus if d["id"].startswith(("c", "b"))][:100]
    ref = neardup.dedup(docs, None)
    with Index.create(tmp_path / "ix") as ix:
        for d in docs:
            ix.add([d])
        assert h.cluster_sets(ix.clusters()) == h.cluster_sets(ref.clusters)


def test_estimate_mode_without_texts(tmp_path, corpus):
    ref = neardup.dedup(corpus, None, verify="estimate")
    with Index.create(tmp_path / "ix", verify="estimate", store_text=False) as ix:
        for day in h.days(corpus, 3):
            ix.add(day)
        assert h.cluster_sets(ix.clusters()) == h.cluster_sets(ref.clusters)
        assert "text" not in ix.get_document(corpus[0]["id"])
    with pytest.raises(neardup.InvalidParameterError):
        Index.create(tmp_path / "bad", verify="exact", store_text=False)


def test_config_stored_and_checked(tmp_path):
    Index.create(tmp_path / "ix", k=4, num_perm=64, threshold=0.7).close()
    with pytest.raises(IndexExistsError):
        Index.create(tmp_path / "ix")
    with Index.open(tmp_path / "ix", k=4, num_perm=64) as ix:
        assert (
            ix.config.settings.k == 4 and ix.config.settings.num_perm == 64 and ix.config.bands * ix.config.rows <= 64
        )
    with pytest.raises(IndexConfigError, match="num_perm"):
        Index.open(tmp_path / "ix", num_perm=128)
    with pytest.raises(IndexConfigError, match="scheme"):
        Index.open(tmp_path / "ix", scheme="datasketch-affine32")
    with pytest.raises(IndexNotFoundError):
        Index.open(tmp_path / "nothing")
    # a build whose signatures differ from the one that made the index is refused
    con = sqlite3.connect(tmp_path / "ix" / "index.sqlite")
    con.execute("UPDATE meta SET value = '00' WHERE key = 'probe'")
    con.commit()
    con.close()
    with pytest.raises(IndexConfigError, match="different signatures"):
        Index.open(tmp_path / "ix")


def test_batch_is_all_or_nothing_on_bad_input(tmp_path):
    recs = demo_records()
    with Index.create(tmp_path / "ix") as ix:
        ix.add(recs[:2])
        with pytest.raises(DuplicateIdError, match="already in the index"):
            ix.add(recs[2:] + [recs[0]])
        with pytest.raises(DuplicateIdError, match="twice"):
            ix.add([recs[3], recs[3]])
        # both kinds at once are both said (only the first was: fixing it met the second)
        for many in (False, True):  # the add from files (read_and_sign) and from records (the plan)
            batch = [recs[3], recs[3], recs[0]]
            with pytest.raises(DuplicateIdError) as got:
                ix.add(h.write_jsonl(tmp_path / "b.jsonl", batch) if many else batch)
            assert "appear twice in the batch" in str(got.value) and "already in the index" in str(got.value)
            assert set(got.value.ids) == {recs[3]["id"], recs[0]["id"]}
        with pytest.raises(RecordError, match="text is empty"):
            ix.add([recs[3], {"id": "e", "text": "   "}])
        with pytest.raises(RecordError, match="text must be a string"):
            ix.add([recs[3], {"id": "e", "text": 5}])
        assert ix.stats()["documents"] == 2
        ix.add(recs[2:])
        assert ix.stats()["documents"] == len(recs)


def test_remove_splits_and_re_decides_keeper(tmp_path, corpus):
    ref_all = neardup.dedup(corpus, None, prefer_source=["agency"])
    with Index.create(tmp_path / "ix", prefer_source=["agency"]) as ix:
        for day in h.days(corpus, 2):
            ix.add(day)
        # remove every bridge centre and one keeper: clusters must equal dedup over the rest
        gone = [d["id"] for d in corpus if d["id"].startswith("bX")]
        big = max(ref_all.clusters, key=lambda r: r["size"])
        gone.append(big["keeper"])
        assert ix.remove(gone) == len(gone)
        rest = [d for d in corpus if d["id"] not in set(gone)]
        ref = neardup.dedup(rest, None, prefer_source=["agency"])
        rows = list(ix.clusters())
        assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters)
        assert h.member_sims(rows) == h.member_sims(ref.clusters)
        with pytest.raises(DocumentNotFoundError):
            ix.get_document(gone[0])
        with pytest.raises(DocumentNotFoundError):
            ix.remove(["no-such-id"])
        # removed documents are never candidates again
        v = ix.query([d for d in corpus if d["id"] == gone[0]][0]["text"])[0]
        assert v.closest != gone[0]
        # compaction keeps the clusters and drops the tombstones
        before = ix.stats()
        ix.compact()
        after = ix.stats()
        assert after["tombstones"] == 0 and after["segments"] == 1 and after["documents"] == before["documents"]
        assert h.cluster_sets(ix.clusters()) == h.cluster_sets(ref.clusters)
        assert ix.check()["texts"] == len(rest)
        ix.add([{"id": "late", "text": rest[0]["text"]}])
        assert ix.get_document("late")["match"] in ("exact", "near")
    with Index.open(tmp_path / "ix") as ix:
        assert h.cluster_sets(ix.clusters()) == h.cluster_sets(
            neardup.dedup(rest + [{"id": "late", "text": rest[0]["text"]}], None, prefer_source=["agency"]).clusters
        )


@pytest.mark.parametrize("batches", [[["A", "B", "C"]], [["A"], ["B"], ["C"]], [["A", "C", "B"]]])
def test_removing_an_original_keeps_its_exact_copy_with_its_near_copies(tmp_path, batches):
    # C is A's exact copy (joined by the exact pass, verified against nothing), B a near copy of
    # A: with A removed, B and C fell apart in two clusters (in two orders of adding of three),
    # where neardup dedup over B and C finds them one story
    words = [f"w{i}" for i in range(120)]
    a = " ".join(words)
    docs = {"A": a, "B": " ".join(words[:60] + ["zz"] + words[61:]), "C": a.upper()}
    with Index.create(tmp_path / "ix") as ix:
        for batch in batches:
            ix.add([{"id": i, "text": docs[i]} for i in batch])
        ix.remove(["A"])
        ref = neardup.dedup(
            [{"id": i, "text": docs[i]} for i in sorted(docs, key=[x for b in batches for x in b].index) if i != "A"],
            None,
        )
        rows = list(ix.clusters())
        assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters) and len(rows) == 1
        assert h.member_sims(rows) == h.member_sims(ref.clusters)
        ix.remove(["C"])  # the pair C inherited went with it: B alone
        assert list(ix.clusters()) == [] and ix.check()["texts"] == 1


def test_random_adds_and_removes_with_exact_copies_give_dedups_clusters(tmp_path):
    # a random sequence of adds and removes over a corpus with exact and near copies, checked
    # against neardup dedup over what is left after every remove
    rng = np.random.default_rng(7)
    corpus = h.synth(originals=120, copies=90, bridges=6, words=80, seed=3)
    extra = [{"id": f"x{i}", "text": d["text"].upper()} for i, d in enumerate(corpus[::5])]  # more exact copies
    originals = {d["id"] for d in corpus[::5]}
    pool = corpus + extra
    order = [pool[i] for i in rng.permutation(len(pool))]
    with Index.create(tmp_path / "ix") as ix:
        added: list[dict] = []
        for batch in np.array_split(np.arange(len(order)), 6):
            docs = [order[i] for i in batch.tolist()]
            ix.add(docs)
            added += docs
            # some at random, and originals whose exact copies were added (their pairs must pass on)
            gone = {added[i]["id"] for i in rng.choice(len(added), size=len(added) // 10, replace=False).tolist()}
            gone |= {d["id"] for d in added if d["id"] in originals and rng.random() < 0.3}
            gone = sorted(gone)
            ix.remove(gone)
            added = [d for d in added if d["id"] not in set(gone)]
            ref = neardup.dedup(added, None)
            rows = list(ix.clusters())
            assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters)
            assert h.member_sims(rows) == h.member_sims(ref.clusters)
        assert ix.check()["texts"] == len(added)


def test_remove_older_than_and_scrub(tmp_path):
    recs = [
        {"id": "old", "text": "a story from long ago about the harbour bridge repairs " * 3, "published_at": 1000},
        {
            "id": "new",
            "text": "a fresh story about the metro line opening next week " * 3,
            "published_at": "2099-01-01T00:00:00Z",
        },
    ]
    with Index.create(tmp_path / "ix") as ix:
        ix.add(recs)
        assert ix.remove(older_than=1_000_000) == 1
        assert [r["id"] for r in [ix.get_document("new")]] == ["new"]
    data = b"".join((tmp_path / "ix" / f).read_bytes() for f in os.listdir(tmp_path / "ix") if f.startswith("texts-"))
    assert b"harbour" not in data and b"metro" in data


def test_an_interrupted_scrub_is_finished_by_the_next_writer(tmp_path, monkeypatch):
    # the overwriting runs after the remove's commit: a Ctrl-C or a kill there left removed texts
    # readable in the log for good (nothing listed them; the remove could not be run again)
    import sqlite3

    from neardup.index import removal

    recs = [{"id": f"r{i}", "text": f"story {i} about the harbour bridge repairs and the tides"} for i in range(6)]
    with Index.create(tmp_path / "ix") as ix:
        ix.add(recs)

    def killed(self, conn):
        if conn.execute("SELECT COUNT(*) FROM scrubs").fetchone()[0]:  # (not at the writer's open)
            raise KeyboardInterrupt  # after the remove's commit, before a byte is overwritten

    with monkeypatch.context() as m:
        m.setattr(removal.Removal, "_scrub", killed)
        with Index.open(tmp_path / "ix") as ix, pytest.raises(KeyboardInterrupt):
            ix.remove(["r1", "r4"])

    def log() -> bytes:
        return b"".join(
            (tmp_path / "ix" / f).read_bytes() for f in os.listdir(tmp_path / "ix") if f.startswith("texts-")
        )

    assert b"story 1 " in log()  # the removal is in, its texts not yet overwritten
    c = sqlite3.connect(str(tmp_path / "ix" / "index.sqlite"))
    assert c.execute("SELECT COUNT(*) FROM scrubs").fetchone()[0] == 2
    c.close()
    with Index.open(tmp_path / "ix") as ix:
        ix.add([{"id": "late", "text": "a later story"}])  # any write: the writer's open finishes it
        assert ix.stats()["documents"] == 5
    assert b"story 1 " not in log() and b"story 4 " not in log() and b"story 2 " in log()
    c = sqlite3.connect(str(tmp_path / "ix" / "index.sqlite"))
    assert c.execute("SELECT COUNT(*) FROM scrubs").fetchone()[0] == 0
    c.close()


def test_cli_round_trip(tmp_path, corpus, capsys):
    from neardup.cli import main

    d = str(tmp_path / "ix")
    assert main(["index", "init", d, "--prefer-source", "agency"]) == 0
    days = h.days(corpus, 2)
    f1 = h.write_jsonl(tmp_path / "d1.jsonl", days[0])
    f2 = h.write_jsonl(tmp_path / "d2.jsonl", days[1])
    assert main(["index", "add", d, f1]) == 0
    assert main(["index", "add", d, f2, "--verdicts", str(tmp_path / "v.jsonl"), "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(out)["added"] == len(days[1])
    assert len((tmp_path / "v.jsonl").read_text().splitlines()) == len(days[1])
    assert main(["index", "add", d, f2]) == 3  # ids already there: nothing added
    assert main(["index", "add", d, f1, "--k", "3"]) == 8  # settings differ
    assert main(["index", "export", d, "-o", str(tmp_path / "c.jsonl")]) == 0
    rows = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    ref = neardup.dedup(corpus, None, prefer_source=["agency"])
    assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters)
    assert main(["index", "export", d, "-o", str(tmp_path / "c.parquet")]) == 0
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "c.parquet").num_rows == len(rows)

    capsys.readouterr()
    assert main(["index", "query", d, "--text", corpus[0]["text"]]) == 0
    v = json.loads(capsys.readouterr().out)
    assert v["closest"] == corpus[0]["id"] and v["inserted"] is False
    assert main(["index", "stats", d]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == len(corpus)
    assert main(["index", "remove", d, "--ids", corpus[0]["id"]]) == 0
    assert main(["index", "remove", d, "--ids", "nope"]) == 9
    assert main(["index", "compact", d]) == 0
    assert main(["index", "check", d]) == 0
    assert main(["index", "stats", str(tmp_path / "none")]) == 9


def test_cli_query_inputs(tmp_path, corpus, capsys, monkeypatch):
    """query takes records (FILE), a text (--text, '-' for stdin) or plain-text files
    (--text-file, id = the file's name): exactly one of them; nothing is ever inserted."""
    import io

    from neardup.cli import main

    d = str(tmp_path / "ix")
    assert main(["index", "init", d]) == 0
    assert main(["index", "add", d, h.write_jsonl(tmp_path / "all.jsonl", corpus)]) == 0
    capsys.readouterr()
    art = tmp_path / "article.txt"
    art.write_text(corpus[0]["text"], encoding="utf-8")
    other = tmp_path / "other.txt"
    other.write_text("a text about something else entirely, the harbour at night", encoding="utf-8")
    assert main(["index", "query", d, "--text-file", str(art), "--text-file", str(other)]) == 0
    vs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [v["id"] for v in vs] == ["article.txt", "other.txt"]
    assert vs[0]["closest"] == corpus[0]["id"] and vs[0]["similarity"] == 1.0 and not vs[0]["inserted"]
    assert vs[1]["status"] == "new" and not vs[1]["inserted"]
    monkeypatch.setattr("sys.stdin", io.StringIO(corpus[0]["text"]))
    assert main(["index", "query", d, "--text", "-"]) == 0
    v = json.loads(capsys.readouterr().out)
    assert v["id"] == "query" and v["closest"] == corpus[0]["id"]
    # a plain-text file given as FILE is read as records: the error says so and how to check it
    assert main(["index", "query", d, str(art)]) == 3
    err = capsys.readouterr().err
    assert "malformed JSON" in err and "--text-file" in err and "nothing was added" not in err
    assert main(["index", "query", d]) == 2
    assert main(["index", "query", d, "--text", "x", "--text-file", str(art)]) == 2
    assert "give one of FILE(s), --text or --text-file" in capsys.readouterr().err
    assert main(["index", "query", d, "--text-file", str(tmp_path / "missing.txt")]) == 4
    (tmp_path / "bad.txt").write_bytes(b"ok \xff")
    assert main(["index", "query", d, "--text-file", str(tmp_path / "bad.txt")]) == 4
    assert "not valid UTF-8 (byte 0xff at offset 3)" in capsys.readouterr().err
    assert main(["index", "stats", d]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == len(corpus)
    # a query's ids name nothing: an index holding a document "query", or two text files of one
    # name, refused every query as an add ("1 id(s) already in the index: 'query'")
    assert main(["index", "add", d, h.write_jsonl(tmp_path / "q.jsonl", [{"id": "query", "text": "the query"}])]) == 0
    capsys.readouterr()
    assert main(["index", "query", d, "--text", corpus[1]["text"]]) == 0
    assert json.loads(capsys.readouterr().out)["closest"] == corpus[1]["id"]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "article.txt").write_text(corpus[2]["text"], encoding="utf-8")
    assert (
        main(["index", "query", d, "--text-file", str(art), "--text-file", str(tmp_path / "sub" / "article.txt")]) == 0
    )
    vs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [v["closest"] for v in vs] == [corpus[0]["id"], corpus[2]["id"]]


def test_cli_export_writes_parquet_in_blocks_and_refuses_other_names(tmp_path, corpus, capsys, monkeypatch):
    """Parquet is written a block of clusters at a time (the same rows as JSONL, the clusters
    never all in memory); a name that is neither .jsonl nor .parquet is refused, not written
    as JSONL under a misleading name."""
    import pyarrow.parquet as pq

    from neardup.cli import main
    from neardup.index.export import write_clusters_parquet

    d = str(tmp_path / "ix")
    assert main(["index", "init", d]) == 0
    empty = tmp_path / "empty.parquet"
    assert main(["index", "export", d, "-o", str(empty)]) == 0
    t = pq.read_table(empty)
    assert t.num_rows == 0 and t.column_names == ["cluster", "keeper", "size", "members"]
    assert main(["index", "add", d, h.write_jsonl(tmp_path / "all.jsonl", corpus)]) == 0
    assert main(["index", "export", d, "-o", str(tmp_path / "c.jsonl")]) == 0
    want = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert len(want) > 5
    assert main(["index", "export", d, "-o", str(tmp_path / "whole.PARQUET")]) == 0
    assert pq.ParquetFile(tmp_path / "whole.PARQUET").metadata.num_row_groups == 1
    with Index.open(d) as ix:  # the command's writer, two clusters per row group
        assert write_clusters_parquet(ix.clusters(), tmp_path / "c.PARQUET", block=2) == len(want)
    pf = pq.ParquetFile(tmp_path / "c.PARQUET")
    assert pf.metadata.num_row_groups == -(-len(want) // 2)
    got = pf.read().to_pylist()
    norm = lambda rows: [
        (
            r["cluster"],
            str(r["keeper"]),
            r["size"],  # noqa: E731
            [(str(m["id"]), m["similarity"], m["match"]) for m in r["members"]],
        )
        for r in rows
    ]
    assert norm(got) == norm(want)
    capsys.readouterr()
    assert main(["index", "export", d, "-o", str(tmp_path / "c.csv")]) == 2
    assert "name a .jsonl or .parquet file" in capsys.readouterr().err
    assert not (tmp_path / "c.csv").exists()


def test_cli_add_summary_counts_in_words(tmp_path, capsys):
    from neardup.cli import main

    d = str(tmp_path / "ix")
    assert main(["index", "init", d]) == 0
    one = h.write_jsonl(tmp_path / "one.jsonl", [{"id": "a", "text": "a single story about the harbour"}])
    capsys.readouterr()
    assert main(["index", "add", d, one]) == 0
    out = capsys.readouterr().out
    assert "added 1 document in" in out and "1 new story, 0 duplicates" in out
    assert "the index holds 1 document, 0 clusters of two or more" in out


def test_cli_init_says_what_was_made(tmp_path, capsys):
    from neardup.cli import main

    assert main(["index", "init", str(tmp_path / "m")]) == 0
    assert "num_perm=128" in capsys.readouterr().out
    assert main(["index", "init", str(tmp_path / "s"), "--method", "simhash", "--max-distance", "3"]) == 0
    out = capsys.readouterr().out
    assert "simhash k=5 max_distance=3 (4 blocks)" in out and "num_perm" not in out and "bands" not in out


def test_a_closed_index_refuses_to_be_used(tmp_path):
    # it took the writer lock again and kept it until the process ended (other writers: locked)
    from neardup.index import IndexClosedError

    Index.create(tmp_path / "ix").close()
    ix = Index.open(tmp_path / "ix")
    ix.close()
    for use in (
        lambda: ix.add([{"id": "a", "text": "heavy rain"}]),
        ix.stats,
        lambda: ix.remove(["a"]),
        lambda: ix.query("heavy rain"),
        lambda: ix.get_document("a"),
    ):
        with pytest.raises(IndexClosedError, match="the index was closed"):
            use()
    with Index.open(tmp_path / "ix") as again:  # the lock is free
        again.add([{"id": "a", "text": "heavy rain"}])


def _new_index_and_one_record(tmp_path) -> tuple[str, str]:
    """An index made by `neardup index init` and a JSONL file of one record for the CLI tests."""
    from neardup.cli import main

    d = str(tmp_path / "ix")
    assert main(["index", "init", d]) == 0
    return d, h.write_jsonl(tmp_path / "a.jsonl", [{"id": "a", "text": "heavy rain over the coast"}])


def test_cli_add_says_whether_an_interrupted_batch_went_in(tmp_path, capsys, monkeypatch):
    # "interrupted" alone, after the commit, left a user thinking nothing had been added
    from neardup.cli import main
    from neardup.index import core

    d, f = _new_index_and_one_record(tmp_path)

    def interrupt(*a, **k):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(core.Index, "totals", interrupt)  # after the add's commit
        assert main(["index", "add", d, f]) == 130
    assert "interrupted; the batch had been committed" in capsys.readouterr().err
    g = h.write_jsonl(tmp_path / "b.jsonl", [{"id": "b", "text": "another story"}])
    with monkeypatch.context() as m:
        m.setattr(core.Index, "add", interrupt)  # before it
        assert main(["index", "add", d, g]) == 130
    assert "interrupted; nothing was added" in capsys.readouterr().err
    with monkeypatch.context() as m:
        m.setattr(core.Index, "remove", interrupt)
        assert main(["index", "remove", d, "--ids", "a"]) == 130
    assert "interrupted; nothing was removed" in capsys.readouterr().err


def test_cli_add_verdicts_file_is_checked_before_the_add(tmp_path, capsys):
    # it was written after the commit: a bad name lost the verdicts of a batch that went in
    from neardup.cli import main

    d, f = _new_index_and_one_record(tmp_path)
    capsys.readouterr()
    assert main(["index", "add", d, f, "--verdicts", str(tmp_path / "no" / "v.jsonl")]) == 5
    assert main(["index", "add", d, f, "--verdicts", str(tmp_path)]) == 5
    assert "is a directory" in capsys.readouterr().err
    assert Index.open(d).totals()["documents"] == 0  # nothing was added
    assert main(["index", "add", d, f, "--verdicts", "-"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["id"] == "a" and "added 1 document" in err  # the summary out of the verdicts' way


def test_cli_says_os_and_disk_errors_without_a_traceback(tmp_path, capsys, monkeypatch):
    import sqlite3

    from neardup.cli import main
    from neardup.index import core

    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["index", "init", str(afile)]) == 5  # a file where the directory goes
    assert main(["index", "init", str(afile / "sub")]) == 5
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Not a directory" in err
    d = str(tmp_path / "ix")
    assert main(["index", "init", d]) == 0
    assert main(["index", "remove", d, "--ids-file", str(tmp_path)]) == 4
    assert "Is a directory" in capsys.readouterr().err
    f = h.write_jsonl(tmp_path / "a.jsonl", [{"id": "a", "text": "heavy rain over the coast"}])

    def full(*a, **k):
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as m:
        m.setattr(core.Index, "add", full)
        assert main(["index", "add", d, f]) == 5
    assert "cannot write: the disk is full" in capsys.readouterr().err
    # a damaged count in meta: the index is damaged (exit 7), the key named, and recount mends it
    import sqlite3 as sq

    c = sq.connect(str(tmp_path / "ix" / "index.sqlite"))
    c.execute("UPDATE meta SET value = 'abc' WHERE key = 'documents'")
    c.commit()
    c.close()
    assert main(["index", "stats", d]) == 7
    assert "the count 'documents' in meta is 'abc'" in capsys.readouterr().err
    assert main(["index", "check", d, "--recount"]) == 0
    assert main(["index", "stats", d]) == 0


def test_index_settings_are_checked_as_dedups(tmp_path):
    from neardup.errors import InvalidParameterError

    with Index.create(tmp_path / "a", prefer_source="agency,wire") as ix:  # as dedup reads it
        assert ix.config.settings.prefer_source == ("agency", "wire")  # was ('a', 'g', 'e', ...)
    Index.open(tmp_path / "a", prefer_source="agency,wire").close()
    for kw, what in [
        (dict(store_text="no"), "store_text"),
        (dict(prefer_source=[1]), "prefer_source"),
        (dict(k="5"), "k must be an integer"),
        (dict(colour="red"), "unknown index setting 'colour'"),
        (dict(method="simhash", bands=13, rows=7), "bands and rows apply to MinHash's LSH"),
    ]:  # (ignored)
        with pytest.raises(InvalidParameterError, match=what):
            Index.create(tmp_path / "b", **kw)
        assert not (tmp_path / "b").exists()


def test_cli_max_chars_and_ids_file_errors(tmp_path, capsys):
    from neardup.cli import main

    d, f = _new_index_and_one_record(tmp_path)
    capsys.readouterr()
    assert main(["index", "add", d, f, "--max-chars", "0"]) == 2  # was every record bad (exit 3)
    assert "max_chars must be an integer >= 1" in capsys.readouterr().err
    bad = tmp_path / "ids.txt"
    bad.write_bytes(b"a\n\xff\n")
    assert main(["index", "remove", d, "--ids-file", str(bad)]) == 4
    assert f"{bad}: not valid UTF-8 (byte 0xff at offset 2)" in capsys.readouterr().err
    assert main(["index", "remove", d, "--ids-file", str(tmp_path / "missing.txt")]) == 4
    assert "missing.txt: cannot read: No such file or directory" in capsys.readouterr().err


def test_compact_with_no_live_document_writes_no_segment(tmp_path):
    """Compacting an empty index (or one whose documents were all removed) wrote a segment of
    no documents; now there is none, as in a new index, and the index goes on as before."""
    t = "a story about the harbour bridge repairs and the tides that closed the road on monday"
    with Index.create(tmp_path / "ix") as ix:
        assert ix.compact()["segments"] == 0
        ix.add([{"id": "a", "text": t}, {"id": "b", "text": t + " again"}])
        ix.remove(["a", "b"])
        assert ix.compact()["segments"] == 0
        assert ix.stats()["segments"] == 0 and ix.stats()["documents"] == 0
        assert not [f for f in os.listdir(tmp_path / "ix") if f.startswith("seg-")]
        assert ix.check()["texts"] == 0
        v = ix.add([{"id": "c", "text": t}])[0]
        assert v.status == "new"
        assert ix.compact()["segments"] == 1
        assert ix.query(t + " again")[0].status == "duplicate"


def test_compact_gives_back_the_databases_free_pages(tmp_path):
    """Level 0's rows (small adds) and removed documents' rows leave free pages in index.sqlite,
    which SQLite reuses but never gives back: a compact moved level 0 into a segment file and
    the index grew on disk (seen on Reuters split into days: 24.5 -> 26.3 MB). It now VACUUMs
    when free pages are over 1/16 of the database."""
    import sqlite3

    d = tmp_path / "ix"
    docs = [
        {"id": f"d{i}", "text": f"story {i} " + " ".join(f"w{(i * 31 + j) % 9973}" for j in range(30))}
        for i in range(3000)
    ]
    with Index.create(d) as ix:
        for s in range(0, 3000, 300):  # small adds: level 0 in SQLite
            ix.add(docs[s : s + 300])
        ix.remove([f"d{i}" for i in range(0, 3000, 2)])
        db = d / "index.sqlite"
        r = ix.compact()
        assert r["vacuumed"] and r["database_free_pages"] > 0
        assert r["bytes_after"] < r["bytes_before"]
        c = sqlite3.connect(db)
        try:
            assert c.execute("PRAGMA freelist_count").fetchone()[0] == 0
            assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            c.close()
        assert ix.get_document("d7")["text"] == docs[7]["text"]
        assert ix.query(docs[9]["text"])[0].closest == "d9"
        again = ix.compact()  # nothing left to give back
        assert not again["vacuumed"]
    with Index.open(d) as ix:
        assert ix.check()["texts"] == 1500
