"""lag: offsets over time, lag against the data topic's log end, Burrow-like status, report."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import mmap
import random
import shutil
import struct
import subprocess
import weakref
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

from codegen.dumps import SegmentWriter
from codegen.dumps.batch_rows import batch_rows
from codegen.dumps.model import ControlType
from codegen.dumps.views.log_ends import (
    best_log_end,
    candidate_rows,
    checkpoint_rows,
    log_end_steps,
    segments_at,
)
from codegen.dumps.writer import encode_record_batch
from codegen.forensics import lag as lag_module
from codegen.forensics.burrow import burrow_status, window_judgements, worst_of_runs
from codegen.forensics.burrow import group_status as burrow_group_status
from codegen.forensics.commits import Commit, CommitColumns, KeyedCommits
from codegen.forensics.groups import AsOf, group_reports
from codegen.forensics.inputs import LogEnd, LogEnds, discover, replica_rows
from codegen.forensics.lag import GroupLag, PartitionLag, lag_reports
from codegen.forensics.lag_command import lag_command
from codegen.forensics.lag_json import commits_json
from codegen.slotted import SlottedBase
from generated.offset_commit_key import OffsetCommitKey
from generated.offset_commit_value import OffsetCommitValue
from spark_udfs.synth import write_consumer_offsets

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "forensics" / "aibulb"
T0 = 1_700_000_000_000
S = 1000

_Record = TypeVar("_Record", bound=SlottedBase)


def _replace(record: _Record, **changes: Any) -> _Record:
    """A copy of ``record`` with ``changes`` (``dataclasses.replace`` for a slotted class)."""
    return type(record)(**{**{n: getattr(record, n) for n in record._fields}, **changes})


def commit_record(group: str, topic: str, partition: int, offset: int | None, at: int) -> Any:
    key = struct.pack(">h", 1) + OffsetCommitKey(
        group=group, topic=topic, partition=partition
    ).encode(0)
    if offset is None:
        return (key, None)
    value = OffsetCommitValue(offset=offset, commit_timestamp=at)
    return (key, struct.pack(">h", 3) + value.encode(3))


# (group, data partition, [(seconds, committed offset)])
SCENARIOS = [
    ("g-ok", 0, [(70, 80), (80, 90), (90, 100)]),  # lag 0 in the window
    ("g-warn", 1, [(70, 50), (80, 55), (90, 60)]),  # offset moves, lag grows
    ("g-stall", 2, [(70, 40), (80, 40), (90, 40)]),  # offset stuck, lag grows
    ("g-stop", 3, [(10, 15), (20, 25), (30, 35)]),  # no commit for 70 s > 20 s window
    ("g-mixed", 0, [(70, 80), (80, 90), (90, 100)]),
    ("g-mixed", 1, [(70, 50), (80, 55), (90, 60)]),
]


def write_lag_scenarios(root: Path) -> Path:
    """The SCENARIOS under ``root``, returned: data topic t-0..t-3 (a 10-record batch every 10 s
    from 0 to 100 s, end 10 * (k + 1)) and their commits in ``__consumer_offsets-0``."""
    for partition in range(4):
        folder = root / f"t-{partition}"
        folder.mkdir()
        with SegmentWriter(folder / "00000000000000000000.log") as w:
            for k in range(11):
                w.write_batch([(None, b"x")] * 10, timestamp=T0 + k * 10 * S)
    offsets = root / "__consumer_offsets-0"
    offsets.mkdir()
    events = [
        (seconds, commit_record(g, "t", p, off, T0 + seconds * S))
        for g, p, commits in SCENARIOS
        for seconds, off in commits
    ]
    with SegmentWriter(offsets / "00000000000000000000.log") as w:
        for seconds, rec in sorted(events, key=lambda e: e[0]):
            w.write_batch([rec], timestamp=T0 + seconds * S)
        # no data segments for topic "gone"; an offset deleted; an aborted commit
        w.write_batch([commit_record("g-other", "gone", 0, 5, T0)], timestamp=T0 + 95 * S)
        w.write_batch([commit_record("g-other", "gone", 1, 5, T0)], timestamp=T0 + 95 * S)
        w.write_batch([commit_record("g-other", "gone", 1, None, T0)], timestamp=T0 + 96 * S)
        w.write_batch(
            [commit_record("g-other", "gone", 0, 999, T0 + 97 * S)],
            timestamp=T0 + 97 * S,
            producer_id=3,
            producer_epoch=0,
            transactional=True,
        )
        w.write_control(ControlType.ABORT, producer_id=3, producer_epoch=0)
    return root


@pytest.fixture
def log_folder(tmp_path: Path) -> Path:
    return write_lag_scenarios(tmp_path)


def statuses(reports: list[Any]) -> dict[tuple[str, int], str | None]:
    return {(p.group, p.partition): p.status for g in reports for p in g.partitions}


def test_status_per_partition_and_group(log_folder: Path) -> None:
    reports = lag_reports(log_folder, window=3)
    assert statuses(reports) == {
        ("g-ok", 0): "OK",
        ("g-warn", 1): "WARN",
        ("g-stall", 2): "STALL",
        ("g-stop", 3): "STOP",
        ("g-mixed", 0): "OK",
        ("g-mixed", 1): "WARN",
        ("g-other", 0): None,
        ("g-other", 1): None,
    }
    by_group = {g.group: g.status for g in reports}
    assert by_group == {
        "g-ok": "OK",
        "g-warn": "WARN",
        "g-stall": "ERR",
        "g-stop": "ERR",
        "g-mixed": "WARN",
        "g-other": None,
    }
    assert reports[0].now == T0 + 100 * S  # the newest data batch


def test_history_and_lag_over_time(log_folder: Path) -> None:
    (warn,) = [g for g in lag_reports(log_folder, group="g-warn")]
    (p,) = warn.partitions
    assert [(c.commit_timestamp, c.offset, c.log_end_offset, c.lag) for c in p.commits] == [
        (T0 + 70 * S, 50, 80, 30),
        (T0 + 80 * S, 55, 90, 35),
        (T0 + 90 * S, 60, 100, 40),
    ]
    assert (p.log_end_offset, p.lag) == (110, 50)  # at now (100 s)
    (other,) = lag_reports(log_folder, group="g-other")
    deleted = {p.partition: p for p in other.partitions}
    assert [c.offset for c in deleted[0].commits] == [5]  # the aborted 999 never took effect
    assert deleted[1].live is False and len(deleted[1].deleted_at) == 1
    assert deleted[0].lag is None and "no log end offsets" in deleted[0].reason
    # the newest commit, read alone, is the last of them all (log end known or not)
    for part in [p, *deleted.values()]:
        assert part.history.newest() == part.history.commits()[-1]


def test_group_with_only_offsets_is_an_empty_classic_group(log_folder: Path) -> None:
    reports = {r.group: r for r in group_reports(log_folder)}
    assert set(reports) == {"g-ok", "g-warn", "g-stall", "g-stop", "g-mixed", "g-other"}
    assert (reports["g-ok"].type, reports["g-ok"].state, reports["g-ok"].events) == (
        "classic",
        "Empty",
        [],
    )
    other = reports["g-other"]
    assert (other.type, other.state, other.committed_offsets) == ("classic", "Empty", 1)
    assert [e.kind for e in other.events] == ["offset-deleted"]


def test_as_of_time_is_the_status_now(log_folder: Path) -> None:
    # At 35 s, g-stop's last commit (30 s) is recent: no longer STOP.
    (stop,) = lag_reports(log_folder, group="g-stop", as_of=AsOf(timestamp_ms=T0 + 35 * S))
    assert stop.now == T0 + 35 * S
    assert stop.partitions[0].status == "WARN"  # lags 5, 5, 5: the offset moves, lag does not


def c(at: int, offset: int, lag: int | None) -> Commit:
    return Commit(0, at, offset, -1, None if lag is None else offset + lag, lag)


@pytest.mark.parametrize(
    ("window", "now", "end_now", "expected"),
    [
        ([c(0, 1, 3), c(10, 2, 0), c(20, 3, 4)], 100, 10, "OK"),  # rule 1: a zero lag, even late
        ([c(0, 1, 3), c(10, 2, 3), c(20, 3, 4)], 100, 10, "STOP"),  # rule 2
        ([c(0, 1, 3), c(10, 2, 3), c(20, 3, 4)], 100, 3, "OK"),  # rule 2's exception
        ([c(0, 5, 3), c(10, 5, 3), c(20, 5, 4)], 25, 10, "STALL"),  # rule 3
        ([c(0, 5, 4), c(10, 5, 3), c(20, 5, 3)], 25, 10, "OK"),  # stuck but lag shrank
        ([c(0, 1, 3), c(10, 2, 3), c(20, 3, 4)], 25, 10, "WARN"),  # rule 4
        ([c(0, 1, 5), c(10, 2, 3), c(20, 3, 4)], 25, 10, "OK"),  # rule 5
        ([c(0, 1, None)], 25, None, None),
        ([c(0, 1, 3)], 10_000, 10, "OK"),  # one commit: incomplete, not STOP
        ([c(0, 5, 3), c(10, 2, 6), c(20, 3, 5)], 25, 10, "REWIND"),  # offset went back
        ([c(0, 5, 3), c(10, 2, 6), c(20, 3, 5)], 100, 10, "STOP"),  # STOP comes first
    ],
)
def test_burrow_rules(window: list[Commit], now: int, end_now: int | None, expected: str) -> None:
    assert burrow_status(window, now, end_now)[0] == expected


def test_windows_judged_together_as_one_by_one() -> None:
    # Every rule's window, and empty ones between, in one call: nothing leaks across windows.
    cases = [
        ([c(0, 1, 3), c(10, 2, 0), c(20, 3, 4)], 10),
        ([], None),
        ([c(0, 5, 3), c(10, 2, 6), c(20, 3, 5)], 10),
        ([c(30, 1, 3), c(40, 2, 3), c(50, 3, 4)], 3),
        ([c(0, 5, 3), c(10, 5, 3), c(20, 5, 4)], 10),
        ([c(0, 9, 1)], 10),
        ([c(0, 1, 3), c(10, 2, 3), c(20, 3, 4)], 10),
        ([c(0, 1, None), c(10, 2, 3)], 10),
        ([c(0, 1, 5), c(10, 2, 3), c(20, 3, 4)], 10),
        ([c(12, 8, 3), c(14, 2, 6), c(16, 3, 5), c(18, 1, 4)], 10),
        ([], None),
    ]
    judged = {}
    # the windows one after another, and with older commits between them (not judged)
    for older in ([], [c(99, 0, 0), c(1, 9, None)]):
        commits: list[Commit] = []
        starts = []
        for window, _ in cases:
            commits += older
            starts.append(len(commits))
            commits += window
        first = np.array(starts, np.int64)
        stops = first + [len(window) for window, _ in cases]
        for now in (20, 25, 100):
            statuses, reasons, _ = window_judgements(
                np.array([x.commit_timestamp for x in commits], np.int64),
                np.array([x.offset for x in commits], np.int64),
                np.array([x.lag or 0 for x in commits], np.int64),
                np.array([x.lag is not None for x in commits], np.bool_),
                first,
                stops,
                now,
                [end for _, end in cases],
            )
            together = judged[now] = list(zip(statuses, reasons, strict=True))
            alone = [burrow_status(window, now, end) for window, end in cases]
            assert together == alone
    assert judged[20][9] == ("REWIND", "the committed offset went back from 3 to 1")
    assert judged[100][9] == ("STOP", "no commit for 82 ms, longer than the window spans (6 ms)")
    assert judged[25][2] == ("REWIND", "the committed offset went back from 5 to 2")
    none = np.zeros(0, np.int64)
    nothing = window_judgements(none, none, none, none.astype(np.bool_), none, none, 5, [])
    assert nothing[:2] == ([], [])


def test_window_times_at_the_int64_ends_are_exact() -> None:
    # differences of times past int64: the idle time and the span as integers, not wrapped
    low, high = -(1 << 63), (1 << 63) - 1
    late = [c(low, 1, 3), c(low + 10, 2, 3)]
    assert burrow_status(late, high, 10) == (
        "STOP",
        f"no commit for {high - low - 10} ms, longer than the window spans (10 ms)",
    )
    wide = [c(low, 1, 3), c(high, 2, 4)]  # a span of 2^64 - 1 ms: not idle longer
    assert burrow_status(wide, high, 10)[0] == "WARN"
    assert burrow_status(wide, (1 << 70), 10)[0] == "STOP"  # a now past int64 too


@pytest.mark.parametrize("folder", ["scenarios", "aibulb", "ldi-poc"])
def test_commit_arrays_are_the_commits_json(folder: str, log_folder: Path) -> None:
    """The commits' JSON arrays written from the columns are what the objects encode to, with
    their log ends known, partly known or not: in the columns' order, in any other (gathered
    first), and for partitions of several reports together."""
    import orjson

    path = log_folder if folder == "scenarios" else REAL.parent / folder
    partitions = [p for g in lag_reports(path) for p in g.partitions]
    assert partitions
    expected = [orjson.dumps([c.to_json() for c in p.commits]) for p in partitions]
    assert commits_json(partitions) == expected
    backwards = partitions[::-1]
    assert commits_json(backwards) == expected[::-1]
    if folder == "scenarios":
        assert any(b"null" in e for e in expected) and any(b'"lag":0' in e for e in expected)


@pytest.mark.parametrize("folder", ["scenarios", "aibulb", "ldi-poc"])
def test_lag_lines_are_the_groups_json(folder: str, log_folder: Path) -> None:
    """Each jsonl line the command writes (:func:`write_group_lines`) is what orjson writes of
    the group's JSON: share partitions, groups without committed offsets and unknown log ends
    included, in the groups' order."""
    import orjson

    from codegen.forensics.lag_json import write_group_lines

    path = log_folder if folder == "scenarios" else REAL.parent / folder
    reports = lag_reports(path)
    assert reports
    alone = GroupLag("g", None, [], 5, reports[0].share_partitions)
    for groups in (reports, [alone], [alone, *reports, alone, *reports[::-1], alone], []):
        written = io.BytesIO()
        assert write_group_lines(groups, written.write) == len(groups)
        assert written.getvalue() == b"".join(orjson.dumps(g.to_json()) + b"\n" for g in groups)


