"""The native jsonl printer (``codegen/native/jsontext.c``) prints what the reference prints.

- every plan (:mod:`codegen.dumps.json_text`, one per message and version) prints what orjson
  prints of the generated ``to_json``, on instances drawn by hypothesis;
- a file's lines printed by the native writer are the reference's
  (:meth:`~codegen.dumps.jsonl.JsonlLines.line`, the pure backend's path) byte for byte, on
  the real coordinator-topic files in tests/data and on drawn and mutated records (errors,
  unknown types and versions, newer versions, tombstones, control batches);
- ``dump --format jsonl`` prints the same bytes, summary and exit code on both backends.
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (
    _shipped,
    coordinator_message_classes,
    drawn_coordinator_records,
    instances,
)

from codegen.dumps import encode_control_batch, encode_record_batch
from codegen.dumps.command import dump_command
from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    COORDINATOR_TOPICS,
    decode_batches,
)
from codegen.dumps.decoded import DecodedBatch, DecodedRecord
from codegen.dumps.json_text import jsontext_module, value_plans
from codegen.dumps.jsonl import JsonlLines
from codegen.dumps.model import ControlType, SegmentError
from codegen.runtime import backends

DATA = Path(__file__).resolve().parent / "data"
NATIVE = jsontext_module() is not None and backends.requested() != backends.PURE

pytestmark = [
    pytest.mark.native_only,
    pytest.mark.skipif(not NATIVE, reason="the native printer is not built or not asked for"),
]


def _has_float(cls: type) -> bool:
    message = _shipped()[cls.SPEC_NAME]  # type: ignore[attr-defined]
    return any(f.type.kind == "float64" for s in message.structs for f in s.fields)


@pytest.mark.parametrize("cls", coordinator_message_classes(), ids=lambda c: c.__name__)
def test_plans_print_to_json(cls: type) -> None:
    """A plan prints orjson's text of to_json at its version; a message with no float64 field
    has a plan at every version."""
    message = _shipped()[cls.SPEC_NAME]  # type: ignore[attr-defined]
    module = sys.modules[cls.__module__]
    plans = value_plans(cls)
    versions = list(message.valid_versions.versions())
    if _has_float(cls):
        pytest.skip("float64 fields are printed by the reference encoder")
    assert [v for v in versions if plans[v] is None] == []

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(versions))
        obj = data.draw(instances(message, module, version))
        try:
            expected: bytes | None = orjson.dumps(obj.to_json(version))
        except TypeError:  # lone surrogates, integers past 64 bits: the reference's encoder
            expected = None
        assert plans[version].dumps(obj) == expected

    check()


_PAST_NEWEST_SPEC: Final = {
    "apiKey": 9,
    "type": "coordinator-value",
    "name": "PlanProbeValue",
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "Kept", "type": "int64", "versions": "0+"},
        {"name": "Ended", "type": "string", "versions": "0-2"},
        {"name": "Early", "type": "int32", "versions": "0-1"},
        {
            "name": "Parts",
            "type": "[]Part",
            "versions": "0+",
            "fields": [
                {"name": "Id", "type": "int32", "versions": "0+"},
                {"name": "Old", "type": "int32", "versions": "1-2"},
            ],
        },
        {"name": "Tag", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": 0,
         "default": "-1"},
    ],
}  # fmt: skip


def test_plans_past_the_newest_version(tmp_path: Path, codec_package: Any) -> None:
    """Past a flexible message's newest version (read with that version's reader), the last
    plan prints what to_json prints there: fields whose versions end at the newest are gone,
    in nested structs too. A message not flexible at its newest has no such plan."""
    (tmp_path / "PlanProbeValue.json").write_text(json.dumps(_PAST_NEWEST_SPEC))
    package = codec_package("plan_probe_codecs", [tmp_path])
    cls = package.MESSAGES["PlanProbeValue"]
    part = sys.modules[cls.__module__].Part
    plans = value_plans(cls)
    assert len(plans) == 4 and all(p is not None for p in plans)
    obj = cls(kept=1, ended="e", early=2, parts=[part(id=3, old=4)], tag=5)
    for version in (3, 4, 100):
        assert orjson.loads(plans[-1].dumps(obj)) == {"kept": 1, "parts": [{"id": 3}], "tag": 5}
        assert plans[-1].dumps(obj) == orjson.dumps(obj.to_json(version))
    assert plans[2].dumps(obj) == orjson.dumps(obj.to_json(2))
    from generated.offset_commit_key import OffsetCommitKey

    assert value_plans(OffsetCommitKey)[-1] is None  # not flexible


def test_plans_refuse_what_they_cannot_print() -> None:
    """Values the decoder never makes are left to the reference, not printed differently."""
    from generated.offset_commit_value import OffsetCommitValue

    plan = value_plans(OffsetCommitValue)[3]
    good = OffsetCommitValue(offset=1, leader_epoch=2, metadata='m\u00e9\n"', commit_timestamp=3)
    assert plan.dumps(good) == orjson.dumps(good.to_json(3))
    for bad in (
        OffsetCommitValue(offset=1 << 64),
        OffsetCommitValue(offset=True),
        OffsetCommitValue(metadata="\ud800"),
        OffsetCommitValue(metadata=None),  # type: ignore[arg-type]
    ):
        assert plan.dumps(bad) is None
    assert plan.dumps(object()) is None


def test_plans_print_integers_of_every_width() -> None:
    from generated.offset_commit_value import OffsetCommitValue

    plan = value_plans(OffsetCommitValue)[3]
    widths = [10**k + d for k in range(19) for d in (-1, 0, 1)]
    for n in [0, *widths, *(-w for w in widths), (1 << 63) - 1, -(1 << 63)]:
        obj = OffsetCommitValue(offset=n, commit_timestamp=-n - 1 if n < 0 else n)
        assert plan.dumps(obj) == orjson.dumps(obj.to_json(3)), n


def test_plans_print_uuids() -> None:
    """Uuids print as to_json prints them: the engine's and any exact uuid.UUID read in C, a
    subclass through its own __eq__ and bytes."""
    import uuid

    from generated.offset_commit_value import OffsetCommitValue

    class Equal(uuid.UUID):
        __slots__ = ()

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = uuid.UUID.__hash__

    plan = value_plans(OffsetCommitValue)[4]
    ints = [0, 1, 255, 1 << 64, (1 << 127) + 12345, (1 << 128) - 1]
    decoded = [
        OffsetCommitValue.decode(OffsetCommitValue(topic_id=uuid.UUID(int=n)).encode(4), 4)
        for n in ints
    ]
    drawn = [OffsetCommitValue(topic_id=uuid.UUID(int=n)) for n in ints]
    odd = [OffsetCommitValue(topic_id=Equal(int=5)), OffsetCommitValue(topic_id=Equal(int=0))]
    for obj in [*decoded, *drawn, *odd]:
        assert plan.dumps(obj) == orjson.dumps(obj.to_json(4)), obj.topic_id
    assert b"topicId" not in plan.dumps(odd[0])


def _reference_and_native(topic: str, data: bytes | str, name: str | None = None) -> None:
    """The lines and noted records of every batch, by the native writer and by the reference."""
    fields = {"topic": topic, "partition": 0, "file": name or "f.log"}
    native = JsonlLines(topic, fields)
    reference = JsonlLines(topic, fields)
    reference._writer = None  # the pure backend's path
    assert native._writer is not None
    for item in decode_batches(data, topic, name=name):
        if isinstance(item, SegmentError):
            continue
        noted: list[DecodedRecord] = []
        expected_noted: list[DecodedRecord] = []
        got = native.batch(item.batch, item.records, noted)
        expected = reference.batch(item.batch, item.records, expected_noted)
        assert got == expected
        assert noted == expected_noted


def coordinator_files() -> list[Path]:
    """The coordinator topics' segment files in tests/data."""
    return sorted(
        p for p in DATA.rglob("*.log") if p.parent.name.rpartition("-")[0] in COORDINATOR_TOPICS
    )


