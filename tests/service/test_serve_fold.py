"""The service folds level 0 in the background (index/fold.py): with a tiny level 0, many folds
happen while concurrent POSTs and DELETEs are served, and the clusters come out as an in-process
add of the same articles gives them."""

import math
import threading

import httpx
import ix_corpus
from srv_helpers import Server

from neardup.index import Index


def test_served_posts_with_background_folds_equal_an_in_process_add(index_dir, tmp_path):
    docs = [
        {"id": d["id"], "text": d["text"], "published_at": d["published_at"], "source": d["source"]}
        for d in ix_corpus.synth(originals=360, copies=140, bridges=8, words=120, seed=9)
    ]
    ref = Index.create(tmp_path / "ref", prefer_source=["agency"])  # never folds
    ref.add(docs)
    # removed while being served: stories of one article, whose removal changes no other cluster
    # in any order (removing a cluster's member before or after its copies arrive can differ)
    clustered = {m for c in ix_corpus.cluster_sets(ref.clusters()) for m in c}
    gone = [d["id"] for d in docs[5:450] if d["id"] not in clustered][::25]
    assert len(gone) >= 10
    ref.remove(gone)
    srv = Server(index_dir, "--l0-max", "40", "--l0-fold-at", "15")
    try:

        def post(part):
            with httpx.Client(base_url=srv.url, timeout=60) as c:
                for d in part:
                    r = c.post("/v1/documents", json=d)
                    assert r.status_code == 200, r.text
                    if d["id"] in gone:
                        r = c.delete(f"/v1/documents/{d['id']}")
                        assert r.status_code == 200 and r.json()["removed"] == 1, r.text

        threads = [threading.Thread(target=post, args=(docs[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            st = c.get("/v1/stats").json()
        assert st["documents"] == len(docs) - len(gone)
        # one article a request: only background folds (level 0 of 15+) or the backstop (80)
        # moved documents out of level 0 (~30 folds); merged as they go, so segments stay
        # within the size-tiered bound 1 + log2(N / 15) (index/fold.py)
        assert st["segment_postings_docs"] >= st["documents"] - st["level0_documents"] > 400, st
        assert 1 <= st["segments"] <= 1 + math.log2(st["segment_postings_docs"] / 15), st
    finally:
        srv.proc.terminate()
        err = srv.proc.stderr.read().decode()
        srv.stop()
    assert "fold" not in err, err  # a failed background fold reports itself on stderr
    with Index.open(index_dir) as ix:
        ix.check()
        level0 = ix._conn().execute("SELECT COUNT(*) FROM level0").fetchone()[0]
        assert level0 <= 80
        got = list(ix.clusters())
        probes = [d["text"] for d in docs[::37]]
        answers = [v.as_dict() for v in ix.query(probes)]
    with ref:
        assert ix_corpus.cluster_sets(got) == ix_corpus.cluster_sets(ref.clusters())
        assert ix_corpus.member_sims(got) == ix_corpus.member_sims(ref.clusters())
        ref_answers = [v.as_dict() for v in ref.query(probes)]
    # cluster numbers and the alternates' order follow the order the articles came in
    strip = lambda vs: [dict(a, cluster=None, alternates=sorted(a["alternates"])) for a in vs]
    assert strip(answers) == strip(ref_answers)


def test_create_app_on_a_directory_folds_in_the_background(index_dir):
    from fastapi.testclient import TestClient

    from neardup.service.app import create_app

    app = create_app(str(index_dir))
    with TestClient(app) as c:
        assert app.state.index.background_fold
        assert c.post("/v1/documents", json={"id": "a", "text": "one two three four five six"}).status_code == 200
