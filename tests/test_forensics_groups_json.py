"""groups --format jsonl: timelines printed by the native printer from the deletion columns and
the record events (:mod:`codegen.forensics.groups_json`, ``codegen/native/timeline_arrays.h``)
against the events' JSON (the reference)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pytest
from test_forensics_groups import REAL, classic, commit, key, member, write

from codegen.dumps.json_text import jsontext_module
from codegen.dumps.views.commit_rows import DELETION_SCHEMA
from codegen.forensics.group_timelines import GroupEvent, Timelines
from codegen.forensics.groups import GroupReport, group_reports
from codegen.forensics.groups_json import group_lines, timeline_texts
from codegen.forensics.output import json_bytes
from codegen.runtime import backends

NATIVE = jsontext_module() is not None and backends.requested() != backends.PURE
native_only = pytest.mark.skipif(
    not NATIVE, reason="the native printer is not built or not asked for"
)

GROUPS = ["g", "", 'q"uote', "é-ünïcode", "g\\b"]
TOPICS = [
    "t",
    't"q',
    "back\\slash",
    "tab\tnew\nline",
    "日本",
    "\x01ctl",
    "\x7f\u2028😀",
    "\x1f\x00",
]
DETAILS: list[dict[str, object]] = [
    {},
    {"member": "m-1"},
    {"generation": 7, "previous": None},
    {"assigned": {"x": 1}},
    {"member": 'q"\\\n\x02é😀', "flag": True, "off": False, "n": -(2**63)},
    {"assigned": {"t-id": {"partitions": [0, 3], "assignmentEpochs": None}}, "e": [[], [1, [2]]]},
]


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


def test_rows_are_made_events_once() -> None:
    """Events added as rows are the records' events, made once; groups and created read the
    rows and the events alike."""
    t = Timelines(1, [GroupEvent(1, 0, 5, "a", "created", {"type": "classic"})])
    t.rows.append((3, 6, "b", "created", {"type": "consumer"}))
    t.rows.append((4, 7, "a", "member-joined", {"member": "m"}))
    assert t.groups() == {"a", "b"} and t.created() == {"a", "b"}
    rows = t.event_rows()
    assert rows[0] == (0, 5, "a", "created", {"type": "classic"}) and rows[1:] == t.rows
    records = t.records
    assert [(e.partition, e.offset, e.group) for e in records] == [
        (1, 0, "a"),
        (1, 3, "b"),
        (1, 4, "a"),
    ]
    assert not t.rows and t.records is records and t.records[1] is records[1]
    assert t.event_rows() == rows
    t.rows.append((9, 9, "c", "created", {}))
    assert t.records[:3] == records[:3] and t.records[3].group == "c"


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
            rng.choice(DETAILS),
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
    made = rng.randrange(len(records) + 1)  # the rest as rows, as a replay adds them
    t = Timelines(3, records[:made])
    t.rows.extend((e.offset, e.timestamp, e.group, e.kind, e.detail) for e in records[made:])
    t.add_deleted(deletions(rows, rng.randrange(1, 4)))
    return t


@native_only
def test_timeline_texts_are_the_events_json() -> None:
    rng = random.Random(45)
    for _ in range(300):
        t = random_timelines(rng)
        texts = timeline_texts(t)
        assert texts is not None
        assert set(texts) == t.groups()
        for group in t.groups():
            assert texts[group] == reference(t, group), group


@native_only
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
    """No deletions, a null among them, an event orjson refuses or the printer leaves to it:
    no text (the events')."""
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
    odd: list[object] = [2**70, "lone \ud800", 1.5, {1: "int key"}, (1, 2)]
    for value in odd:
        t = Timelines(0, [GroupEvent(0, 1, 1, "g", "member-joined", {"v": value})])
        t.add_deleted(deletions([("g", "t", 0, 2, 3)], 1))
        assert timeline_texts(t) is None, value
        report = GroupReport("g", 0, None, "Dead", None, None, None, None, [], None, 0, t)
        if isinstance(value, str):  # the reference cannot write a lone surrogate either
            with pytest.raises(UnicodeEncodeError):
                list(group_lines([report]))
            continue
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


@native_only
def test_many_deletions_in_one_group_and_long_texts() -> None:
    """Thousands of deletions in one group, offsets out of order (the sort's merges), topics and
    details long enough to grow the buffers, and groups of no event at all."""
    rng = random.Random(7)
    rows = [
        ("big", rng.choice([*TOPICS, "t" * 70_000]), rng.randrange(100), rng.randrange(3000), i)
        for i in range(5000)
    ]
    records = [
        GroupEvent(0, rng.randrange(3000), i, "big", "member-joined", {"member": "m" * n})
        for i, n in enumerate([0, 1, 200_000, 5, 70_000] * 40)
    ]
    t = Timelines(0, records)
    t.add_deleted(deletions(rows, 3))
    texts = timeline_texts(t)
    assert texts is not None
    assert texts == {"big": reference(t, "big")}
    printer = jsontext_module()
    assert printer is not None
    names = ["big", "none", "other"]
    empty = np.zeros(0, np.int64)
    ordered = sorted(records[:5], key=lambda e: e.offset)
    out = printer.timeline_arrays(
        names,
        {"big": 0, "none": 1, "other": 2},
        np.zeros(0, np.int32),
        empty,
        empty,
        np.zeros(0, np.int32),
        np.zeros(1, np.int32),
        b"",
        [(e.offset, e.timestamp, e.group, e.kind, e.detail) for e in ordered],
    )  # no deletions
    assert names == ["big", "none", "other"]
    assert out == [reference(Timelines(0, ordered), "big"), b"[]", b"[]"]


@native_only
def test_timeline_arrays_checks_its_arguments() -> None:
    printer = jsontext_module()
    assert printer is not None
    n32, n64 = np.zeros(2, np.int32), np.zeros(2, np.int64)
    topics = np.array([0, 1, 2], np.int32)
    good = (["g"], {"g": 0}, n32, n64, n64, n32, topics, b"ab", [])
    assert printer.timeline_arrays(*good) == [
        b'[{"offset":0,"timestamp":0,"kind":"offset-deleted","detail":{"topic":"a","partition":0}},'
        b'{"offset":0,"timestamp":0,"kind":"offset-deleted","detail":{"topic":"b","partition":0}}]'
    ]
    with pytest.raises(TypeError, match="timeline_arrays"):
        printer.timeline_arrays(*good[:8])
    with pytest.raises(TypeError, match="timeline_arrays"):
        printer.timeline_arrays(("g",), *good[1:])
    with pytest.raises(TypeError, match="timeline_arrays"):
        printer.timeline_arrays(*good[:8], ())
    bad: list[tuple[int, object]] = [
        (2, np.array([0, 1], np.int32)),  # a code past the names
        (2, np.array([-1, 0], np.int32)),
        (2, n64),  # not int32
        (3, n64[:1]),  # a column's length
        (5, n64),
        (6, np.array([0, 2, 1], np.int32)),  # falling
        (6, np.array([0, 1, 3], np.int32)),  # past the data
        (6, np.array([-1, 1, 2], np.int32)),
    ]
    for at, value in bad:
        args = list(good)
        args[at] = value
        with pytest.raises(ValueError, match="timeline_arrays"):
            printer.timeline_arrays(*args)
    event = (1, 1, "g", "created", {})
    with pytest.raises(ValueError, match="code out of range"):
        printer.timeline_arrays(["g"], {"g": 5}, *good[2:8], [event])
    names = ["g"]
    codes = {"g": 0}
    fresh = (1, 1, "new", "created", {})
    assert printer.timeline_arrays(names, codes, *good[2:8], [fresh, event])[1] == (
        b'[{"offset":1,"timestamp":1,"kind":"created","detail":{}}]'
    )
    assert names == ["g", "new"]
    assert codes == {"g": 0, "new": 1}
    deep: dict[str, object] = {}
    for _ in range(20):
        deep = {"d": deep}
    assert (
        printer.timeline_arrays(["g"], {"g": 0}, *good[2:8], [GroupEvent(0, 1, 1, "g", "x", deep)])
        is None
    )
