"""The engine-neutral kernels on their own (no Spark): each one against the local engine's
definition, driven by a tiny in-process "engine" that hash-partitions Arrow tables."""

import numpy as np
import pyarrow as pa
import pytest

import neardup
from neardup import kernels as K
from neardup.settings import Settings

PARAMS = K.KernelParams(settings=Settings(k=3, bands=13, rows=7))


def partition(table: pa.Table, cols, n=3):
    """What repartition(n, cols) does: every row with the same values in `cols` in one part."""
    if table.num_rows == 0:
        return [table]
    h = np.zeros(table.num_rows, dtype=np.uint64)
    for c in cols:
        v = table.column(c).to_numpy().astype(np.int64).view(np.uint64)
        with np.errstate(over="ignore"):
            h = h * np.uint64(1000003) + v * np.uint64(0x9E3779B97F4A7C15)
    part = (h >> np.uint64(7)) % np.uint64(n)
    return [table.filter(pa.array(part == p)) for p in range(n)]


def run_grouped(table, cols, kernel, n=3):
    outs = [kernel(t) for t in partition(table, cols, n)]
    return pa.concat_tables([o for o in outs if o.num_rows] or outs[:1])


def components_by_stars(edges: np.ndarray, n_parts=3, max_rounds=50):
    e = pa.table(
        {
            "u": pa.array(np.maximum(edges[:, 0], edges[:, 1]), pa.int64()),
            "v": pa.array(np.minimum(edges[:, 0], edges[:, 1]), pa.int64()),
        }
    )
    prev = K.edge_checksum(e).to_pylist()[0]
    for rounds in range(1, max_rounds + 1):
        both = pa.concat_tables([e, pa.table({"u": e.column("v"), "v": e.column("u")})])
        ls = run_grouped(both, ["u"], K.large_star, n_parts)
        ss = run_grouped(ls, ["u"], K.small_star, n_parts)
        arr = (
            np.unique(np.stack([ss.column("u").to_numpy(), ss.column("v").to_numpy()], axis=1), axis=0)
            if ss.num_rows
            else np.zeros((0, 2), np.int64)
        )
        e = pa.table({"u": pa.array(arr[:, 0], pa.int64()), "v": pa.array(arr[:, 1], pa.int64())})
        # per-partition checksums, summed
        cur = [K.edge_checksum(p).to_pylist()[0] for p in partition(e, ["u"], n_parts)]
        cur = {"n": sum(c["n"] for c in cur), "checksum": sum(c["checksum"] for c in cur) & (2**64 - 1)}
        prev_n = {"n": prev["n"], "checksum": prev["checksum"] & (2**64 - 1)}
        if cur == prev_n:
            return dict(zip(e.column("u").to_pylist(), e.column("v").to_pylist())), rounds
        prev = cur
    raise AssertionError("no convergence")


