"""A remove advances this process's in-memory state (more tombstones) instead of reloading
level 0 from SQLite; the answers are those of the same index read again from disk."""

import random

from neardup.index import Index, store


def _verdicts(vs):
    return [v.as_dict() for v in vs]


def _grow_and_remove(d, docs, victims):
    """Small adds (their postings stay in level 0), then removes one by one and together."""
    ix = Index.create(d, prefer_source=["agency"])
    for s in range(0, 200, 10):
        ix.add(docs[s : s + 10])
    for v in victims[:6]:
        assert ix.remove([v]) == 1
    assert ix.remove(victims[6:]) == len(victims) - 6
    return ix


def test_remove_keeps_level0_in_memory_and_answers_as_from_disk(tmp_path, corpus, monkeypatch):
    rng = random.Random(3)
    docs = list(corpus[:300])
    probes = [x["text"] for x in rng.sample(docs, 30)]
    victims = [x["id"] for x in rng.sample(docs[:200], 12)]
    loads = []
    real = store.L0.load

    def counting(*a, **k):
        loads.append(1)
        return real(*a, **k)

    # this process's state, advanced by the removes
    ix = _grow_and_remove(tmp_path / "mem", docs, victims)
    ix.query(probes[:1])  # the state is current
    monkeypatch.setattr(store.L0, "load", staticmethod(counting))
    ix.remove([docs[0]["id"]] if docs[0]["id"] not in victims else [docs[1]["id"]])
    gone = victims + [docs[0]["id"] if docs[0]["id"] not in victims else docs[1]["id"]]
    mem_q = _verdicts(ix.query(probes))
    mem_add = _verdicts(ix.add(docs[200:260]))
    assert not loads, "level 0 was read again from SQLite after a remove"
    assert len(ix._state.l0.docs) == 200 - len(gone) + 60
    ix.close()
    monkeypatch.setattr(store.L0, "load", staticmethod(real))

    # the same steps, with the index read again from disk after the removes
    ref = _grow_and_remove(tmp_path / "disk", docs, victims)
    ref.remove([gone[-1]])
    ref.close()
    with Index.open(tmp_path / "disk") as again:
        assert _verdicts(again.query(probes)) == mem_q
        assert _verdicts(again.add(docs[200:260])) == mem_add
        again.check()
    assert not set(gone) & {m for v in mem_add for m in [v["closest"], *v["alternates"]]}