def _native_lines(groups: list[GroupLag]) -> tuple[list[bytes], list[GroupLag]]:
    """The lines lag_write (lag_lines.h) writes of ``groups`` (no newlines, no share
    partitions) and the groups it gave to the reference."""
    from codegen.forensics import lag_json

    printer = lag_json.native_printer()
    if printer is None:
        pytest.skip("the native printer is not built")
    text = bytearray()
    refused: list[GroupLag] = []

    def reference(group: GroupLag) -> bytes:
        refused.append(group)
        return lag_json._reference_line(group)

    columns, masks, bounds = lag_json._commit_rows([p for g in groups for p in g.partitions])
    shares = [None] * len(groups)
    written = printer.lag_write(
        text.extend, reference, groups, shares, lag_json._COMMIT_PREFIXES, columns, masks, bounds
    )
    assert written == len(groups)
    return bytes(text).split(b"\n")[:-1], refused


def test_lag_lines_of_odd_values_are_orjson_s(log_folder: Path) -> None:
    """Lines the native printer writes (lag_lines.h) are orjson's of the group's JSON for any
    string (quotes, backslashes, control characters, non-ASCII), null keys and integers at the
    64-bit edges; a value it does not print (a lone surrogate, an integer past 64 bits) leaves
    that group's line to the reference (what it raises raised), the others' still its own;
    share partitions' text is put in as given."""

    import orjson

    from codegen.forensics import lag_json

    reports = lag_reports(log_folder)
    assert len(reports) >= 2 and all(g.partitions for g in reports)
    odd = [
        'q"uo\\te\n\t\x00\x1f\x7f',
        "ünï ✓ 𝄞",
        None,
        "",
        # a byte to escape (or not) at each place of the printer's eight-byte words, and
        # plain texts of every length around them
        *("x" * k + c + "y" * (17 - k) for c in '"\\\x00\x1f\n\x7f é' for k in range(18)),
        *("z" * n for n in range(1, 25)),
    ]
    groups = []
    for i, text in enumerate(odd):
        g = reports[i % len(reports)]
        parts = [
            _replace(
                p,
                group=text if text is not None else p.group,
                topic=text,
                log_end_source=text,
                reason=text or "",
                status=text,
                deleted_at=[-(2**63), 2**63 - 1, 0],
                log_end_offset=None if i % 2 else 2**63 - 1,
            )
            for p in g.partitions
        ]
        groups.append(GroupLag(text or "g", text, parts, -(2**63), g.share_partitions))
    refused = [
        GroupLag("big", None, [_replace(reports[1].partitions[0], lag=2**64)], 5),
    ]
    every = [*groups, *refused, *reports]
    written = io.BytesIO()
    assert lag_json.write_group_lines(every, written.write) == len(every)
    lines = written.getvalue().split(b"\n")
    assert lines.pop() == b"" and len(lines) == len(every)
    assert lines[: len(groups)] == [orjson.dumps(g.to_json()) for g in groups]
    assert lines[len(groups) + len(refused) :] == [orjson.dumps(g.to_json()) for g in reports]
    from codegen.forensics.output import json_line

    assert lines[len(groups) : len(groups) + len(refused)] == [
        json_line(g.to_json()).encode() for g in refused
    ]
    if lag_json.native_printer() is None:
        return
    natively, given = _native_lines(every)
    assert natively == lines and given == refused
    lone = [_replace(reports[0], group="lone \ud800")]
    with pytest.raises(UnicodeEncodeError):  # the reference fails too
        _native_lines(lone)
    printer = lag_json.native_printer()
    shares = [None] * len(every)
    columns, masks, bounds = lag_json._commit_rows([p for g in every for p in g.partitions])
    prefixes = lag_json._COMMIT_PREFIXES

    def not_bytes(group: GroupLag) -> str:
        return "a line"

    for reference, error in ((not_bytes, TypeError), (lambda g: 1 / 0, ZeroDivisionError)):
        with pytest.raises(error):
            printer.lag_write(len, reference, every, shares, prefixes, columns, masks, bounds)
    with pytest.raises(ValueError):
        printer.lag_write(len, not_bytes, every, shares, prefixes, columns, masks, bounds[1:])
    with pytest.raises(TypeError):
        printer.lag_write(len, not_bytes, every, shares[1:], prefixes, columns, masks, bounds)


def test_lag_write_keeps_what_a_callback_drops(log_folder: Path) -> None:
    """lag_write reads the groups, shares and partitions' lists as they were given when a
    callback (the reference, as here, or the output's write) runs Python that clears them and
    drops the only other references to the groups and partitions: each line is still the
    group's as given."""
    import orjson

    from codegen.forensics import lag_json

    printer = lag_json.native_printer()
    if printer is None:
        pytest.skip("the native printer is not built")
    reports = lag_reports(log_folder)
    assert len(reports) >= 2 and all(g.partitions for g in reports)
    refused = GroupLag("big", None, [_replace(reports[1].partitions[0], lag=2**64)], 5)
    groups = [*reports, refused, *reports[::-1]]
    want = [orjson.dumps(g.to_json()) for g in groups[: len(reports)]]
    want += [lag_json._reference_line(refused).rstrip(b"\n")]
    want += [orjson.dumps(g.to_json()) for g in groups[len(reports) + 1 :]]
    shares = [None] * len(groups)
    columns, masks, bounds = lag_json._commit_rows([p for g in groups for p in g.partitions])
    del reports, refused

    def clearing(group: GroupLag) -> bytes:
        line = lag_json._reference_line(group)
        for g in groups:
            g.partitions.clear()
        groups.clear()
        shares.clear()
        return line

    text = bytearray()
    written = printer.lag_write(
        text.extend, clearing, groups, shares, lag_json._COMMIT_PREFIXES, columns, masks, bounds
    )
    assert written == len(want) and not groups
    assert bytes(text).split(b"\n")[:-1] == want


