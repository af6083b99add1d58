"""The embedded demo corpus: the guide's rain story, as six news sites ran it.

``neardup dedup`` with no input (or ``neardup demo``) runs the pipeline on these records, so a
fresh install can be tried with no data at hand. The agency story, its "Sunday evening" copy,
its "Also read" copy and a copy with other spacing and capitals are one story; the city's
drains story and the separately written parliament story are not copies of anything.
"""

from __future__ import annotations

__all__ = ["RECORDS", "records"]

_BASE = (
    "heavy rain is likely over coastal karnataka and goa for the next three days "
    "the weather office said on sunday and fishermen have been advised not to "
    "venture into the sea until thursday as wind speeds may touch 55 kmph "
    "schools in two districts will stay shut on monday officials said"
)

RECORDS: list[dict] = [
    {
        "id": "agency-001",
        "source": "agency",
        "published_at": "2026-07-12T06:00:00+05:30",
        "title": "Heavy rain likely in coastal Karnataka",
        "text": _BASE,
    },
    {
        "id": "site-a-417",
        "source": "site-a",
        "published_at": "2026-07-12T06:40:00+05:30",
        "title": "Rain alert for coastal Karnataka, Goa",
        "text": _BASE.replace("sunday", "sunday evening"),
    },
    {
        "id": "site-b-092",
        "source": "site-b",
        "published_at": "2026-07-12T07:05:00+05:30",
        "title": "Heavy rain likely in coastal Karnataka",
        "text": _BASE + " also read the full forecast on our weather page",
    },
    {
        "id": "site-c-310",
        "source": "site-c",
        "published_at": "2026-07-12T07:30:00+05:30",
        "title": "Drive to clear drains before monsoon",
        "text": (
            "the city corporation has started a drive to clear blocked drains "
            "before the monsoon and residents can report problems on the helpline "
            "officials said the work will finish by the end of the month"
        ),
    },
    {
        "id": "site-d-775",
        "source": "site-d",
        "published_at": "2026-07-12T08:15:00+05:30",
        "title": "HEAVY RAIN LIKELY IN COASTAL KARNATAKA",
        "text": "  Heavy Rain is likely over Coastal Karnataka and Goa for the next three days.\n"
        "The Weather Office said on Sunday, and fishermen have been advised not to venture "
        "into the sea until Thursday -- as wind speeds may touch 55 kmph.  Schools in two "
        "districts will stay shut on Monday, officials said.",
    },
    {
        "id": "site-e-058",
        "source": "site-e",
        "published_at": "2026-07-12T09:00:00+05:30",
        "title": "Parliament session",
        "text": "the monsoon session of parliament begins on monday with a debate on the data bill "
        "and opposition parties have asked for more time to study the draft",
    },
]


def records() -> list[dict]:
    """A fresh copy of the demo records."""
    return [dict(r) for r in RECORDS]