def test_real_files_are_there() -> None:
    assert len(coordinator_files()) >= 5


@pytest.mark.parametrize("path", coordinator_files(), ids=lambda p: str(p.relative_to(DATA)))
def test_native_lines_are_the_reference_on_real_files(path: Path) -> None:
    _reference_and_native(path.parent.name.rpartition("-")[0], str(path), str(path))


@pytest.mark.parametrize("topic", sorted(COORDINATOR_TOPICS))
def test_native_lines_are_the_reference_on_drawn_records(topic: str) -> None:
    """Drawn records, some mutated (a flipped byte, a cut value): records, tombstones, errors,
    unknown and newer records and control batches."""

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(records=drawn_coordinator_records(topic))
    def check(records: list[tuple[bytes | None, bytes | None]]) -> None:
        data = encode_record_batch(
            records * 2, timestamp=1_700_000_000_000, producer_id=7, transactional=True
        ) + encode_control_batch(ControlType.COMMIT, base_offset=len(records) * 2)
        _reference_and_native(topic, data)

    check()


def test_native_lines_of_batches_large_and_small() -> None:
    """A batch whose lines pass the writer's starting room (1 MiB) and grow it, then small
    ones, then an empty one: each batch's bytes are the reference's."""
    from generated.offset_commit_key import OffsetCommitKey
    from generated.offset_commit_value import OffsetCommitValue

    def commit(i: int) -> tuple[bytes, bytes]:
        key = OffsetCommitKey(group=f"g{i % 7}", topic="t" * (i % 300), partition=i)
        value = OffsetCommitValue(offset=i, metadata="m" * (i % 500), commit_timestamp=i)
        return b"\x00\x01" + key.encode(0), b"\x00\x03" + value.encode(3)

    big = [commit(i) for i in range(6_000)]
    data = b"".join(
        encode_record_batch(records, base_offset=offset, timestamp=1_700_000_000_000)
        for offset, records in ((0, big), (6_000, big[:3]), (6_003, big[:1]), (6_004, big))
    )
    _reference_and_native(CONSUMER_OFFSETS, data)
    fields = {"topic": CONSUMER_OFFSETS, "partition": 0, "file": "f.log"}
    lines = JsonlLines(CONSUMER_OFFSETS, fields)
    (item,) = decode_batches(encode_record_batch(big[:1]), CONSUMER_OFFSETS)
    assert isinstance(item, DecodedBatch)
    assert lines.batch(item.batch, [], []) == b""
    assert lines.batch(item.batch, item.records, []).count(b"\n") == 1


