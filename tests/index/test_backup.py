"""``neardup index backup``: a consistent, checked copy of an index taken while it is in use
(index/backup.py). The copy equals the index at one commit; removed texts do not live on in
it; a change under the copy makes it start again; a damaged index is reported, not copied."""

import json
import os
import subprocess
import sys
import threading

import pytest

from neardup.cli import main
from neardup.errors import IndexExistsError, IndexNotFoundError
from neardup.index import BackupBusyError, Index, IndexCorruptError, copying
from neardup.index import backup as bk


def _export(d) -> list:
    with Index.open(d) as ix:
        return sorted((str(c["keeper"]), sorted(str(m["id"]) for m in c["members"])) for c in ix.clusters())


def _state(d) -> tuple:
    with Index.open(d) as ix:
        s = ix.stats()
        docs = {str(r[0]): r[1] for r in ix._conn().execute("SELECT id, cluster FROM documents")}
        return {k: s[k] for k in ("documents", "stories", "clusters", "duplicates", "segments", "generation")}, docs


def _leftovers(parent) -> list:
    return [n for n in os.listdir(parent) if ".backup-" in n]


def test_a_backup_is_the_index_and_opens_on_its_own(tmp_path, corpus, small_segments):
    d = tmp_path / "ix"
    with Index.create(d, **small_segments) as ix:
        for i in range(0, 500, 100):  # segments and level 0 both
            ix.add(corpus[i : i + 100])
        ix.add(corpus[500:540])
        ix.remove([corpus[3]["id"], corpus[120]["id"]])
    r = bk.backup(d, tmp_path / "copy")
    assert r["attempts"] == 1 and r["documents"] == 538
    assert _state(tmp_path / "copy") == _state(d)
    assert _export(tmp_path / "copy") == _export(d)
    with Index.open(d) as a, Index.open(tmp_path / "copy") as b:
        q = corpus[600:640]
        assert [v.as_dict() for v in a.query(q)] == [v.as_dict() for v in b.query(q)]
        assert b.get_document(corpus[7]["id"])["text"] == corpus[7]["text"]
        assert b.check()["texts"] == 538
    # the copy is an index of its own: it takes adds without touching the original
    with Index.open(tmp_path / "copy") as b:
        b.add(corpus[540:560])
    assert _state(d)[0]["documents"] == 538
    assert _leftovers(tmp_path) == []


def test_removed_texts_do_not_live_on_in_a_backup(tmp_path, corpus, monkeypatch):
    """A remove commits, then zeroes the text in the log (scrubs rows until it has): a backup
    taken in between zeroes it in the copy itself."""
    d = tmp_path / "ix"
    secret = "zqxsecretmarker " * 40
    with Index.create(d) as ix:
        ix.add(corpus[:50] + [{"id": "private", "text": secret}])
    # the remove's scrub fails after its commit: the text is still in the log, listed in scrubs
    real = Index._scrub

    def cut(self, conn):  # (a writer's open scrubs too: only the remove's, with rows, is cut)
        if conn.execute("SELECT COUNT(*) FROM scrubs").fetchone()[0]:
            raise OSError("scrub cut off (test)")
        return real(self, conn)

    monkeypatch.setattr(Index, "_scrub", cut)
    with Index.open(d) as ix:
        with pytest.raises(OSError, match="scrub cut off"):
            ix.remove(["private"])
        assert ix.stats()["documents"] == 50
    monkeypatch.undo()
    log = [n for n in os.listdir(d) if n.startswith("texts-")]
    assert any(b"zqxsecretmarker" in (d / n).read_bytes() for n in log)  # still in the original's log
    bk.backup(d, tmp_path / "copy")
    for n in os.listdir(tmp_path / "copy"):
        assert b"zqxsecretmarker" not in (tmp_path / "copy" / n).read_bytes(), n
    with Index.open(tmp_path / "copy") as b:
        assert b.stats()["documents"] == 50
        assert b._conn().execute("SELECT COUNT(*) FROM scrubs").fetchone()[0] == 0
        b.check()


