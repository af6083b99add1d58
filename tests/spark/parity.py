"""The engine-parity check shared by the Spark tests: same clusters, keepers, member
similarities, kept ids and report counts as the local engine."""

import pytest


def canon_clusters(clusters):
    """Clusters as comparable rows: ids as strings, similarities rounded."""
    return [
        (
            c["cluster"],
            str(c["keeper"]),
            c["size"],
            [(str(m["id"]), round(m["similarity"], 6), m["match"]) for m in c["members"]],
        )
        for c in clusters
    ]


def assert_same(local, sp):
    assert canon_clusters(sp.clusters) == canon_clusters(local.clusters)
    assert [str(k) for k in sp.kept] == [str(k) for k in local.kept]
    lr, sr = local.report, sp.report
    for key in (
        "documents",
        "skipped",
        "exact_groups",
        "exact_copies_removed",
        "signatures",
        "clusters",
        "copies_removed",
        "near_copies_removed",
        "kept",
        "no_token_documents",
        "method",
    ):
        assert sr[key] == lr[key], key
    if lr["lsh"] is None:  # SimHash: no bands; each candidate pair is counted once, as locally
        assert sr["lsh"] is None
        assert sr["candidates"] == lr["candidates"]
    else:
        assert sr["lsh"]["bands"] == lr["lsh"]["bands"] and sr["lsh"]["rows"] == lr["lsh"]["rows"]
    # Spark emits the spanning edges of the verified pairs: a subset with the same components
    local_pairs = {(str(p["a"]), str(p["b"])): p["similarity"] for p in local.pairs}
    for p in sp.pairs:
        assert local_pairs[(str(p["a"]), str(p["b"]))] == pytest.approx(p["similarity"], abs=1e-6)
    assert len({(p["a"], p["b"]) for p in sp.pairs}) == len(sp.pairs) <= len(local.pairs)
    assert sr["skipped_records"] == lr["skipped_records"]