DUMPED_FOLDERS = [
    "kafka-data/aibulb",
    "kafka-data/ldi-poc",
    "kafka-data/mscaldas-spooldir",
    "dumplog",
]
"""The folders of tests/data whose dump each format prints alike on both backends."""


def assert_dump_same_on_both_backends(folder: str, output: str) -> None:
    """``dump --format output`` of the segments under tests/data/``folder`` prints the same
    bytes, summary and exit code on the native and pure backends (and prints something)."""

    def dump(backend: str) -> tuple[bytes, str, int]:
        paths = [str(p) for p in sorted((DATA / folder).rglob("*.log"))]
        args = [*paths, "--format", output]
        result = CliRunner().invoke(dump_command, args, env={"SPECGEN_BACKEND": backend})
        return result.stdout_bytes, result.stderr, result.exit_code

    native = dump("native")
    assert native[0] and native == dump("pure")


@pytest.mark.parametrize("folder", DUMPED_FOLDERS)
def test_dump_jsonl_is_the_same_on_both_backends(folder: str) -> None:
    assert_dump_same_on_both_backends(folder, "jsonl")


def test_object_arrays_check_what_they_are_given() -> None:
    """The integer rows' printer (lag's commits): its arguments are checked before a row is
    read, and it prints what orjson prints of the same dicts."""
    import numpy as np

    module = jsontext_module()
    assert module is not None
    rows = np.array([0, -1, 2**63 - 1, -(2**63)], np.int64)
    known = np.array([True, False, True, True])
    prefixes = (b'{"a":', b',"b":')
    bounds = np.array([0, 1, 1, 4], np.int64)
    got = module.object_arrays(prefixes, (rows, rows), (None, known), bounds)
    values = rows.tolist()
    objects = [{"a": v, "b": v if k else None} for v, k in zip(values, known.tolist(), strict=True)]
    assert got == [orjson.dumps(objects[a:b]) for a, b in [(0, 1), (1, 1), (1, 4)]]
    # every width, at each power of ten and beside it, both signs
    edges = sorted({s * (10**w + d) for w in range(19) for d in (-1, 0, 1) for s in (1, -1)})
    many = np.array([v for v in edges if -(2**63) <= v < 2**63], np.int64)
    ends = np.array([0, len(many)], np.int64)
    longest = "x" * 28  # a prefix of 32 bytes, the most
    (text,) = module.object_arrays((b'{"' + longest.encode() + b'":',), (many,), (None,), ends)
    assert text == orjson.dumps([{longest: v} for v in many.tolist()])
    # digits of every kind in every place: random values of every width (the printer's blocks
    # of eight digits, their leading zeros dropped or kept), both signs
    rnd = random.Random(7)
    spread = [
        s * rnd.randrange(10 ** (w - 1), 10**w) for w in range(1, 19) for s in (1, -1)
    ] * 50 + [rnd.randrange(-(2**63), 2**63) for _ in range(2_000)]
    column = np.array(spread, np.int64)
    (text,) = module.object_arrays((b'{"v":',), (column,), (None,), np.array([0, len(column)]))
    assert text == orjson.dumps([{"v": v} for v in spread])
    # every number below 10^4 (the digit tables' every entry), alone and as the first digits
    # of a larger one
    quads = np.array([*range(10_000), *(v * 10_000 + 7 for v in range(10_000))], np.int64)
    (text,) = module.object_arrays((b'{"q":',), (quads,), (None,), np.array([0, len(quads)]))
    assert text == orjson.dumps([{"q": v} for v in quads.tolist()])
    # every value of the small values' table (-9999 to 9999: their text and length whole,
    # the sign too) and those beside its ends, in one run and in runs of one row each
    smalls = np.arange(-10_001, 10_002, dtype=np.int64)
    (text,) = module.object_arrays((b'{"s":',), (smalls,), (None,), np.array([0, len(smalls)]))
    assert text == orjson.dumps([{"s": v} for v in smalls.tolist()])
    singles = module.object_arrays(
        (b'{"s":',), (smalls,), (None,), np.arange(len(smalls) + 1, dtype=np.int64)
    )
    assert singles == [orjson.dumps([{"s": v}]) for v in smalls.tolist()]
    # the digits above the last eight kept while they repeat: values sharing them, of either
    # sign, one after another, and changing them by one
    tops = [1_700_000_001_517, -1_700_000_001_517, 1_700_000_001_518, 1_700_099_999_999]
    tops += [1_700_100_000_000, 10**8, -(10**8), 10**8 - 1, 2**63 - 1, -(2**63), -(2**63) + 1]
    tops += [2**63 - 2, 10**16, 10**16 + 7, 99_999_999_00_000_001]
    (text,) = module.object_arrays(
        (b'{"t":',), (np.array(tops, np.int64),), (None,), np.array([0, len(tops)])
    )
    assert text == orjson.dumps([{"t": v} for v in tops])
    # six fields (lag's commits: the fields' loop unrolled), two with masks, in runs empty,
    # short and long (the buffer grown within a run: 300 rows' room passes its first 64 KiB)
    six = [column[k : k + 300] for k in range(0, 1800, 300)]
    names = ("r", "t", "o", "e", "l", "g")
    masks = (None, None, None, None, six[4] % 3 != 0, six[5] % 2 != 0)
    cuts = np.array([0, 0, 1, 64, 65, 200, 200, 300], np.int64)
    texts = module.object_arrays(
        tuple((b"{" if i == 0 else b",") + orjson.dumps(n) + b":" for i, n in enumerate(names)),
        tuple(six),
        masks,
        cuts,
    )
    dicts = [
        {
            n: (None if m is not None and not m[row] else int(c[row]))
            for n, c, m in zip(names, six, masks, strict=True)
        }
        for row in range(300)
    ]
    assert texts == [orjson.dumps(dicts[a:b]) for a, b in itertools.pairwise(cuts.tolist())]
    # the unrolled counts without any mask (six: every log end known; four: lag's commits
    # without log ends) and four with one (a mask clear in some rows before the folded tail)
    header = tuple((b"{" if i == 0 else b",") + orjson.dumps(n) + b":" for i, n in enumerate(names))
    for some, mask in [(6, None), (4, None), (4, six[5] % 2 != 0)]:
        given = [None, mask, None, None, None, None]
        given[some:] = [np.zeros(300, np.bool_)] * (6 - some)  # null in every row: folded
        texts = module.object_arrays(header, tuple(six), tuple(given), cuts)
        dicts = [
            {
                n: None
                if (i >= some or (i == 1 and mask is not None and not mask[row]))
                else int(six[i][row])
                for i, n in enumerate(names)
            }
            for row in range(300)
        ]
        assert texts == [orjson.dumps(dicts[a:b]) for a, b in itertools.pairwise(cuts.tolist())]
    # masks set in every row (read as none) and clear in every row: the trailing fields null
    # in every row printed as one tail while it fits in 32 bytes (lag's commits without log
    # ends), the others each by its mask; runs of 0 to 70 rows (the masks' 64-byte words)
    for clear, kept in [((4, 5), ()), ((3, 4, 5), ()), ((0, 4), (1,)), ((5,), (0, 3))]:
        for length in (0, 1, 63, 64, 65, 70):
            cols = tuple(c[:length] for c in six)
            folded = tuple(
                np.zeros(length, np.bool_)
                if i in clear
                else (np.ones(length, np.bool_) if i in kept else None)
                for i in range(6)
            )
            names_long = ("r", "t", "o", "e", "l" * 20, "g") if clear == (3, 4, 5) else names
            pre = tuple(
                (b"{" if i == 0 else b",") + orjson.dumps(n) + b":"
                for i, n in enumerate(names_long)
            )
            whole = np.array([0, length], np.int64)
            (text,) = module.object_arrays(pre, cols, folded, whole)
            expected = [
                {n: (None if i in clear else int(cols[i][row])) for i, n in enumerate(names_long)}
                for row in range(length)
            ]
            assert text == orjson.dumps(expected)
    # every field null in every row: each row the tail alone
    nulls = tuple(np.zeros(3, np.bool_) for _ in range(2))
    (text,) = module.object_arrays(prefixes, (rows[:3], rows[:3]), nulls, np.array([0, 3]))
    assert text == orjson.dumps([{"a": None, "b": None}] * 3)
    bad = [
        ((prefixes, (rows,), (None,), bounds), ValueError),  # fewer columns than prefixes
        ((prefixes, (rows, rows[:3]), (None, None), bounds), ValueError),  # lengths differ
        ((prefixes, (rows, rows), (None, known[:3]), bounds), ValueError),  # a short mask
        ((prefixes, (rows, rows.astype(np.int32)), (None, None), bounds), ValueError),
        ((prefixes, (rows, rows), (None, None), np.array([0, 5], np.int64)), ValueError),
        ((prefixes, (rows, rows), (None, None), np.array([2, 1], np.int64)), ValueError),
        ((prefixes, (rows, rows), (None, None), np.array([-1, 1], np.int64)), ValueError),
        ((prefixes, (rows, rows), (None, None), np.zeros(0, np.int64)), ValueError),
        (((b"{", "not bytes"), (rows, rows), (None, None), bounds), TypeError),
        (((b"{",) * 17, (rows,) * 17, (None,) * 17, bounds), ValueError),
        (((b"{" + b" " * 32, b","), (rows, rows), (None, None), bounds), ValueError),  # 33 bytes
        ((prefixes, [rows, rows], (None, None), bounds), TypeError),
    ]
    for args, error in bad:
        with pytest.raises(error):
            module.object_arrays(*args)


