"""A publish time the index cannot read: the document is added (as neardup dedup keeps such a
record), its time counts as missing for the keeper rule, the value is kept with the document's
other fields (nothing of the record is lost), the add says so (Verdicts.unreadable_times, a
warning and a count from `neardup index add`)."""

import json

import ix_helpers as h
import pytest

from neardup.index import Index

RECS = [
    {
        "id": "a",
        "text": "heavy rain over the coast for three days, the weather office said",
        "published_at": "yesterday",
        "source": "agency",
    },
    {
        "id": "b",
        "text": "heavy rain over the coast for three days, the weather office said",
        "published_at": "2026-07-12T09:00:00Z",
    },
    {
        "id": "c",
        "text": "a story about something else entirely, the harbour at night",
        "published_at": "9999-12-31T23:59:59-05:00",
        "colour": "red",
    },
]


@pytest.mark.parametrize("how", ["records", "jsonl", "csv"])
def test_unreadable_time_is_kept_and_reported(tmp_path, how):
    if how == "records":
        inputs = RECS
    elif how == "jsonl":
        inputs = [h.write_jsonl(tmp_path / "in.jsonl", RECS)]
    else:
        import csv

        p = tmp_path / "in.csv"
        with open(p, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["id", "text", "published_at", "source", "colour"])
            w.writeheader()
            w.writerows(RECS)
        inputs = [str(p)]
    with Index.create(tmp_path / "ix") as ix:
        vs = ix.add(inputs)
        bad = vs.unreadable_times
        assert [i for i, _ in bad] == ["a", "c"]
        assert "cannot parse 'yesterday'" in bad[0][1] and "out of the range of times" in bad[1][1]
        a = ix.get_document("a")
        assert a["published_at"] is None and a["fields"]["published_at"] == "yesterday"
        c = ix.get_document("c")
        assert c["fields"]["published_at"] == "9999-12-31T23:59:59-05:00" and c["fields"]["colour"] == "red"
        # the readable time wins the keeper rule over the missing one (the agency is not preferred)
        assert ix.get_document("a")["keeper"] == "b"
        assert "published_at" not in ix.get_document("b")["fields"]  # (a readable time is not duplicated)


def test_cli_add_warns_of_unreadable_times(tmp_path, capsys):
    from neardup.cli import main

    d = str(tmp_path / "ix")
    assert main(["index", "init", d]) == 0
    f = h.write_jsonl(tmp_path / "in.jsonl", RECS)
    capsys.readouterr()
    assert main(["index", "add", d, f, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["unreadable_times"] == 2
    assert "warning: 2 times could not be read" in err and "'a': cannot parse 'yesterday'" in err


@pytest.mark.parametrize("value", [1e13, -1e300, 2**70, 253402300800])
def test_a_number_past_the_years_of_dates_is_unreadable(tmp_path, value):
    # the JSONL reader's own check of numeric times (index/intake.py) agrees with parse_time
    recs = [{"id": "n", "text": "a story about something else entirely, the harbour at night", "published_at": value}]
    with Index.create(tmp_path / "ix") as ix:
        vs = ix.add([h.write_jsonl(tmp_path / "in.jsonl", recs)])
        assert [i for i, _ in vs.unreadable_times] == ["n"] and "out of the range of times" in vs.unreadable_times[0][1]
        assert ix.get_document("n")["published_at"] is None