def test_a_change_under_the_copy_starts_it_again(tmp_path, corpus, monkeypatch):
    """A remove committed and scrubbed between the snapshot and the copy of the log: the copy's
    check finds the zeroed text of a document its snapshot lists; the index has changed since,
    so the backup starts again and the second attempt holds the index as it is now."""
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:80])
    real = copying._copy
    fired = []

    def racing_copy(src, dst, length):
        if not fired and os.path.basename(src).startswith("texts-"):
            fired.append(1)
            with Index.open(d) as ix:
                ix.remove([corpus[5]["id"]])  # committed and zeroed in the log now
        return real(src, dst, length)

    monkeypatch.setattr(copying, "_copy", racing_copy)
    r = bk.backup(d, tmp_path / "copy")
    assert fired and r["attempts"] == 2 and r["documents"] == 79
    assert _state(tmp_path / "copy") == _state(d)
    assert _leftovers(tmp_path) == []


def test_an_index_changing_under_every_attempt_gives_up_cleanly(tmp_path, corpus, monkeypatch):
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:80])
    real = copying._copy
    left = iter(range(5, 80))

    def racing_copy(src, dst, length):
        if os.path.basename(src).startswith("texts-"):
            with Index.open(d) as ix:
                ix.remove([corpus[next(left)]["id"]])
        return real(src, dst, length)

    monkeypatch.setattr(copying, "_copy", racing_copy)
    with pytest.raises(BackupBusyError, match="changed under each of 3 backup attempts"):
        bk.backup(d, tmp_path / "copy", attempts=3)
    assert not os.path.exists(tmp_path / "copy") and _leftovers(tmp_path) == []


def test_a_damaged_index_is_reported_not_copied(tmp_path, corpus):
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:60])
    log = d / [n for n in os.listdir(d) if n.startswith("texts-")][0]
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0x01
    log.write_bytes(bytes(data))
    with pytest.raises(IndexCorruptError) as e:
        bk.backup(d, tmp_path / "copy")
    assert not isinstance(e.value, BackupBusyError)
    assert not os.path.exists(tmp_path / "copy") and _leftovers(tmp_path) == []


def test_a_backup_during_adds_holds_whole_batches(tmp_path, corpus):
    """Another process adds batches of 40 while backups are taken: every copy opens, passes the
    check, and holds the first k batches for some k, each whole (an add is all or nothing)."""
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:40])
    batches = [corpus[i : i + 40] for i in range(40, 560, 40)]
    files = []
    for i, b in enumerate(batches):
        p = tmp_path / f"b{i}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in b))
        files.append(str(p))
    # each file its own add (one `neardup index add` of several files is one batch)
    code = (
        "import json, sys\nfrom neardup.index import Index\n"
        "with Index.open(sys.argv[1]) as ix:\n"
        "    for f in sys.argv[2:]:\n"
        "        ix.add([json.loads(line) for line in open(f)])\n"
    )
    adder = subprocess.Popen(
        [sys.executable, "-c", code, str(d), *files], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    got = []
    try:
        k = 0
        while adder.poll() is None or k == 0:
            dest = tmp_path / f"copy{k}"
            got.append((dest, bk.backup(d, dest)))
            k += 1
    finally:
        _, err = adder.communicate(timeout=300)
    assert adder.returncode == 0, err.decode()
    ids_in_order = [r["id"] for r in corpus[:560]]
    for dest, r in got:
        _, docs = _state(dest)
        n = len(docs)
        assert n % 40 == 0 and set(docs) == set(ids_in_order[:n]), (dest, n)
        assert r["documents"] == n
    # (the copies were taken while it added: some hold a part of the batches)
    assert any(40 < r["documents"] < 560 for _, r in got), [r["documents"] for _, r in got]
    assert _leftovers(tmp_path) == []


def test_the_cli(tmp_path, corpus, capsys):
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:30])
    assert main(["index", "backup", str(d), str(tmp_path / "copy")]) == 0
    out = capsys.readouterr().out
    assert "backed up: 30 documents" in out and "checked" in out
    assert main(["index", "check", str(tmp_path / "copy")]) == 0
    capsys.readouterr()
    # DEST exists; DEST inside the index; no index; the parent missing
    assert main(["index", "backup", str(d), str(tmp_path / "copy")]) != 0
    assert "already exists" in capsys.readouterr().err
    assert main(["index", "backup", str(d), str(d / "inner")]) == 2
    assert "inside the index's own directory" in capsys.readouterr().err
    assert main(["index", "backup", str(tmp_path / "none"), str(tmp_path / "c2")]) != 0
    assert "no index here" in capsys.readouterr().err
    # missing parents are made; a trailing slash names the directory itself
    assert main(["index", "backup", str(d), str(tmp_path / "backups" / "day1") + "/"]) == 0
    assert sorted(os.listdir(tmp_path / "backups")) == ["day1"]
    assert main(["index", "backup", str(d), str(tmp_path / "ix" / "texts-000001.dat" / "c3")]) == 2
    capsys.readouterr()
    (tmp_path / "afile").write_text("x")
    assert main(["index", "backup", str(d), str(tmp_path / "afile" / "c3")]) == 5
    assert "cannot create the backup's parent directory" in capsys.readouterr().err
    with pytest.raises(IndexExistsError):
        bk.backup(d, tmp_path / "copy")
    with pytest.raises(IndexNotFoundError):
        bk.backup(tmp_path / "none", tmp_path / "c4")
    with Index.open(d) as ix:
        assert ix.backup(tmp_path / "c5")["documents"] == 30
    assert not any(os.path.exists(tmp_path / c) for c in ("c2", "c4"))