def test_object_arrays_print_lag_commits_and_pieces_of_every_size() -> None:
    """The rows' constant pieces copied as 16, 32 or 48 bytes (the least that holds each) print
    what orjson prints: lag's commits (their pieces' sizes and lengths constants: with log ends
    masked, all known, and none, folded into the tail) and prefixes, heads and tails beside
    each size's end; numbers of every width in them, millisecond times sharing their top digits
    in runs (the times' field asked first for the kept top digits, any other value there too),
    and a kept top next to the int64 ends (a negative value never takes a positive one's top
    digits)."""
    import numpy as np

    from codegen.forensics import commits, lag_json

    module = jsontext_module()
    assert module is not None
    rnd = random.Random(11)
    n = 2_000
    edges = sorted({s * (10**w + d) for w in range(19) for d in (-1, 0, 1) for s in (1, -1)})
    edges = [v for v in edges if -(2**63) <= v < 2**63] + [-(2**63)]
    times = sorted(1_700_000_000_000 + rnd.randrange(0, 3 * 10**8) for _ in range(n))
    ends = [2**63 - 1, -(2**63), -(2**63) + 1, 2**63 - 10**8, -(2**63) + 10**8 - 1]
    ends += [9_223_372_036_799_999_999, 9_223_372_036_800_000_000, -(2**63), 10**8]
    ends += [0, -1, 7, 12_345_678, -12_345_678, 1_700_000_000_000]  # times' column: any value
    columns = (
        np.array([rnd.choice(edges) for _ in range(n)], np.int64),
        np.array([5, -1, *times[: n - len(ends) - 2], *ends], np.int64),
        np.array([rnd.randrange(0, 10**6) for _ in range(n)], np.int64),
        np.array([rnd.choice([-1, *range(10)]) for _ in range(n)], np.int64),
        np.array([rnd.choice(edges) for _ in range(n)], np.int64),
        np.array([rnd.randrange(-(2**63), 2**63) for _ in range(n)], np.int64),
    )
    cuts = np.array([0, 0, 1, 7, 700, 1_999, n], np.int64)

    def objects(keys: tuple[str, ...], masks: tuple[Any, ...]) -> list[dict[str, int | None]]:
        return [
            {
                k: None if m is not None and not m[row] else int(c[row])
                for k, c, m in zip(keys, columns, masks, strict=True)
            }
            for row in range(n)
        ]

    def printed(prefixes: tuple[bytes, ...], keys: tuple[str, ...], masks: tuple[Any, ...]) -> None:
        texts = module.object_arrays(prefixes, columns, masks, cuts)
        dicts = objects(keys, masks)
        assert texts == [orjson.dumps(dicts[a:b]) for a, b in itertools.pairwise(cuts.tolist())]

    known = np.array([rnd.random() < 0.8 for _ in range(n)])
    assert lag_json._COMMIT_PREFIXES[0] == b'{"recordOffset":'
    for log_ends in (known, np.ones(n, np.bool_), np.zeros(n, np.bool_)):
        masks = (None, None, None, None, log_ends, log_ends)
        printed(lag_json._COMMIT_PREFIXES, commits.COMMIT_FIELDS, masks)
    # keys whose prefixes are 15 to 18 and 31 to 32 bytes long (the head one more), six fields
    # and four with two folded into a tail of 16 or 17 bytes
    for width in (15, 16, 17, 18, 31, 32):
        keys = tuple(f"{i}".ljust(width - 4, "k") for i in range(6))
        prefixes = tuple(
            (b"{" if i == 0 else b",") + orjson.dumps(k) + b":" for i, k in enumerate(keys)
        )
        assert {len(p) for p in prefixes} == {width}
        printed(prefixes, keys, (None,) * 6)
        printed(prefixes, keys, (None, None, None, None, known, known))
    for tail_key in ("g" * 7, "g" * 8):  # the folded tail ',"ggggggg":null}': 16 and 17 bytes
        keys = ("r", "t", "o", "e", "l", tail_key)
        prefixes = tuple(
            (b"{" if i == 0 else b",") + orjson.dumps(k) + b":" for i, k in enumerate(keys)
        )
        clear = np.zeros(n, np.bool_)
        printed(prefixes, keys, (None, None, None, None, None, clear))