@pytest.mark.parametrize("seed", range(6))
def test_large_small_star_equals_union_find(seed):
    rng = np.random.default_rng(seed)
    n = 300
    m = int(rng.integers(50, 400))
    edges = rng.integers(0, n, size=(m, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    # a long path too: the worst case for label propagation
    path = np.stack([np.arange(1000, 1200), np.arange(1001, 1201)], axis=1)
    edges = np.concatenate([edges, rng.permutation(path)])
    star, rounds = components_by_stars(edges)
    lab = neardup.connected_components(1201, edges.astype(np.uint32))
    nodes = np.unique(edges)
    for v in nodes.tolist():
        assert star.get(v, v) == lab[v], v  # a root is its own label, and has no edge out
    assert rounds <= 20


def test_exact_groups_earliest_representative():
    t = pa.table(
        {
            "pos": pa.array([5, 3, 9, 4, 7], pa.int64()),
            "xkey": pa.array([1, 1, 2, 0, 0], pa.int64()),
            "ntok": pa.array([3, 3, 4, 0, 0], pa.int64()),
        }
    )
    out = dict(zip(*[K.exact_groups(t).column(c).to_pylist() for c in ("pos", "rep")]))
    assert out == {5: 3, 3: 3, 9: 9, 4: 4, 7: 7}  # texts without tokens stay on their own


def test_exact_keys_match_local_engine():
    texts = ["Heavy  rain, TODAY.", "heavy rain today", "...", "other words here"]
    t = K.exact_keys(pa.table({"pos": pa.array([1, 2, 3, 4], pa.int64()), "text": texts}))
    x = t.column("xkey").to_pylist()
    assert x[0] == x[1] != x[3] and x[2] == 0


def test_band_rows_and_buckets_give_the_local_candidates():
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(500)]
    base = [" ".join(rng.choice(words, 60)) for _ in range(40)]
    texts = base + [b.replace(b.split()[3], "zzz", 1) for b in base[:10]]
    pos = np.arange(len(texts), dtype=np.int64) * 7 + 1
    rows = K.band_rows(pa.table({"pos": pa.array(pos), "text": texts}), PARAMS)
    assert rows.num_rows == len(texts) * PARAMS.bands
    buckets = run_grouped(rows, ["band", "key"], K.bucket_members)
    got = set()
    for mem in buckets.column("members").to_pylist():
        got |= {(a, b) for i, a in enumerate(mem) for b in mem[i + 1 :]}
    sigs = PARAMS.minhash().signatures(texts)
    local = neardup.lsh.candidate_pairs(neardup.lsh.band_keys(sigs, PARAMS.bands, PARAMS.rows))
    assert got == {(int(pos[a]), int(pos[b])) for a, b in local.tolist()}


def test_verify_buckets_spanning_edges_only():
    # one story copied 6 times, exact copies of each other: a bucket of 6 costs 5 checks
    story = "heavy rain is likely over coastal karnataka and goa for the next three days the weather office said"
    t = pa.table(
        {
            "bid": pa.array([9] * 6 + [4, 4], pa.int64()),
            "pos": pa.array([6, 5, 4, 3, 2, 1, 10, 11], pa.int64()),
            "text": [story] * 6 + [story, "a completely different text about drains and the monsoon"],
        }
    )
    out = K.verify_buckets(t, PARAMS)
    edges = sorted(zip(out.column("a").to_pylist(), out.column("b").to_pylist()))
    assert len([e for e in edges if e[0] <= 6]) == 5
    assert (10, 11) not in edges
    lab = neardup.connected_components(12, np.array(edges, dtype=np.uint32))
    assert len({int(lab[p]) for p in range(1, 7)}) == 1


def test_verify_buckets_failed_check_does_not_stop_the_rest():
    # A~B and B~C pass, A~C fails: C must still join through B
    words = [f"w{i}" for i in range(200)]
    a = " ".join(words[:100])
    b = " ".join(words[5:105])
    c = " ".join(words[10:110])
    p = K.KernelParams(settings=Settings(k=1, threshold=0.85))
    t = pa.table({"bid": pa.array([1, 1, 1], pa.int64()), "pos": pa.array([1, 2, 3], pa.int64()), "text": [a, b, c]})
    out = K.verify_buckets(t, p)
    assert sorted(zip(out.column("a").to_pylist(), out.column("b").to_pylist())) == [(1, 2), (2, 3)]


def test_keeper_rows_follow_the_local_rule():
    t = pa.table(
        {
            "label": pa.array([1, 1, 1, 8, 8], pa.int64()),
            "pos": pa.array([1, 2, 3, 8, 9], pa.int64()),
            "id": ["c", "b", "a", "y", "x"],
            "time": pa.array([5.0, 5.0, float("nan"), 1.0, 1.0]),
            "source": ["site", "agency", "agency", None, None],
            "xkey": pa.array([3, 3, 4, 0, 0], pa.int64()),
            "rep": pa.array([1, 1, 3, 8, 9], pa.int64()),
        }
    )
    out = K.keeper_rows(t, ("agency",)).to_pylist()
    by = {r["id"]: r for r in out}
    assert by["b"]["rank"] == 0 and by["c"]["keeper_id"] == "b" and by["a"]["rank"] == 2
    assert by["c"]["exact"] and not by["a"]["exact"]
    assert by["x"]["rank"] == 0 and not by["y"]["exact"]  # no tokens: never an exact match


def test_check_jsonl_is_the_local_record_check():
    from neardup.io.records import Fields, Limits

    lines = ['{"id": "a", "text": "hello world"}', "", "{bad json", '{"id": "b"}', '{"id": 7, "text": "x"}']
    t = pa.table({"src": pa.array([0] * 5, pa.int32()), "recno": pa.array([1, 2, 3, 4, 5], pa.int64()), "value": lines})
    out = K.check_jsonl(t, fields=Fields(), limits=Limits(), names=["in.jsonl"]).to_pylist()
    assert [r["pos"] for r in out] == [1, 3, 4, 5]  # the blank line is not a record
    assert out[0]["error"] is None and out[0]["id"] == "a"
    assert "malformed JSON" in out[1]["error"] and '"line": 3' in out[1]["error"]
    assert "missing text" in out[2]["error"]
    assert out[3]["id"] == "7" and out[3]["id_int"]


def test_kept_line_is_the_record_untouched_plus_alternates():
    assert K.kept_jsonl_line('{"id": "a", "x": 1}\n', ["b", "c"]) == '{"id": "a", "x": 1,"alternates":["b","c"]}'


def test_doc_keys_are_the_exact_keys_and_band_keys_of_each_good_text():
    from neardup.io.records import Fields, Limits

    lines = [
        '{"id": "a", "text": "the cat sat on the mat today"}',
        "{bad json",
        '{"id": "b", "text": "  "}',
        '{"id": "c", "text": "The  cat sat on the mat TODAY"}',
        b'{"id": "d", "text": "caf\xe9"}',
    ]
    t = pa.table(
        {
            "src": pa.array([0] * 5, pa.int32()),
            "recno": pa.array([1, 2, 3, 4, 5], pa.int64()),
            "value": pa.array([x if isinstance(x, bytes) else x.encode() for x in lines], pa.binary()),
        }
    )
    checked = K.check_jsonl(t, fields=Fields(), limits=Limits(), names=["in.jsonl"])
    out = K.doc_keys(checked, PARAMS)
    assert "text" not in out.column_names and out.num_rows == 5
    rows = out.to_pylist()
    assert "not valid UTF-8" in rows[4]["error"]  # bytes in: the local engine's message
    assert rows[1]["bkeys"] is None and rows[1]["xkey"] == 0  # a bad record
    assert rows[2]["ntok"] == 0 and rows[2]["bkeys"] is None  # no tokens: no band keys
    assert rows[0]["xkey"] == rows[3]["xkey"] != 0  # the same text after normalising
    ek = K.exact_keys(checked.select(["pos", "text"]).slice(0, 1))
    assert rows[0]["xkey"] == ek.column("xkey")[0].as_py()
    br = K.band_rows(checked.select(["pos", "text"]).slice(0, 1), PARAMS)
    assert rows[0]["bkeys"] == br.column("key").to_pylist()


def test_doc_keys_one_pass_gives_what_the_separate_kernels_give():
    # with MinHash, doc_keys signs and keys each text in one pass (Signer.keyed); a text with
    # no tokens gets key 0 and no band keys, as from the exact_keys kernel
    from neardup.io.records import Fields, Limits

    texts = ["the cat sat on the mat today", "!! ?? --", "The  cat sat on the mat TODAY", "a dog ran", "rain, rain"]
    lines = [('{"id": "%d", "text": "%s"}' % (i, t)).encode() for i, t in enumerate(texts)]
    t = pa.table(
        {
            "src": pa.array([0] * 5, pa.int32()),
            "recno": pa.array(range(1, 6), pa.int64()),
            "value": pa.array(lines, pa.binary()),
        }
    )
    checked = K.check_jsonl(t, fields=Fields(), limits=Limits(), names=["in.jsonl"])
    rows = K.doc_keys(checked, PARAMS).to_pylist()
    ek = K.exact_keys(checked.select(["pos", "text"])).to_pylist()
    assert [(r["xkey"], r["ntok"]) for r in rows] == [(e["xkey"], e["ntok"]) for e in ek]
    assert rows[1]["ntok"] == 0 and rows[1]["xkey"] == 0 and rows[1]["bkeys"] is None
    for i in (0, 2, 3, 4):
        br = K.band_rows(checked.select(["pos", "text"]).slice(i, 1), PARAMS)
        assert rows[i]["bkeys"] == br.column("key").to_pylist()


def test_kernel_defaults_are_the_dedup_defaults():
    # a kernel called with default parameters signs as `neardup dedup` does (scheme included)
    from neardup.stages.options import DedupOptions

    d, p = DedupOptions(), K.KernelParams()
    assert p.settings == d.settings == Settings()
    assert (p.bands, p.rows) == Settings().band_shape() == (13, 7)