def test_a_backup_beside_a_reader_and_a_writer_thread(tmp_path, corpus):
    """In one process: a writer thread adding and removing while backups run in another."""
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:100])
    stop = threading.Event()
    errors = []

    def write():
        try:
            with Index.open(d) as ix:
                i = 100
                while not stop.is_set() and i < 500:  # 20 adds of 20 and 20 removes
                    ix.add(corpus[i : i + 20])
                    ix.remove([corpus[i]["id"]])
                    i += 20
        except Exception as exc:  # reported below
            errors.append(exc)

    t = threading.Thread(target=write)
    t.start()
    seen = set()
    try:
        k = 0
        while t.is_alive() or k < 4:
            r = bk.backup(d, tmp_path / f"copy{k}", attempts=20)
            with Index.open(tmp_path / f"copy{k}") as b:
                assert b.check()["texts"] == r["documents"]
            seen.add(r["documents"])
            k += 1
    finally:
        stop.set()
        t.join()
    assert errors == []
    assert len(seen) >= 2, seen  # (copies of different moments)


def test_a_full_disk_leaves_nothing_behind(tmp_path, corpus, monkeypatch, capsys):
    import errno

    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:30])
    real = copying._copy

    def full(src, dst, length):
        if os.path.basename(src).startswith("texts-"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, length)

    monkeypatch.setattr(copying, "_copy", full)
    assert main(["index", "backup", str(d), str(tmp_path / "copy")]) == 5
    assert "the disk is full" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "copy") and _leftovers(tmp_path) == []
    with Index.open(d) as ix:  # the index itself untouched
        assert ix.check()["texts"] == 30


def test_a_killed_backup_leaves_nothing_the_next_one_keeps(tmp_path, corpus):
    """SIGKILL in the middle: DEST does not exist (the copy is renamed into place only once
    checked); the hidden staging directory left behind is removed by the next backup to DEST."""
    import signal

    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:200])
    code = (
        "import sys, time\nfrom neardup.index import backup as bk, copying\nreal = copying._copy\n"
        "def slow(s, t, n):\n    r = real(s, t, n)\n    print('copied', flush=True)\n    time.sleep(60)\n    return r\n"
        "copying._copy = slow\nbk.backup(sys.argv[1], sys.argv[2])\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(d), str(tmp_path / "copy")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert p.stdout.readline().strip() == "copied"
        assert _leftovers(tmp_path)  # the staging directory, mid-copy
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(30)
        p.stdout.close()
    assert not os.path.exists(tmp_path / "copy") and _leftovers(tmp_path)
    r = bk.backup(d, tmp_path / "copy")  # (the killed process was reaped by wait(): gone)
    assert r["documents"] == 200 and _leftovers(tmp_path) == []


def test_a_listed_file_that_is_missing_is_damage(tmp_path, corpus, small_segments, capsys):
    d = tmp_path / "ix"
    with Index.create(d, **small_segments) as ix:
        ix.add(corpus[:200])
    seg = [n for n in os.listdir(d) if n.startswith("seg-")][0]
    os.unlink(d / seg)
    with pytest.raises(IndexCorruptError, match="listed by the index but missing"):
        bk.backup(d, tmp_path / "copy")
    assert main(["index", "backup", str(d), str(tmp_path / "copy")]) == 7
    assert "damaged" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "copy") and _leftovers(tmp_path) == []