def test_lag_lines_keep_repeated_texts_apart(log_folder: Path) -> None:
    """The texts lag_write keeps (a partition's group, topic, log end source and status, by
    hash; its reason, the last one by identity) are printed again only for an equal string:
    equal strings made apart, strings of one hash slot, texts too long to keep, escapes; a
    str subclass leaves its group to the reference; partitions of another type are read by
    name, one without a member raises."""

    import orjson

    reports = lag_reports(log_folder)
    base = reports[0].partitions[0]
    # ASCII strings in one of the 64 slots (the low bits of their hash), made apart
    same_slot = [s for s in (f"t-{i}" for i in range(5_000)) if hash(s) % 64 == 0][:3]
    texts = [
        *same_slot,
        "".join(["t-", "0"]),  # equal to an earlier one, another object
        "x" * 119,  # its text 121 bytes: not kept
        'q"' * 30,  # kept with its escapes (92 bytes)
        "e\\n" * 10,
        "".join(["x" * 119]),
        *same_slot[::-1],
    ]
    # reasons: one str in a row, an equal one made apart, the first again after it, one too
    # long to keep (its text 302 bytes), with escapes, twice each
    shared, long = "no commits in the window", "r" * 300
    reasons = [shared, shared, "".join(["no commits", " in the window"]), shared, long, long]
    reasons += ['a "why"\n' * 3] * 2 + [shared] * 2
    parts = [
        _replace(
            base,
            group="".join(["g", str(i % 2)]),
            topic=t,
            log_end_source=t,
            status=t,
            reason=reasons[i % len(reasons)],
        )
        for i, t in enumerate(texts)
    ]
    groups = [
        GroupLag("g", "OK", parts[: len(parts) // 2], 1),
        GroupLag("g", "OK", parts[len(parts) // 2 :], 1),
    ]

    class Other(PartitionLag):
        extra: int = 0

    class Text(str):
        pass

    other = [Other(**{n: getattr(base, n) for n in PartitionLag._fields})]
    odd = [
        GroupLag("o", None, [*other, base], 2),
        GroupLag("s", None, [_replace(base, topic=Text("t-1"))], 3),
    ]
    every = [*groups, *odd]
    lines, refused = _native_lines(every)
    assert lines == [orjson.dumps(g.to_json()) for g in every]
    assert refused == every[-1:]  # a str subclass: the reference's
    unset = object.__new__(PartitionLag)
    with pytest.raises(AttributeError):
        _native_lines([GroupLag("u", None, [unset], 4)])


def test_written_group_lines_are_the_groups_lines(
    log_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_group_lines gives write each group's line (orjson's of its JSON, the standard
    library's where orjson refuses it) with a newline: the native printer a buffer at a time (a
    group's partitions' commits in one call, some partitions without any, a partition's commits
    cut across buffers, numbers of every digit count, both signs and the int64 edges, log ends
    null and not), its views
    released after each call, a short write's rest given again; a group it does not print (an
    integer past 64 bits, a str subclass) by the reference in its place; the same without the
    printer; an error of write raised."""
    import orjson

    from codegen.forensics import lag_json

    reports = lag_reports(log_folder)
    edges = sorted({s * (10**w + d) for w in range(19) for d in (-1, 0, 1) for s in (1, -1)})
    values = np.array([v for v in edges if -(2**63) <= v < 2**63] + [-(2**63)], np.int64)
    n = 9_000  # some 1 MB of text: a partition's commits over several of the printer's buffers
    rnd = np.random.default_rng(7)
    wide = [values[rnd.integers(0, len(values), n)] for _ in range(6)]
    known = rnd.integers(0, 2, n).astype(np.bool_)
    columns = CommitColumns(*wide, known, 0, n)
    base = reports[0].partitions[0]
    cuts = [0, 1, 1, 2, 4_000, 8_999, 8_999, n]  # partitions without commits among them
    parts = [_replace(base, columns=columns, start=a, stop=b) for a, b in itertools.pairwise(cuts)]
    big = GroupLag("big", "OK", parts, 1, reports[0].share_partitions)
    refused = GroupLag("past", None, [_replace(base, lag=2**64)], 5)

    class Text(str):
        pass

    subclassed = GroupLag("s", None, [_replace(base, topic=Text("t-1"))], 6)
    alone = GroupLag("g", None, [], 5)
    every = [*reports, big, refused, alone, big, subclassed, *reports]
    from codegen.forensics.output import json_bytes

    expected = b"".join(json_bytes(g.to_json()) + b"\n" for g in every)
    assert b'"lag":18446744073709551616' in expected
    assert expected.count(b"\n") == len(every) and orjson.dumps(big.to_json()) in expected

    def written(groups: list[GroupLag]) -> tuple[bytes, list[memoryview], list[int]]:
        views: list[memoryview] = []
        sizes: list[int] = []
        text = bytearray()

        def write(chunk: memoryview | bytes) -> None:
            if isinstance(chunk, memoryview):
                views.append(chunk)
                sizes.append(len(chunk))
            text.extend(chunk)

        assert lag_json.write_group_lines(groups, write) == len(groups)
        return bytes(text), views, sizes

    text, views, sizes = written(every)
    assert text == expected
    if lag_json.native_printer() is not None:
        assert len(sizes) > 4 and max(sizes) <= 256 * 1024
        with pytest.raises(ValueError, match="released"):
            bytes(views[0])

        def failing(chunk: memoryview | bytes) -> None:
            raise OSError("disk full")

        with pytest.raises(OSError, match="disk full"):
            lag_json.write_group_lines(every, failing)
        short = bytearray()

        def a_little(chunk: memoryview | bytes) -> int:  # a raw stream's write: short writes
            short.extend(chunk[:1000])
            return min(len(chunk), 1000)

        assert lag_json.write_group_lines(every, a_little) == len(every)
        assert bytes(short) == expected
        with pytest.raises(OSError, match="write took 0 of"):
            lag_json.write_group_lines(every, lambda chunk: 0)
    assert written([]) == (b"", [], [])
    monkeypatch.setattr(lag_json, "native_printer", lambda: None)
    assert written(every)[0] == expected


def test_runs_of_refused_groups_are_the_reference_s(
    log_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of groups the native printer does not print (integers past 64 bits, a str
    subclass), at both ends and between groups it prints, are written in their places as the
    pure backend writes them, all within one call of lag_write (the groups, their partitions
    and commit columns read once, not again after each refused group)."""
    from codegen.forensics import lag_json

    printer = lag_json.native_printer()
    if printer is None:
        pytest.skip("the native printer is not built")
    reports = lag_reports(log_folder)
    base = reports[0].partitions[0]

    class Text(str):
        pass

    past = [GroupLag(f"past-{i}", None, [_replace(base, lag=2**64 + i)], 5) for i in range(3)]
    subclassed = GroupLag("s", None, [_replace(base, topic=Text("t-1"))], 6)
    every = [*past, *reports, *past, subclassed, *past[::-1], reports[0], subclassed, *past]
    calls: list[int] = []

    class Counted:  # the printer, its lag_write calls counted
        def __getattr__(self, name: str) -> Any:
            return getattr(printer, name)

        def lag_write(self, *args: Any) -> int:
            calls.append(len(args[2]))
            return printer.lag_write(*args)  # type: ignore[no-any-return]

    monkeypatch.setattr(lag_json, "native_printer", Counted)
    natively = io.BytesIO()
    assert lag_json.write_group_lines(every, natively.write) == len(every)
    assert calls == [len(every)]
    monkeypatch.setattr(lag_json, "native_printer", lambda: None)
    expected = io.BytesIO()
    assert lag_json.write_group_lines(every, expected.write) == len(every)
    assert natively.getvalue() == expected.getvalue()
    assert expected.getvalue().count(b'"lag":18446744073709551618') == 4


def test_now_skips_a_broken_newest_batch(tmp_path: Path) -> None:
    """*now* is the newest time of the whole batches: the headers walked without checksums,
    the newest batches checked, and one whose records are broken left for the next newest;
    it is what the checked headers give."""
    from codegen.dumps.views.cut import newest_batch_time

    segment = tmp_path / "00000000000000000000.log"
    with SegmentWriter(segment) as w:
        for at in (T0, T0 + 3, T0 + 3, T0 + 2, T0 + 5):
            w.write_batch([(b"k", b"v" * 10)], timestamp=at)
    rows = batch_rows(segment).to_pylist()
    data = bytearray(segment.read_bytes())
    for broken in (rows[1], rows[4]):  # one of the two at T0 + 3, and the newest
        data[broken["batchPosition"] + broken["size"] - 1] ^= 1
    segment.write_bytes(bytes(data))
    assert newest_batch_time(batch_rows(segment, verify_crc=False)) == T0 + 5
    assert newest_batch_time(batch_rows(segment)) == T0 + 3
    assert newest_batch_time(lag_module.newest_batches(segment)) == T0 + 3
    data[rows[2]["batchPosition"] + rows[2]["size"] - 1] ^= 1  # both at T0 + 3 broken
    segment.write_bytes(bytes(data))
    assert newest_batch_time(lag_module.newest_batches(segment)) == T0 + 2


def _newest_cases(folder: Path) -> dict[str, tuple[Path, bool]]:
    """Segments for *now*'s walk, by name: each file and whether the native walk reads it whole
    (else it is left to the reference)."""
    from codegen.dumps.writer import frame_v2_batch

    folder.mkdir()
    cases: dict[str, tuple[Path, bool]] = {}

    def segment(name: str, whole: bool) -> SegmentWriter:
        path = folder / f"{name}.log"
        cases[name] = (path, whole)
        return SegmentWriter(path)

    segment("empty", True).close()
    with segment("controls-only", True) as w:
        w.write_control(ControlType.COMMIT, timestamp=T0 + 4, producer_id=3, producer_epoch=0)
        w.write_control(ControlType.ABORT, timestamp=T0 + 2, producer_id=3, producer_epoch=0)
    with segment("no-records", True) as w:  # a batch without records is not counted
        w.write_batch([(b"k", b"v")], timestamp=T0)
        w.write_bytes(
            frame_v2_batch(
                b"",
                attributes=0,
                record_count=0,
                last_offset_delta=0,
                base_offset=1,
                base_timestamp=T0 + 9,
                max_timestamp=T0 + 9,
            )
        )
    with segment("only-empty-batches", True) as w:
        w.write_batch([], timestamp=T0)
    with segment("below-zero", True) as w:  # a newest time below 0: none, as the reference
        w.write_batch([(b"k", b"v")], timestamp=-5)
    for name, whole in (("several-newest", True), ("one-newest-broken", True)):
        with segment(name, whole) as w:
            for at in (T0 + 3, T0 + 1, T0 + 3, T0 + 2):
                w.write_batch([(b"k", b"v" * 10)] * 2, timestamp=at)
    for name in ("every-newest-broken", "torn-tail", "bad-magic", "legacy"):
        with segment(name, False) as w:
            for at in (T0 + 3, T0 + 1, T0 + 3, T0 + 2):
                w.write_batch([(b"k", b"v" * 10)] * 2, timestamp=at)
            if name == "legacy":
                w.write_legacy([(None, b"old")], magic=1, timestamp=T0 + 8)
            if name == "torn-tail":
                w.write_bytes(encode_record_batch([(b"k", b"v")], timestamp=T0 + 9)[:40])
    rows = batch_rows(cases["several-newest"][0]).to_pylist()

    def flip(name: str, *at: int) -> None:
        data = bytearray(cases[name][0].read_bytes())
        for i in at:
            data[i] ^= 1
        cases[name][0].write_bytes(bytes(data))

    last = [r["batchPosition"] + r["size"] - 1 for r in rows]
    flip("one-newest-broken", last[0])
    flip("every-newest-broken", last[0], last[2])
    flip("bad-magic", rows[1]["batchPosition"] + 16)
    return cases


def test_now_by_the_native_walk_is_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest time of each segment's whole batches with records, by the walk of the header
    chains (several files in turn, one or two a call) where it reads a file, by the reference
    where it leaves one to it: what the checked batch rows give, file by file and of all."""
    from codegen.dumps import header_ends
    from codegen.dumps.segments import header_pass_for
    from codegen.dumps.views.cut import newest_batch_time

    cases = _newest_cases(tmp_path / "segments")
    files = [path for path, _ in cases.values()]
    meant = [newest_batch_time(batch_rows(f)) for f in files]
    reference = [newest_batch_time(lag_module.newest_batches(f)) for f in files]
    assert reference == [max(m, -1) for m in meant]  # a time below 0 is none
    assert dict(zip(cases, meant, strict=True)) == {
        "empty": -1,
        "controls-only": T0 + 4,
        "no-records": T0,
        "only-empty-batches": -1,
        "below-zero": -5,
        "several-newest": T0 + 3,
        "one-newest-broken": T0 + 3,
        "every-newest-broken": T0 + 2,
        "torn-tail": T0 + 3,
        "bad-magic": T0 + 3,
        "legacy": T0 + 8,
    }
    for per_call in (header_ends.FILES_PER_CALL, 2, 1):
        monkeypatch.setattr(header_ends, "FILES_PER_CALL", per_call)
        found = header_ends.newest_times(files)
        if header_pass_for(None) is None:
            assert found is None
        else:
            assert found is not None
            assert [t is not None for t in found] == [whole for _, whole in cases.values()]
            for t, r in zip(found, reference, strict=True):
                assert t is None or t == r
        for f, r in zip(files, reference, strict=True):
            assert lag_module.newest_segment_time([f]) == r
        assert lag_module.newest_segment_time(files) == max(meant)
    assert lag_module.newest_segment_time([]) == -1


def _newest_by_the_read(files: list[Path]) -> tuple[int, list[int | None]]:
    """*now* of the files as lag finds it of a partition it reads first (each file's newest
    batch time from its commits' read, the files it leaves walked), and what the read gave."""
    read: list[int | None] = []
    lag_module._read_commits(list(files), None, None, read)
    return lag_module._newest_read(files, read), read


def test_history_room_under_a_cut_is_the_bytes_it_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commits' history of a partition makes room by its segments' bytes, and under a cut
    (--as-of) by the bytes of the batches the cut keeps, those read, not the whole files'."""
    from tests.test_views_offsets import KEYS, write_log

    if not lag_module.effects.native_enabled():
        pytest.skip("the native engine is not built")
    steps = [("commit", n % len(KEYS), False, 3, n, None, False) for n in range(100)]
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    sizes = batch_rows(path).column("size").to_pylist()
    given: list[int] = []

    class Noted(lag_module.RecordHistory):
        def __init__(self, segment_bytes: int = 0) -> None:
            given.append(segment_bytes)
            super().__init__(segment_bytes)

    monkeypatch.setattr(lag_module, "RecordHistory", Noted)
    for cut, kept in ((None, 100), (AsOf(offset=39), 40), (AsOf(offset=-1), 0)):
        given.clear()
        lag_module._read_commits([path], cut, None)
        assert given == [path.stat().st_size if cut is None else sum(sizes[:kept])]
    assert sum(sizes) == path.stat().st_size


def test_now_by_the_commits_read_is_the_reference(tmp_path: Path) -> None:
    """The newest batch time the commits' read gives of a file it reads whole natively is what
    the walk gives (:func:`newest_segment_time`); a file with an entry the native loop leaves
    to the reference (a broken batch, a torn tail, a legacy entry) is walked."""
    from codegen.dumps.arrow import native_columns_enabled

    cases = _newest_cases(tmp_path / "segments")
    files = [path for path, _ in cases.values()]
    given: dict[str, int] = {}
    for name, (f, _) in cases.items():
        newest, read = _newest_by_the_read([f])
        assert newest == lag_module.newest_segment_time([f]), name
        if read[0] is not None:
            given[name] = read[0]
    native = {
        "empty": -1,
        "controls-only": T0 + 4,
        "no-records": T0,
        "only-empty-batches": -1,
        "below-zero": -1,
        "several-newest": T0 + 3,
    }
    assert given == (native if native_columns_enabled() else {})
    assert _newest_by_the_read(files)[0] == lag_module.newest_segment_time(files) == T0 + 8


def _mutated(sources: list[bytes], rnd: random.Random) -> bytes:
    """One to three of ``sources`` end to end, as they are (half the time) or torn, with a byte
    flipped or overwritten (anywhere, or in the first batch's offset, length and leader epoch,
    which its CRC does not cover), or with a stretch repeated."""
    out = bytearray(b"".join(rnd.choice(sources) for _ in range(rnd.randrange(1, 4))))
    if rnd.randrange(2):
        return bytes(out)
    kind = rnd.randrange(5)
    at = rnd.randrange(len(out))
    if kind == 0:
        del out[at:]
    elif kind == 1:
        out[at] ^= 1 << rnd.randrange(8)
    elif kind == 2:
        out[at] = rnd.randrange(256)
    elif kind == 3:
        out[rnd.randrange(16)] ^= 1 << rnd.randrange(8)
    else:
        out[at:at] = out[at : at + rnd.randrange(1, 200)]
    return bytes(out)


def test_now_by_the_commits_read_of_broken_segments_is_the_walk_s(tmp_path: Path) -> None:
    """Over real segments and one of every kind of batch (control, compressed, LogAppendTime,
    without records), torn, flipped and overwritten at random: the newest time lag takes from
    the commits' read is the walk's, file by file and of them all."""
    from codegen.dumps.arrow import native_columns_enabled
    from codegen.dumps.compression import Codec
    from codegen.dumps.model import TimestampType

    kinds = tmp_path / "kinds.log"
    with SegmentWriter(kinds) as w:
        w.write_batch([(b"k", b"v" * 10)] * 3, timestamp=T0 + 5)
        w.write_batch([(b"k", b"v" * 40)] * 4, timestamp=T0 + 7, codec=Codec.GZIP)
        w.write_control(ControlType.COMMIT, timestamp=T0 + 9, producer_id=3, producer_epoch=0)
        w.write_batch(
            [(b"k", b"v")],
            timestamp=T0 + 1,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            log_append_time=T0 + 8,
        )
        w.write_batch([], timestamp=T0 + 11)
        w.write_batch([(b"k", b"v")] * 2, timestamp=T0 + 6)
    sources = [
        kinds.read_bytes(),
        *(f.read_bytes() for f in sorted(REAL.glob("__consumer_*/*.log"))),
    ]
    rnd = random.Random(45)
    files: list[Path] = []
    given = 0
    for n in range(240):
        f = tmp_path / f"{n:03d}.log"
        f.write_bytes(_mutated(sources, rnd))
        files.append(f)
        newest, read = _newest_by_the_read([f])
        assert newest == lag_module.newest_segment_time([f]), f
        given += read[0] is not None
    assert _newest_by_the_read(files)[0] == lag_module.newest_segment_time(files)
    # the read gives most of the files' times itself (else they are walked, as before)
    assert given >= 120 if native_columns_enabled() else given == 0


def test_lag_walks_every_partition_but_the_first_for_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --as-of, *now* of the partition read first comes from its read: only the other
    partitions' headers are walked (all of them without the native loop), and *now* is what
    the walk of every partition and the data partitions' log ends give."""
    from codegen.dumps.arrow import native_columns_enabled

    offsets = sorted(REAL.glob("__consumer_offsets-*/*.log"), key=lambda f: len(str(f)))
    assert [f.parent.name for f in offsets] == ["__consumer_offsets-0", "__consumer_offsets-28"]
    data_now = lag_module.newest_time(ends=LogEnds(discover([REAL])).data_ends())
    meant = max(lag_module.newest_segment_time(offsets), data_now)
    walked: list[Path] = []
    walk = lag_module.newest_segment_time

    def counted(files: list[Path]) -> int:
        walked.extend(files)
        return walk(files)

    monkeypatch.setattr(lag_module, "newest_segment_time", counted)
    reports = lag_reports(REAL)
    assert reports and {g.now for g in reports} == {meant}
    assert sorted(walked) == (offsets[1:] if native_columns_enabled() else offsets)


def test_lag_frees_the_kept_history_after_its_last_partition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """lag has the engine free the history columns it keeps for the next partition's
    (effects.release_history) once, after the last partition's commits are read (before that
    partition's groups are made), not for the rest of the process."""
    calls: list[str] = []
    read = lag_module._read_commits

    def noted_read(*args: Any, **kwargs: Any) -> KeyedCommits:
        calls.append("read")
        return read(*args, **kwargs)

    monkeypatch.setattr(lag_module, "_read_commits", noted_read)
    monkeypatch.setattr(lag_module.effects, "release_history", lambda: calls.append("release"))
    chunks = lag_module.lag_chunks(REAL)
    assert next(chunks) and calls == ["read"]
    rest = list(chunks)
    assert rest and calls == ["read", "read", "release"]


def test_lag_reads_each_segment_from_its_map(monkeypatch: pytest.MonkeyPatch) -> None:
    """lag reads a local partition's segments where they lie, from read-only maps (not
    copied into memory by a read of the file), with what the read of the files gives."""
    from codegen.dumps import storage
    from codegen.dumps.arrow import native_columns_enabled

    if not native_columns_enabled():  # the pure reader reads a file's bytes: the reference
        pytest.skip("the maps are the native reader's")
    meant = run(str(REAL), "--format", "jsonl")
    assert meant.exit_code == 0 and "commits" in meant.output, meant.output

    def no_read(*args: Any) -> bytes:
        raise AssertionError(f"read_range{args}: a segment was read into memory")

    monkeypatch.setattr(storage, "read_range", no_read)
    mapped = run(str(REAL), "--format", "jsonl")
    assert mapped.exit_code == 0 and mapped.output == meant.output, mapped.output


def test_log_ends_follow_batch_times(log_folder: Path) -> None:
    ends = LogEnds(discover([log_folder]))
    end = ends.of("t", 0)
    assert end is not None and end.source == "segments" and end.history
    assert end.at(T0 - 1) == 0
    assert end.at(T0) == 10
    assert end.at(T0 + 15 * S) == 20
    assert end.at(T0 + 10_000 * S) == 110
    assert ends.of("nope", 0) is None


@pytest.mark.parametrize("cut", [None, AsOf(timestamp_ms=T0 + 45 * S), AsOf(offset=3)])
def test_log_end_views_read_rows_in_any_order(tmp_path: Path, cut: AsOf | None) -> None:
    """segments_at and best_log_end sort the rows they are given (rows already in order are
    taken as they are): shuffled rows, an unreadable stretch among them, give what the rows
    in order give."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    for base in (0, 60):
        with SegmentWriter(folder / f"{base:020d}.log", base_offset=base) as w:
            for k in range(6):
                w.write_batch([(None, b"x")] * 10, timestamp=T0 + (base + k * 10) * S)
    segments, batches = replica_rows(sorted(folder.glob("*.log")))
    error = batches.slice(0, 1).to_pylist()[0] | {"batchPosition": 9_999, "_error": "corrupt: x"}
    batches = pa.concat_tables([batches, pa.Table.from_pylist([error], schema=batches.schema)])
    shuffled = np.random.default_rng(3).permutation(batches.num_rows)
    ordered = segments_at(segments, batches.filter(batches.column("_error").is_null()), cut)
    at = segments_at(segments.take([1, 0]), batches.take(shuffled), cut)
    assert at.whole == ordered.whole
    assert at.segments.to_pylist() == ordered.segments.to_pylist()
    assert at.batches.to_pylist() == ordered.batches.to_pylist()
    steps = log_end_steps(ordered)
    assert steps is not None
    given = [
        candidate_rows(0, "a", steps),
        checkpoint_rows(1, "b", 7),
        candidate_rows(2, "c", steps),
    ]
    best = best_log_end(pa.concat_tables(given))
    assert best is not None
    assert best[1:] == ("segments", "a; the highest of 3 replicas/checkpoints", True, 3)
    assert best[0].equals(steps.table())
    unordered = best_log_end(pa.concat_tables(given[::-1]))  # each one's steps in order
    assert unordered is not None
    assert unordered[0].equals(best[0]) and unordered[1:] == best[1:]


@pytest.mark.parametrize("seed", range(6))
def test_commit_lags_by_the_engine_are_the_reference(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """commit_lags by the engine (log_end_lags.h: a search from the last step found) against
    its numpy form: log ends shared by keys, checkpoints without a history, keys without one,
    commit times rising, falling, equal to a step's and out of the steps' range, a few steps
    apart and many, offsets past the log end (no lag) and at the int64 ends."""
    if lag_module.effects.engine_function("commit_log_ends") is None:
        pytest.skip("the native engine is not built")
    rnd = np.random.default_rng(seed)

    def log_end(steps: int, history: bool = True) -> LogEnd:
        times = np.maximum.accumulate(rnd.integers(0, 1000, steps)).tolist()
        ends = np.maximum.accumulate(rnd.integers(0, 10_000, steps)).tolist()
        return LogEnd(times, ends, "segments", "here", history)

    def dense(steps: int, within: int = 1000) -> LogEnd:  # many steps between two commits
        # within < 1000: most steps in a short time, two far after (uneven times per step)
        times = np.sort(np.append(rnd.integers(0, within, steps), [998, 999])).tolist()
        ends = np.sort(rnd.integers(0, 10_000, steps + 2)).tolist()
        return LogEnd(times, ends, "segments", "here", True)

    shared = [log_end(int(rnd.integers(1, 40))) for _ in range(4)]
    choices = [
        *shared,
        None,
        log_end(1, history=False),
        log_end(int(rnd.integers(1, 3))),
        dense(int(rnd.integers(100, 600))),
        dense(int(rnd.integers(100, 600)), within=int(rnd.integers(1, 20))),
    ]
    keys = int(rnd.integers(0, 30))
    ends = [choices[int(rnd.integers(0, len(choices)))] for _ in range(keys)]
    counts = rnd.integers(0, 20, keys)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    n = int(bounds[-1])
    times = rnd.integers(-50, 1100, n)
    if seed % 2:  # each key's commits in time order, as they mostly are
        times = np.concatenate([np.sort(times[a:b]) for a, b in itertools.pairwise(bounds)])
    column = np.asarray(times, np.int64)
    offsets = rnd.integers(-5, 12_000, n)
    if seed % 3 == 2 and n:  # offsets at the int64 ends: the lag's difference wraps as numpy's
        offsets[rnd.integers(0, n, max(n // 4, 1))] = rnd.choice(
            np.array([-(2**63), -(2**63) + 1, 2**63 - 1, 2**62], np.int64), max(n // 4, 1)
        )
    kc = KeyedCommits(
        [("g", "t", k) for k in range(keys)],
        bounds,
        np.arange(n, dtype=np.int64),
        column,
        offsets,
        np.zeros(n, np.int64),
        [[] for _ in range(keys)],
        [True] * keys,
        np.arange(keys, dtype=np.int64),
    )
    by_engine = lag_module.commit_lags(kc, ends)
    # one index over a command's calls: made for some of the log ends (numbered in reverse),
    # then given more (indexed anew, the new ones after), then the same again (kept)
    steps = lag_module.LogEndIndex()
    lag_module.commit_lags(kc, [e if k % 2 else None for k, e in enumerate(ends)][::-1], steps)
    by_shared = [lag_module.commit_lags(kc, ends, steps) for _ in range(2)]
    monkeypatch.setattr(lag_module.effects, "engine_function", lambda name: None)
    reference = lag_module.commit_lags(kc, ends)
    for made in (by_engine, *by_shared):
        for got, want in zip(made, reference, strict=True):
            assert got.dtype == want.dtype and got.tolist() == want.tolist()


@pytest.mark.parametrize("engine", [True, False])
def test_commit_lags_without_a_log_end_history_share_read_only_zeros(
    engine: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commits whose keys have no log end history (none, or a checkpoint's only) get zero log
    ends and lags, none known, by the engine and by numpy alike: read-only views of the one
    array a command's LogEndIndex keeps, grown when a call has more commits and reused by the
    next calls (not written per partition)."""
    if not engine:
        monkeypatch.setattr(lag_module.effects, "engine_function", lambda name: None)
    checkpoint = LogEnd([0], [5], "replication-offset-checkpoint", "here", False)

    def keyed(counts: list[int]) -> KeyedCommits:
        keys, n = len(counts), sum(counts)
        return KeyedCommits(
            [("g", "t", k) for k in range(keys)],
            np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            np.arange(n, dtype=np.int64),
            np.arange(n, dtype=np.int64) * 10,
            np.arange(n, dtype=np.int64) + 3,
            np.zeros(n, np.int64),
            [[] for _ in range(keys)],
            [True] * keys,
            np.arange(keys, dtype=np.int64),
        )

    steps = lag_module.LogEndIndex()
    small = lag_module.commit_lags(keyed([2, 3]), [None, checkpoint], steps)
    large = lag_module.commit_lags(keyed([4, 0, 6]), [checkpoint, None, None], steps)
    again = lag_module.commit_lags(keyed([1, 2]), [None, None], steps)
    longer = lag_module.commit_lags(keyed([12]), [None], steps)  # within the room made
    for got, n in ((small, 5), (large, 10), (again, 3), (longer, 12)):
        log_end, lag, known = got
        assert (log_end.dtype, lag.dtype, known.dtype) == (np.int64, np.int64, np.bool_)
        assert log_end.tolist() == lag.tolist() == [0] * n and known.tolist() == [False] * n
        assert not any(a.flags.writeable for a in got)
    # grown once for the larger call (a quarter more room), then the same memory given again
    assert not np.shares_memory(small[0], large[0])
    assert all(np.shares_memory(a, large[0]) for a in (*large, *again, *longer))
    # pages never written: a read-only private map where the system has one
    if hasattr(mmap, "MAP_PRIVATE"):
        assert isinstance(large[0].base.base.obj, mmap.mmap)


def test_commit_lags_of_crowded_and_spread_steps_at_the_int64_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """commit_lags by the engine against its numpy form where one command's log ends are
    indexed with a bucket of many steps (crowded: the bucket's steps halved first) and with
    none (the walk that reads no bucket's end): step and commit times at the int64 ends (the
    span past 2**63), commit times equal to a step's, between two, before the first and from
    the last on, each key's rising and falling."""
    if lag_module.effects.engine_function("commit_log_ends") is None:
        pytest.skip("the native engine is not built")
    low, high = -(2**63), 2**63 - 1
    crowded = LogEnd(  # 40 steps in 40 ns, one at the far end: one bucket holds the 40
        [low, *range(-20, 20), high], list(range(42)), "segments", "crowded", True
    )
    spread = LogEnd(  # a step every 2**58 ns: one a bucket
        [low + (k << 58) for k in range(64)], [10 * k for k in range(64)], "segments", "s", True
    )
    single = LogEnd([high], [7], "segments", "at the end", True)
    times = [low, low + 1, -21, -20, -1, 0, 5, 19, 20, 1 << 60, high - 1, high]
    times += [low + (k << 58) + j for k in (0, 1, 31, 63) for j in (-1, 0, 1)]
    times = [t for t in times if low <= t <= high]
    rows = [*sorted(times), *sorted(times, reverse=True)]
    ends = [crowded, spread, single, spread, crowded]
    n, keys = len(rows) * len(ends), len(ends)
    kc = KeyedCommits(
        [("g", "t", k) for k in range(keys)],
        np.arange(0, n + 1, len(rows), dtype=np.int64),
        np.arange(n, dtype=np.int64),
        np.array(rows * keys, np.int64),
        np.resize(np.array([0, 3, 41, high, low], np.int64), n),
        np.zeros(n, np.int64),
        [[] for _ in range(keys)],
        [True] * keys,
        np.arange(keys, dtype=np.int64),
    )
    by_engine = lag_module.commit_lags(kc, ends)
    monkeypatch.setattr(lag_module.effects, "engine_function", lambda name: None)
    reference = lag_module.commit_lags(kc, ends)
    for got, want in zip(by_engine, reference, strict=True):
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert set(reference[0].tolist()) > {0, 7, 20, 41, 630}  # the steps' ends met


def test_commit_lags_of_log_ends_past_the_cache_are_the_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """commit_lags by the engine against its numpy form where the log ends' steps (6.4 MB,
    past the 4 MiB most read in key order) have the keys read grouped by log end, and where
    they fit (key order): keys of either log end, none and a small one interleaved, their
    commits before, among and after the steps."""
    if lag_module.effects.engine_function("commit_log_ends") is None:
        pytest.skip("the native engine is not built")
    rnd = np.random.default_rng(7)

    def log_end(steps: int) -> LogEnd:
        times = np.cumsum(rnd.integers(0, 5, steps)).astype(np.int64)
        ends = np.cumsum(rnd.integers(0, 3, steps)).astype(np.int64)
        return LogEnd(times, ends, "segments", "here", True)

    for big in (200_000, 2_000):
        ends_of = [log_end(big), log_end(big), log_end(3), None]
        keys = 40
        ends = [ends_of[k % 4] for k in range(keys)]
        counts = rnd.integers(0, 30, keys)
        bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        n = int(bounds[-1])
        times = np.sort(rnd.integers(-10, 2 * big + 10, n)).astype(np.int64)
        kc = KeyedCommits(
            [("g", "t", k) for k in range(keys)],
            bounds,
            np.arange(n, dtype=np.int64),
            times,
            rnd.integers(0, big, n).astype(np.int64),
            np.zeros(n, np.int64),
            [[] for _ in range(keys)],
            [True] * keys,
            np.arange(keys, dtype=np.int64),
        )
        with monkeypatch.context() as m:
            by_engine = lag_module.commit_lags(kc, ends)
            m.setattr(lag_module.effects, "engine_function", lambda name: None)
            reference = lag_module.commit_lags(kc, ends)
        for got, want in zip(by_engine, reference, strict=True):
            assert got.dtype == want.dtype and got.tolist() == want.tolist()
        assert len(set(reference[0].tolist())) > 100  # many steps' ends met


def test_commit_log_ends_checks_its_buffers() -> None:
    index = lag_module.effects.engine_function("log_end_index")
    commit_log_ends = lag_module.effects.engine_function("commit_log_ends")
    if index is None or commit_log_ends is None:
        pytest.skip("the native engine is not built")

    def engine(*args: Any) -> tuple[bytes, bytes, bytes]:
        """The steps (times, ends and each log end's bounds in them) indexed (log_end_index),
        then the commits' log ends in them."""
        times, ends, step_bounds = args[:3]
        steps = [(times[a:b], ends[a:b]) for a, b in itertools.pairwise(step_bounds)]
        made: tuple[bytes, bytes, bytes] = commit_log_ends(index(steps), *args[3:])
        return made

    i64 = lambda *v: np.asarray(v, np.int64)  # noqa: E731
    fine = (i64(1, 5), i64(10, 20), i64(0, 2), i64(0), i64(0, 2), i64(0, 7), i64(3, 30))
    log_end, lag, known = engine(*fine)
    assert np.frombuffer(log_end, np.int64).tolist() == [0, 20]
    assert np.frombuffer(lag, np.int64).tolist() == [0, 0]  # before the steps; past the end
    assert np.frombuffer(known, np.uint8).tolist() == [1, 1]
    for at, bad in [
        (3, i64(1)),  # a key's steps not among the log ends
        (3, i64(-2)),
        (4, i64(0, 3)),  # the commits' bounds past the commits
        (4, i64(1, 0)),  # falling bounds
        (4, i64(0)),  # fewer bounds than keys + 1
        (1, i64(10)),  # fewer ends than times
        (6, i64(3)),  # fewer offsets than commit times
    ]:
        with pytest.raises(ValueError):
            engine(*fine[:at], bad, *fine[at + 1 :])
    with pytest.raises(ValueError):
        engine(*fine[:5], b"\x00" * 7, *fine[6:])
    # the steps: (times, ends) pairs of int64 buffers of one length, each held as it is
    for bad_steps, error in [
        ([(b"\x00" * 7, b"\x00" * 7)], ValueError),
        ([(fine[0], fine[1][:1])], ValueError),
        ([(fine[0],)], TypeError),
        ([[fine[0], fine[1]]], TypeError),
        ([(fine[0], None)], TypeError),
        ([(i64(1, 2, 5, 6)[::2], fine[1])], ValueError),  # not contiguous: not copied
        (None, TypeError),
    ]:
        with pytest.raises(error):
            index(bad_steps)
    with pytest.raises(TypeError):
        engine(*fine[:6])
    with pytest.raises(TypeError):
        index(*fine[:2])
    # the index is the log_end_index's capsule, nothing else
    for not_an_index in (fine[0], None, object()):
        with pytest.raises((TypeError, ValueError)):
            commit_log_ends(not_an_index, *fine[3:])
    # the index holds its arrays (read where they are, not copied) while it lives
    times, ends = i64(1, 5), i64(10, 20)
    kept = [weakref.ref(times), weakref.ref(ends)]
    held = index([(times, ends)])
    del times, ends
    assert all(r() is not None for r in kept)
    for _ in range(2):  # one index, read by several calls
        assert np.frombuffer(commit_log_ends(held, *fine[3:])[0], np.int64).tolist() == [0, 20]
    del held
    assert all(r() is None for r in kept)
    # no keys, no commits; a key with no steps (-1) among keys with some
    empty = engine(i64(1), i64(10), i64(0, 1), i64(), i64(0), i64(), i64())
    assert [len(b) for b in empty] == [0, 0, 0]
    log_end, lag, known = engine(
        i64(1, 5), i64(10, 20), i64(0, 2), i64(-1, 0), i64(0, 1, 3), i64(9, 4, 6), i64(-4, 3, 25)
    )
    assert np.frombuffer(log_end, np.int64).tolist() == [0, 10, 20]
    assert np.frombuffer(lag, np.int64).tolist() == [4, 7, 0]
    assert np.frombuffer(known, np.uint8).tolist() == [0, 1, 1]
    # rows before the first key's and after the last's: log end 0, their lag from it, unknown
    log_end, lag, known = engine(
        i64(1, 5), i64(10, 20), i64(0, 2), i64(0), i64(1, 2), i64(9, 4, 6, 7), i64(-4, 3, -6, 1)
    )
    assert np.frombuffer(log_end, np.int64).tolist() == [0, 10, 0, 0]
    assert np.frombuffer(lag, np.int64).tolist() == [4, 7, 6, 0]
    assert np.frombuffer(known, np.uint8).tolist() == [0, 1, 0, 0]
    # steps over all of int64 (their span past 2^63), one step, steps at one time (no span), no
    # step; times at their ends
    lo, hi = -(2**63), 2**63 - 1
    for steps in (i64(lo, -5, -5, 0, hi), i64(lo, hi), i64(7), i64(-5, -5, -5), i64()):
        times = i64(lo, lo + 1, -6, -5, -4, 0, 6, 7, 8, hi - 1, hi)
        log_end, _, _ = engine(
            steps, steps + 1, i64(0, len(steps)), i64(0), i64(0, len(times)), times, times
        )
        at = np.searchsorted(steps, times, side="right")
        want = np.where(at > 0, (steps + 1)[np.maximum(at - 1, 0)] if len(steps) else 0, 0)
        assert np.frombuffer(log_end, np.int64).tolist() == want.tolist()


def test_commit_log_ends_at_every_time() -> None:
    """The engine's log end at every time around the steps of log ends whose index buckets
    hold none, one, two, three and many steps (equal times among them), for keys given out
    of their log ends' order (the engine groups the keys by log end) and keys with none:
    bisect_right of the step times, as LogEnd.at."""
    index = lag_module.effects.engine_function("log_end_index")
    commit_log_ends = lag_module.effects.engine_function("commit_log_ends")
    if index is None or commit_log_ends is None:
        pytest.skip("the native engine is not built")
    layouts = [
        [7],
        [7, 7],
        [0, 1, 2, 40],  # three steps in a bucket, then empty buckets
        [0, 0, 0, 9, 9, 10, 30, 31, 31],
        [5] * 12 + [6] * 11 + [50],  # a bucket past the walk's few: halved first
        [-(2**62), 0, 2**62],  # buckets as wide as int64 allows
    ]
    ends = [np.arange(1, len(t) + 1, dtype=np.int64) * 100 for t in layouts]
    steps = index([(np.asarray(t, np.int64), e) for t, e in zip(layouts, ends, strict=True)])
    key_steps = [5, 4, -1, 3, 2, 1, -1, 0, 3, 1]
    key_times = []
    for s in key_steps:
        t = np.asarray(layouts[s] if s >= 0 else [0], np.int64)
        near = np.unique(np.concatenate([t + d for d in range(-2, 3)]))
        # every time from before the first step to past the last where they are few
        every = np.arange(t[0] - 2, t[-1] + 3) if int(t[-1]) - int(t[0]) < 100 else near[::-1]
        key_times.append(np.concatenate([every, near]))
    times = np.concatenate(key_times).astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum([len(t) for t in key_times])]).astype(np.int64)
    committed = np.full(len(times), 150, np.int64)
    log_end, lag, known = commit_log_ends(
        steps, np.asarray(key_steps, np.int64), bounds, times, committed
    )
    want = []
    for s, t in zip(key_steps, key_times, strict=True):
        if s < 0:
            want.extend([0] * len(t))
            continue
        found = np.searchsorted(np.asarray(layouts[s]), t, side="right")
        want.extend(np.where(found > 0, ends[s][np.maximum(found - 1, 0)], 0).tolist())
    assert np.frombuffer(log_end, np.int64).tolist() == want
    assert np.frombuffer(lag, np.int64).tolist() == np.maximum(np.asarray(want) - 150, 0).tolist()
    known_want = [int(s >= 0) for s, t in zip(key_steps, key_times, strict=True) for _ in t]
    assert np.frombuffer(known, np.uint8).tolist() == known_want


def test_real_consumer_caught_up() -> None:
    (app,) = lag_reports(REAL, group="my-app")
    (p,) = app.partitions
    assert (p.topic, p.partition, p.log_end_offset, p.lag, p.status) == ("my-topic", 0, 16, 0, "OK")
    assert [c.offset for c in p.commits][-1] == 16 and len(p.commits) == 13


def run(*args: str) -> Any:
    return CliRunner().invoke(lag_command, list(args))


def test_cli(log_folder: Path) -> None:
    table = run(str(log_folder), "--window", "3")
    assert table.exit_code == 0, table.output
    assert "g-stall  ERR" in table.output and "t-2  STALL" in table.output
    jsonl = run(str(log_folder / "__consumer_offsets-0"), "--group", "g-warn", "--format", "jsonl")
    (doc,) = [json.loads(line) for line in jsonl.output.splitlines()]
    assert doc["partitions"][0]["commits"][0]["lag"] == 30  # data found next to the partition
    assert run(str(log_folder), "--window", "0").exit_code == 2
    assert run(str(log_folder), "--group", "nope").exit_code == 2


def _html(folder: Path) -> str:
    from codegen.forensics.report import render_html

    return render_html(group_reports(folder), lag_reports(folder, window=3), "test report")


def test_html_report_is_self_contained(log_folder: Path) -> None:
    text = _html(log_folder)
    assert text.startswith("<!DOCTYPE html>")
    # A plot per partition with two commits or more (6; g-other's two partitions have one
    # commit each: a sentence, no empty frame) and a timeline for g-other, the one group with
    # events (an offset deletion): the others have no group record.
    assert text.count("<svg") == 7
    assert text.count("One commit (offset 5 at") == 2
    # The answer first: the summary table, then per group the lag, then its events.
    assert text.index("<th>lag status</th>") < text.index("<section")
    other = text[text.index('id="group-g-other"') :]
    assert other.index("Offsets and lag") < other.index("<h3>Events</h3>")
    for needle in ("<script", " src=", "<link", "@import"):
        assert needle not in text
    assert ">STALL</span>" in text and ">STOP</span>" in text
    assert _html(log_folder) == text  # deterministic


def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    from matplotlib.image import imread

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:  # a failure under CI=true (tests/skips.py): make setup checks for it
        pytest.skip("headless Chromium not installed (sudo apt-get install -y chromium)")
    page = tmp_path / "report.html"
    page.write_text(_html(REAL))
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1000,3000",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    pixels = imread(str(shot))[:, :, :3]
    # The OK badge's green (#2e7d32) and the plots' default blue line (#1f77b4) are drawn.
    for rgb in ((0x2E, 0x7D, 0x32), (0x1F, 0x77, 0xB4)):
        target = [v / 255 for v in rgb]
        close = (abs(pixels - target) < 0.02).all(axis=2)
        assert close.sum() > 20, f"colour {rgb} not on the screenshot"


def test_cli_html_from_groups_and_lag(log_folder: Path) -> None:
    from codegen.forensics.groups_command import groups_command

    by_lag = run(str(log_folder), "--window", "3", "--format", "html")
    assert by_lag.exit_code == 0, by_lag.output
    assert by_lag.output == _html(log_folder).replace(
        "test report", "Consumer groups of " + log_folder.name
    )
    one = CliRunner().invoke(
        groups_command, [str(log_folder), "--group", "g-stop", "--format", "html"]
    )
    assert one.exit_code == 0, one.output
    assert 'id="group-g-stop"' in one.output and 'id="group-g-ok"' not in one.output
    missing = CliRunner().invoke(
        groups_command, [str(log_folder), "--group", "x", "--format", "html"]
    )
    assert missing.exit_code == 2 and "not in the dump" in missing.output


def test_cli_several_groups(log_folder: Path) -> None:
    """--group repeated: those groups only, in every format of lag and groups; one not in the
    dump is exit 2 before any line is written."""
    from codegen.forensics.groups_command import groups_command

    two = ["--group", "g-stall", "--group", "g-warn"]
    table = run(str(log_folder), "--window", "3", *two)
    assert table.exit_code == 0, table.output
    assert [x.split()[0] for x in table.output.splitlines() if not x.startswith(" ")] == [
        "g-stall",
        "g-warn",
    ]
    jsonl = run(str(log_folder), *two, "--format", "jsonl")
    assert sorted(json.loads(x)["group"] for x in jsonl.output.splitlines()) == [
        "g-stall",
        "g-warn",
    ]
    page = run(str(log_folder), "--window", "3", *two, "--format", "html")
    assert 'id="group-g-stall"' in page.output and 'id="group-g-warn"' in page.output
    assert 'id="group-g-ok"' not in page.output
    groups = CliRunner().invoke(groups_command, [str(log_folder), *two, "--format", "jsonl"])
    assert [json.loads(x)["group"] for x in groups.output.splitlines()] == ["g-stall", "g-warn"]
    for command in (lag_command, groups_command):
        missing = CliRunner().invoke(command, [str(log_folder), *two, "--group", "nope"])
        assert missing.exit_code == 2
        assert missing.stdout == ""
        assert "group 'nope' is not in the dump" in missing.stderr


# ------------------------------------------------------------------------ a cluster's disks


def split_images(tmp_path: Path) -> tuple[Path, Path]:
    """The real aibulb image split in two broker images: the offsets on one, the data on the
    other."""
    one, two = tmp_path / "broker-1", tmp_path / "broker-2"
    one.mkdir()
    two.mkdir()
    for sub in REAL.iterdir():
        shutil.copytree(sub, (one if sub.name.startswith("__") else two) / sub.name)
    return one, two


def test_lag_needs_the_broker_holding_the_data(tmp_path: Path) -> None:
    one, two = split_images(tmp_path)
    (alone,) = lag_reports(one, group="my-app")
    assert alone.partitions[0].lag is None and alone.status is None
    (both,) = lag_reports([one, two], group="my-app")
    (part,) = both.partitions
    assert (part.log_end_offset, part.lag, part.status) == (16, 0, "OK")
    assert part.log_end_source == f"segments: {two / 'my-topic-0'}"
    (globbed,) = lag_reports([str(tmp_path / "broker-*")], group="my-app")
    assert globbed.partitions[0].log_end_offset == 16


def test_log_end_from_a_replication_offset_checkpoint(tmp_path: Path) -> None:
    one, _ = split_images(tmp_path)
    (one / "replication-offset-checkpoint").write_text("0\n2\nmy-topic 0 16\nother 3 9\n")
    (app,) = lag_reports(one, group="my-app")
    (part,) = app.partitions
    assert (part.log_end_offset, part.lag, part.status) == (16, 0, None)
    assert part.log_end_source is not None
    assert part.log_end_source.startswith("replication-offset-checkpoint: ")
    assert "lag now is known" in part.reason
    assert all(c.lag is None for c in part.commits)


def test_replicas_take_the_highest_log_end(tmp_path: Path) -> None:
    one, two = split_images(tmp_path)
    (one / "replication-offset-checkpoint").write_text("0\n1\nmy-topic 0 12\n")
    (app,) = lag_reports([one, two], group="my-app")
    (part,) = app.partitions
    assert part.log_end_offset == 16
    assert part.log_end_source is not None and "the highest of 2" in part.log_end_source


def test_empty_segment_gives_its_base_offset(tmp_path: Path) -> None:
    # Retention removed every record: the active segment, empty, starts at the log end.
    folder = tmp_path / "t-0"
    folder.mkdir()
    (folder / "00000000000000000042.log").write_bytes(b"")
    offsets = tmp_path / "__consumer_offsets-0"
    offsets.mkdir()
    with SegmentWriter(offsets / "00000000000000000000.log") as w:
        w.write_batch([commit_record("g", "t", 0, 40, T0)], timestamp=T0)
    (g,) = lag_reports(tmp_path)
    (part,) = g.partitions
    assert (part.log_end_offset, part.lag) == (42, 2)
    assert part.log_end_source == f"empty segments: {folder}"
    assert part.commits[0].lag == 2


def test_a_malformed_checkpoint_is_bad_input(tmp_path: Path) -> None:
    one, _ = split_images(tmp_path)
    (one / "replication-offset-checkpoint").write_text("0\n2\nmy-topic 0 16\n")
    result = CliRunner().invoke(lag_command, [str(one)])
    assert result.exit_code == 2
    assert "2 entries announced, 1 found" in result.output


def test_data_topic_and_unrelated_folder_are_bad_input(tmp_path: Path) -> None:
    data = CliRunner().invoke(lag_command, [str(REAL / "my-topic-0")])
    assert data.exit_code == 2
    assert "expected __consumer_offsets-N" in data.output
    assert "my-topic" in data.output
    (tmp_path / "notes.txt").write_text("x")
    other = CliRunner().invoke(lag_command, [str(tmp_path)])
    assert other.exit_code == 2 and "notes.txt" in other.output


def test_no_groups_is_said(tmp_path: Path) -> None:
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(b"")
    result = CliRunner().invoke(lag_command, [str(tmp_path)])
    assert result.exit_code == 0
    assert "no group in" in result.output


def test_output_file(log_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "lag.txt"
    result = CliRunner().invoke(lag_command, [str(log_folder), "--output", str(out)])
    assert result.exit_code == 0 and result.output == ""
    assert out.read_text().startswith("g-mixed")


GOLDEN = ROOT / "tests" / "golden" / "lag"
GOLDEN_T0 = 1_700_000_000_000


def write_golden_dump(root: Path) -> Path:
    """A 3,000-record dump over 4 ``__consumer_offsets`` partitions as ``make demo`` writes it
    (``spark_udfs.synth``), with the data partitions of topics orders-0..5 (orders-6 and 7 have
    none: lag unknown): 20 batches each, the log end growing by 600 every 250 ms."""
    write_consumer_offsets(root, records=3000, partitions=4, groups=12)
    for topic in range(6):
        for partition in range(12):
            folder = root / f"orders-{topic}-{partition}"
            folder.mkdir()
            with SegmentWriter(folder / "00000000000000000000.log") as w:
                for k in range(20):
                    w.write_batch(
                        [(None, b"x")],
                        base_offset=k * 600 + partition,
                        timestamp=GOLDEN_T0 + k * 250,
                    )
    return root


def _blocks(table: str) -> list[str]:
    """A lag table's blocks, one per group (its line, then its partitions' lines)."""
    blocks: list[str] = []
    for line in table.splitlines():
        if line.startswith("  "):
            blocks[-1] += "\n" + line
        else:
            blocks.append(line)
    return blocks


@pytest.mark.parametrize(
    ("fmt", "args"), [("jsonl", ["--format", "jsonl"]), ("table", ["--window", "3"])]
)
def test_multi_partition_output_is_unchanged(tmp_path: Path, fmt: str, args: list[str]) -> None:
    """The golden output was written before ``lag`` streamed its groups a ``__consumer_offsets``
    partition at a time, by group name: the same groups, to the byte, now in the order of
    their partitions, then by name."""
    dump = write_golden_dump(tmp_path / "dump")
    result = CliRunner().invoke(lag_command, [str(dump), *args])
    assert result.exit_code == 0, result.output
    golden = gzip.decompress((GOLDEN / f"synth.{fmt}.gz").read_bytes()).decode()
    got = result.output.replace(str(dump), "<ROOT>")
    home = {r.group: r.partition for r in group_reports(dump)}
    assert len(set(home.values())) == 4
    if fmt == "jsonl":
        expected = golden.splitlines()
        lines = got.splitlines()
        name = [json.loads(line)["group"] for line in lines]
    else:
        expected = _blocks(golden)
        lines = _blocks(got)
        name = [block.split("  ", 1)[0] for block in lines]
    assert sorted(lines) == sorted(expected)
    assert name == sorted(name, key=lambda g: (home[g], g))
    assert got.endswith("\n") and not got.endswith("\n\n")


def test_groups_come_a_partition_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each __consumer_offsets partition's groups are made once it is read, before the next one
    is read; lag_reports merges them into one list by name."""
    dump = write_golden_dump(tmp_path / "dump")
    home = {r.group: r.partition for r in group_reports(dump)}
    read: list[Path] = []
    original = lag_module._read_commits

    def reading(files: list[Path], *args: Any) -> Any:
        read.extend(files)
        return original(files, *args)

    monkeypatch.setattr(lag_module, "_read_commits", reading)
    chunks = lag_module.lag_chunks(dump, window=3)
    assert read == []  # nothing read before the chunks are taken
    seen: list[list[str]] = []
    for n, chunk in enumerate(chunks):
        assert [f.parent.name for f in read] == [f"__consumer_offsets-{n}"]
        read.clear()
        seen.append([g.group for g in chunk])
        assert {home[g] for g in seen[-1]} == {n}
        assert seen[-1] == sorted(seen[-1])
    assert len(seen) == 4
    merged = lag_reports(dump, window=3)
    assert [g.group for g in merged] == sorted(g for names in seen for g in names)


def test_a_partition_s_groups_are_freed_before_the_next_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the caller drops a chunk, nothing of it is left when the next __consumer_offsets
    partition is read (its commits' columns freed: the memory reused by the next one's), by
    lag_chunks and by the lag command's loop."""
    dump = write_golden_dump(tmp_path / "dump")
    held: list[weakref.ref[Any]] = []
    alive_at_read: list[int] = []
    original = lag_module._read_commits
    made = lag_module._partition_groups

    def reading(files: list[Path], *args: Any) -> Any:
        alive_at_read.append(sum(r() is not None for r in held))
        return original(files, *args)

    def groups(*args: Any) -> list[GroupLag]:
        chunk = made(*args)
        held.extend(weakref.ref(p.columns.offset) for g in chunk for p in g.partitions)
        return chunk

    monkeypatch.setattr(lag_module, "_read_commits", reading)
    monkeypatch.setattr(lag_module, "_partition_groups", groups)
    for chunk in lag_module.lag_chunks(dump, window=3):
        assert chunk
        del chunk
    assert len(alive_at_read) == 4 and held
    assert alive_at_read == [0, 0, 0, 0]
    alive_at_read.clear()
    result = CliRunner().invoke(lag_command, [str(dump), "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    assert alive_at_read == [0, 0, 0, 0]


@pytest.mark.parametrize("seed", range(6))
def test_lags_now_are_each_key_s_exact_difference(seed: int) -> None:
    """Each key's lag now (log end now minus its newest committed offset, never below 0, none
    without a log end) in numpy where no difference can leave int64, else exact: keys without a
    log end among those with one, ends shared, offsets and ends at the int64 ends and
    negative."""
    rnd = np.random.default_rng(seed)
    extreme = np.array([-(2**63), -1, 0, 2**63 - 1], np.int64)
    ends: list[LogEnd | None] = [
        LogEnd([0], [int(rnd.integers(0, 10_000))], "segments", "here", True) for _ in range(3)
    ]
    if seed % 2:  # a log end now at an int64 end
        ends.append(LogEnd([0], [int(rnd.choice(extreme))], "segments", "here", True))
    ends.append(None)
    keys = [ends[int(rnd.integers(0, len(ends)))] for _ in range(int(rnd.integers(1, 40)))]
    newest = rnd.integers(0, 12_000, len(keys))
    if seed % 3 == 2:  # newest offsets at the int64 ends and below 0
        newest[rnd.integers(0, len(keys), max(len(keys) // 3, 1))] = rnd.choice(extreme)
    distinct, numbers = lag_module._numbered(keys)
    assert [distinct[n] if n >= 0 else None for n in numbers.tolist()] == keys
    ends_now = [None if e is None else e.last for e in keys]
    assert lag_module._per_key([e.last for e in distinct], numbers) == ends_now
    got = lag_module._lags_now([e.last for e in distinct], numbers, np.asarray(newest, np.int64))
    want = [
        None if e is None else max(e - n, 0) for e, n in zip(ends_now, newest.tolist(), strict=True)
    ]
    assert got == want and all(type(v) in (int, type(None)) for v in got)


def test_partition_objects_are_the_dataclass_s() -> None:
    """PartitionLag objects made by the engine's slot_objects are those its __init__ makes
    (every field given, no __post_init__), field by field and by identity of each value."""
    from codegen.native import _records

    assert not hasattr(PartitionLag, "__post_init__")
    columns = KeyedCommits.empty()
    rows = [
        ("g", "t", 0, columns, 0, 3, [5], True, 10, "segments: x", 2, "OK", "fine"),
        ("g", "é", 1 << 70, None, 3, 3, [], False, None, None, None, None, ""),
    ]
    PartitionLag(*rows[0])  # the class's __init__ is compiled at its first object
    names = tuple(p for p in PartitionLag.__init__.__code__.co_varnames[1:14])
    assert names == lag_module._PARTITION_FIELDS
    made = _records.slot_objects(
        PartitionLag, lag_module._PARTITION_FIELDS, tuple(zip(*rows, strict=True))
    )
    assert made == [PartitionLag(*row) for row in rows]
    for obj, row in zip(made, rows, strict=True):
        assert type(obj) is PartitionLag
        assert all(getattr(obj, n) is v for n, v in zip(names, row, strict=True))
    assert _records.slot_objects(PartitionLag, ("group",), ([],)) == []
    assert lag_module._partition_objects(tuple(zip(*rows, strict=True))) == made


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((PartitionLag, ("group",)), TypeError, "slot_objects\\(cls, names, columns\\)"),
        ((1, ("group",), ([1],)), TypeError, "a class"),
        ((PartitionLag, ["group"], ([1],)), TypeError, "a class"),
        ((PartitionLag, ("group", "topic"), ([1],)), TypeError, "a class"),
        ((PartitionLag, (), ()), TypeError, "a class"),
        ((PartitionLag, ("history",), ([1],)), TypeError, "not a writable object slot"),
        ((PartitionLag, ("nothing",), ([1],)), TypeError, "not a writable object slot"),
        ((PartitionLag, (7,), ([1],)), TypeError, "not a writable object slot"),
        ((PartitionLag, ("group", "group"), ([1], [2])), ValueError, "named twice"),
        ((PartitionLag, ("group",), (iter([1]),)), TypeError, "not a list or a tuple"),
        ((PartitionLag, ("group", "topic"), ([1], (2, 3))), ValueError, "holds 2 values"),
    ],
)
def test_slot_objects_refuses_what_it_cannot_make(
    args: tuple[Any, ...], error: type[Exception], message: str
) -> None:
    from codegen.native import _records

    with pytest.raises(error, match=message):
        _records.slot_objects(*args)


@pytest.mark.parametrize("seed", range(8))
def test_data_partitions_numbered_are_the_keys(seed: int) -> None:
    """The keys' distinct data partitions (by topics numbered and Arrow's encoding, or by a
    dict where a partition is null or past int32) in the order met, and each key's number
    among them: the keys' (topic, partition) again, topics and partitions repeated across keys,
    partitions at the int32 ends and past them, a null topic."""
    rnd = np.random.default_rng(seed)
    topics: list[Any] = ["orders", "", "ünï", "orders2", "a" * 40]
    partitions: list[Any] = [0, 1, 7, -1, 2**31 - 1, -(2**31)]
    if seed % 4 == 1:
        partitions.append(2**31)  # past int32: by the dict
    if seed % 4 == 2:
        topics.append(None)  # a null topic (its key's log end: none)
    if seed % 4 == 3:
        partitions.append(None)  # by the dict
    n = int(rnd.integers(0, 60))
    keys = [
        (topics[int(rnd.integers(len(topics)))], partitions[int(rnd.integers(len(partitions)))])
        for _ in range(n)
    ]
    data, numbers = lag_module._data_partitions([t for t, _ in keys], [p for _, p in keys])
    assert data == list(dict.fromkeys(keys))
    assert [data[k] for k in numbers.tolist()] == keys
    assert all(type(p) is int for _, p in data if p is not None)


def burrow_rank(status: str | None) -> int:
    """A status's rank, as burrow's group statuses rank it (ERR over WARN over OK over none)."""
    return {None: 0, "WARN": 2, "STOP": 3, "STALL": 3, "REWIND": 3}.get(status, 1)


def test_groups_of_the_reports_are_their_runs() -> None:
    """The reports by group: each run of a group's keys one GroupLag, its status that
    group_status gives of its partitions', its share partitions taken."""
    statuses = [None, "OK", "WARN", "STOP", "STALL", "REWIND"]
    rnd = np.random.default_rng(3)
    reports: list[PartitionLag] = []
    for g in ["", "a", "b", "c", "d", "é"]:
        for p in range(int(rnd.integers(1, 6))):
            status = statuses[int(rnd.integers(len(statuses)))]
            reports.append(PartitionLag(g, "t", p, None, 0, 0, status=status))  # type: ignore[arg-type]
    shares: dict[str, list[Any]] = {"b": [], "zz": []}
    ranks = np.array([burrow_rank(r.status) for r in reports], np.int8)
    got = lag_module._group_lags(reports, ranks, [r.group for r in reports], 5, shares)
    want = [
        (g, burrow_group_status([p.status for p in ps]), [id(p) for p in ps])
        for g, ps in ((g, list(ps)) for g, ps in itertools.groupby(reports, key=lambda r: r.group))
    ]
    assert [(g.group, g.status, [id(p) for p in g.partitions]) for g in got] == want
    assert all(g.now == 5 for g in got) and list(shares) == ["zz"]


@pytest.mark.parametrize("seed", range(4))
def test_worst_of_runs_is_group_status_per_run(seed: int) -> None:
    """worst_of_runs of runs of statuses' ranks: group_status of each run (ERR over WARN over OK
    over none; a status none of Burrow's counts as OK)."""
    rnd = np.random.default_rng(seed)
    statuses = [None, "OK", "WARN", "STOP", "STALL", "REWIND", "other"]
    runs = [
        [statuses[int(rnd.integers(len(statuses)))] for _ in range(int(rnd.integers(1, 5)))]
        for _ in range(int(rnd.integers(1, 30)))
    ]
    flat = [s for run in runs for s in run]
    starts = np.cumsum([0] + [len(run) for run in runs[:-1]])
    rank = {None: 0, "OK": 1, "WARN": 2, "STOP": 3, "STALL": 3, "REWIND": 3, "other": 1}
    assert worst_of_runs(np.array([rank[s] for s in flat], np.int8), starts) == [
        burrow_group_status(run) for run in runs
    ]
    assert burrow_group_status(["OK", "other"]) == "OK"
    assert burrow_group_status([None, "WARN", "STALL"]) == "ERR"
    assert burrow_group_status([None]) is None and burrow_group_status([]) is None


def test_refused_and_newer_commits_are_read_as_groups_reads_them(tmp_path: Path) -> None:
    """A commit refused (a value too short for its version) takes no effect and one of a value
    version newer than the specs does, read as version 4: lag gives the same lines on both
    backends (the engine's check in its pass, the pure backend's decode) and, as groups does
    (whose committed offsets are lag's partitions), says the refused one on stderr with
    ``dump --compacted``'s line and exits 1; the newer one is no error (``dump`` counts it
    apart)."""
    from codegen.dumps.command import dump_command
    from codegen.dumps.views import effects
    from codegen.forensics.groups_command import groups_command
    from codegen.runtime.backends import use_backend
    from tests.commit_rows_data import commit_key, commit_value

    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir()
    rows = [
        (commit_key(1, "g", "t", 0), commit_value(3, offset=10)),
        (commit_key(1, "g", "t", 1), b"\x00\x03\x00"),  # refused: no room for its offset
        (commit_key(1, "g", "t", 2), commit_value(5, offset=30)),  # newer than the specs
        (commit_key(1, "g", "t", 0), commit_value(3, offset=40)),
    ]
    with SegmentWriter(path) as w:
        for n, row in enumerate(rows):
            w.write_batch([row], timestamp=T0 + n, producer_id=-1, producer_epoch=-1)
    dump = CliRunner().invoke(dump_command, [str(tmp_path), "--compacted"])
    (refused, summary) = dump.stderr.splitlines()
    assert refused.startswith("record error: ") and ": offset 1: " in refused, dump.stderr
    assert summary.endswith(", 1 newer than our specs")
    answers = []
    for backend in ("native", "pure"):
        use_backend(backend)
        try:
            assert effects.engine_history() is (backend == "native" and effects.native_enabled())
            lag = CliRunner().invoke(lag_command, [str(tmp_path), "--format", "jsonl"])
            groups = CliRunner().invoke(groups_command, [str(tmp_path), "--format", "jsonl"])
        finally:
            use_backend(None)
        for result in (lag, groups):
            assert (result.exit_code, result.stderr) == (1, refused + "\n"), result.output
        answers.append((lag.stdout, groups.stdout))
    assert answers[0] == answers[1]
    (line,) = answers[0][0].splitlines()
    partitions = json.loads(line)["partitions"]
    assert [(p["partition"], [c["offset"] for c in p["commits"]]) for p in partitions] == [
        (0, [10, 40]),
        (2, [30]),
    ]
    (group,) = answers[0][1].splitlines()
    assert json.loads(group)["committedOffsets"] == len(partitions)
