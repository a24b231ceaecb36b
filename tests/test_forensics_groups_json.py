"""groups --format jsonl: timelines written from the deletion columns
(:mod:`codegen.forensics.groups_json`) against the events' JSON (the reference)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from test_forensics_groups import REAL, classic, commit, key, member, write

from codegen.dumps.views.offsets import DELETION_SCHEMA
from codegen.forensics.group_timelines import GroupEvent, Timelines
from codegen.forensics.groups import GroupReport, group_reports
from codegen.forensics.groups_json import group_lines, timeline_texts
from codegen.forensics.output import json_bytes

GROUPS = ["g", "", 'q"uote', "é-ünïcode", "g\\b"]
TOPICS = ["t", 't"q', "back\\slash", "tab\tnew\nline", "日本", "\x01ctl"]


def reference(t: Timelines, group: str) -> bytes:
    return orjson.dumps([e.to_json() for e in t.of(group)], option=orjson.OPT_NON_STR_KEYS)


def deletions(rows: list[tuple[str, str, int, int, int]], chunks: int) -> pa.Table:
    """Rows of DELETION_SCHEMA (group, topic, partition, recordOffset, timestamp) in
    ``chunks`` chunks."""
    cut = [len(rows) * i // chunks for i in range(chunks + 1)]
    parts = [
        pa.Table.from_pylist(
            [dict(zip(DELETION_SCHEMA.names, r, strict=True)) for r in rows[a:b]],
            DELETION_SCHEMA,
        )
        for a, b in itertools.pairwise(cut)
    ]
    return pa.concat_tables(parts)


def random_timelines(rng: random.Random) -> Timelines:
    """Record events in the order applied (offsets not ascending: transactional records take
    effect at their marker), deletions in the order they took effect, offsets that tie."""
    records = [
        GroupEvent(
            3,
            rng.randrange(40),
            rng.choice([-1, 1_700_000_000_000 + rng.randrange(10**6)]),
            rng.choice(GROUPS),
            rng.choice(["created", "rebalance", "member-joined", "offset-deleted"]),
            rng.choice(
                [{}, {"member": "m-1"}, {"generation": 7, "previous": None}, {"assigned": {"x": 1}}]
            ),
        )
        for _ in range(rng.randrange(12))
    ]
    rows = [
        (
            rng.choice(GROUPS),
            rng.choice(TOPICS),
            rng.randrange(-1, 2**31 - 1) if rng.random() < 0.1 else rng.randrange(50),
            rng.randrange(40),
            rng.choice([-1, 0, 2**63 - 1, 1_700_000_000_000 + rng.randrange(10**6)]),
        )
        for _ in range(rng.randrange(1, 30))
    ]
    t = Timelines(3, records)
    t.add_deleted(deletions(rows, rng.randrange(1, 4)))
    return t


def test_timeline_texts_are_the_events_json() -> None:
    rng = random.Random(45)
    for _ in range(300):
        t = random_timelines(rng)
        texts = timeline_texts(t)
        assert texts is not None
        assert set(texts) == t.groups()
        for group in t.groups():
            assert texts[group] == reference(t, group), group


def test_ties_keep_the_records_events_first_and_each_lot_in_order() -> None:
    records = [
        GroupEvent(0, 5, 1, "g", "member-left", {"member": "b"}),
        GroupEvent(0, 2, 1, "g", "created", {"type": "classic"}),
        GroupEvent(0, 5, 1, "g", "member-joined", {"member": "a"}),
    ]
    t = Timelines(0, records)
    t.add_deleted(deletions([("g", "z", 1, 5, 9), ("g", "a", 0, 2, 9), ("g", "y", 0, 5, 9)], 2))
    texts = timeline_texts(t)
    assert texts is not None
    assert [(e["offset"], e["kind"], e["detail"]) for e in orjson.loads(texts["g"])] == [
        (2, "created", {"type": "classic"}),
        (2, "offset-deleted", {"topic": "a", "partition": 0}),
        (5, "member-left", {"member": "b"}),
        (5, "member-joined", {"member": "a"}),
        (5, "offset-deleted", {"topic": "z", "partition": 1}),
        (5, "offset-deleted", {"topic": "y", "partition": 0}),
    ]
    assert texts["g"] == reference(t, "g")


def test_left_to_the_reference() -> None:
    """No deletions, a null among them, an event orjson refuses: no text (the events')."""
    t = Timelines(0, [GroupEvent(0, 1, 1, "g", "created", {})])
    assert timeline_texts(t) is None
    nulls = pa.table(
        {
            "group": ["g"],
            "topic": pa.array([None], pa.string()),
            "partition": pa.array([0], pa.int32()),
            "recordOffset": [3],
            "timestamp": [4],
        },
        schema=DELETION_SCHEMA,
    )
    t.add_deleted(nulls)
    assert timeline_texts(t) is None
    t = Timelines(0, [GroupEvent(0, 1, 1, "g", "member-joined", {"generation": 2**70})])
    t.add_deleted(deletions([("g", "t", 0, 2, 3)], 1))
    assert timeline_texts(t) is None
    report = GroupReport("g", 0, None, "Dead", None, None, None, None, [], None, 0, t)
    assert list(group_lines([report])) == [json_bytes(report.to_json())]


@pytest.mark.parametrize("backend", ["auto", "pure"])
def test_lines_are_the_reports_json(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line per report as ``json_bytes(to_json())``: on a dump whose groups' offsets are
    deleted (in the group's own batch and in others), and on real data (none deleted)."""
    monkeypatch.setenv("SPECGEN_BACKEND", backend)
    folder = write(
        tmp_path,
        [classic("g", 1, "range", member("a")), commit("g", 0, 10), commit("h", 1, 5)],
        [commit("g", 1, 11), commit("g", 0, None), classic("h", 1, "range", member("b"))],
        [classic("g", 2, None), commit("h", 1, None), commit("g", 1, None), commit("o", 0, 1)],
        [commit("o", 0, None), (key("GroupMetadataKey", group="g"), None), commit("o", 2, 3)],
    )
    for source in (folder, REAL):
        reports = group_reports(source)
        lines = list(group_lines(reports))
        assert lines == [json_bytes(r.to_json()) for r in reports]
    deleted = {
        r.group: [e.offset for e in r.events if e.kind == "offset-deleted"]
        for r in group_reports(folder)
    }
    assert deleted == {"g": [4, 8], "h": [7], "o": [10]}
