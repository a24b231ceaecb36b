"""``__consumer_offsets`` rows for the tests of the native commit decoder
(:mod:`codegen.dumps.views.commit_columns`): offset-commit keys and values of every version the
specs have, written with our codecs, and the comparison with the reference decoder."""

from __future__ import annotations

import struct
import uuid

import numpy as np
import pyarrow as pa

from codegen.dumps.decoded import control_record
from codegen.dumps.views import commits, effects
from codegen.dumps.views.commit_columns import (
    native_commit_columns,
    native_commit_flags,
)
from codegen.dumps.views.commit_rows import commit_numbers, single_array
from codegen.dumps.views.commits import commit_keys, decode_commits_reference
from codegen.dumps.views.compaction import flags
from generated.group_metadata_key import GroupMetadataKey
from generated.legacy_offset_commit_key import LegacyOffsetCommitKey
from generated.legacy_offset_commit_value import LegacyOffsetCommitValue
from generated.offset_commit_key import OffsetCommitKey
from generated.offset_commit_value import OffsetCommitValue

Row = tuple[bytes | None, bytes | None, bool | None]
"""(key, value, isControl)."""

TOPIC_ID = uuid.UUID("0b5e3c1a-7d7e-4f6e-9a43-2b8f1c0d9e11")


def commit_key(
    record_type: int = 1, group: str = "g", topic: str = "t", partition: int = 0
) -> bytes:
    cls = LegacyOffsetCommitKey if record_type == 0 else OffsetCommitKey
    return struct.pack(">h", record_type) + cls(
        group=group, topic=topic, partition=partition
    ).encode(0)


def commit_value(
    version: int, record_type: int = 1, metadata: str = "m", offset: int = 7, tags: bytes = b""
) -> bytes:
    """A value of ``version`` (above 4: version 4's bytes, as a newer broker writes them with
    nothing new); ``tags``, when given, replaces a version-4 value's tagged section."""
    if record_type == 0:
        body = LegacyOffsetCommitValue(offset=offset, metadata=metadata, commit_timestamp=5).encode(
            0
        )
    else:
        fields = {"leader_epoch": 3} if version >= 3 else {}
        if version == 1:
            fields["expire_timestamp"] = 99
        if version >= 4:
            fields["topic_id"] = TOPIC_ID
        message = OffsetCommitValue(offset=offset, metadata=metadata, commit_timestamp=5, **fields)
        body = message.encode(min(version, 4))
        if tags and version >= 4:
            body = body[: -(1 + 1 + 1 + 16)] + tags  # the topicId tag was the whole section
    return struct.pack(">h", version) + body


def seeds() -> list[Row]:
    """Rows of every kind: commits of both record types at every value version, newer
    versions, tombstones, other record types, control records, null keys and values."""
    rows: list[Row] = []
    for version in range(0, 7):
        rows.append((commit_key(1, "group-é", "topic", version), commit_value(version), False))
    rows.append((commit_key(0, "legacy", "t", 3), commit_value(0, record_type=0), False))
    rows.append((commit_key(0), commit_value(1, record_type=0), False))  # no legacy v1
    rows.append((commit_key(1), None, False))  # tombstones
    rows.append((commit_key(0), None, False))
    rows.append(
        (commit_key(1), commit_value(4, tags=b"\x02\x05\x02ab\x00\x10" + TOPIC_ID.bytes), False)
    )
    rows.append(
        (struct.pack(">h", 2) + GroupMetadataKey(group="g").encode(0), b"\x00\x03xyz", False)
    )
    rows.append((struct.pack(">h", 99) + b"anything", b"\x00\x00", False))
    rows.append((struct.pack(">h", -1), None, False))
    rows.append((b"\x00\x00\x00\x00\x00\x00", b"\x00\x01\x00\x00\x00", True))  # a control record
    rows.append((None, commit_value(3), False))  # a value without a key
    rows.append((None, None, None))
    rows.append((b"\x00", commit_value(3), False))  # a key too short for its record type
    rows.append((commit_key(1), b"\x00", False))  # a value too short for its version
    rows.append((commit_key(1), struct.pack(">h", -3) + commit_value(3)[2:], False))
    return rows


def arrays(rows: list[Row], large: bool = False) -> tuple[pa.Array, pa.Array, pa.Array]:
    binary = pa.large_binary() if large else pa.binary()
    return (
        pa.array([r[0] for r in rows], binary),
        pa.array([r[1] for r in rows], binary),
        pa.array([r[2] for r in rows], pa.bool_()),
    )


def assert_same_as_reference(
    key: pa.Array | pa.ChunkedArray,
    value: pa.Array | pa.ChunkedArray,
    control: pa.Array | pa.ChunkedArray,
) -> None:
    """The native pass gives the reference's columns (types, values, nulls) and errors."""
    native = native_commit_columns(key, value, control, "generated")
    assert native is not None, "the native engine is not built"
    reference = decode_commits_reference(key, value, control)
    assert native.errors == reference.errors
    assert list(native.columns) == list(reference.columns)
    for name, expected in reference.columns.items():
        got = native.columns[name]
        got.validate(full=True)
        assert got.type == expected.type, name
        assert got.to_pylist() == expected.to_pylist(), name
        assert got.equals(expected), name
    # the flags alone (what the engine's pass reads): the same flags and refused rows
    flags = native_commit_flags(key, value, control, "generated")
    assert flags is not None
    assert flags.errors == reference.errors
    assert list(flags.columns) == ["isTombstone", "isNewerVersion"]
    for name, got in flags.columns.items():
        got.validate(full=True)
        assert got.equals(reference.columns[name]), name
    assert_checked_in_the_pass(key, value, control)


def _record_rows(
    key: pa.Array | pa.ChunkedArray,
    value: pa.Array | pa.ChunkedArray,
    control: pa.Array | pa.ChunkedArray,
) -> pa.Table:
    """The rows as the engine's record columns give them (binary keys and values, each a single
    array as given: sliced ones keep their offset): each seventh row not read (``_error``) and
    each third of a transactional batch, the others plain."""
    n = len(key)

    def binary(column: pa.Array | pa.ChunkedArray) -> pa.Array:
        array = single_array(column)
        return array if array.type == pa.binary() else array.cast(pa.binary())

    return pa.table(
        {
            "_error": pa.array(["cut" if i % 7 == 6 else None for i in range(n)], pa.string()),
            "isControl": single_array(control),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array(range(n), pa.int64()),
            "key": binary(key),
            "value": binary(value),
            "producerId": pa.array([9] * n, pa.int64()),
            "isTransactional": pa.array([i % 3 == 2 for i in range(n)], pa.bool_()),
        }
    )


def assert_checked_in_the_pass(
    key: pa.Array | pa.ChunkedArray,
    value: pa.Array | pa.ChunkedArray,
    control: pa.Array | pa.ChunkedArray,
) -> None:
    """CommitEffects' pass checking each offset commit as it reads it (``add_checked``,
    ``commit_check.h``) finds what the reference decoder's columns tell ``add_records``: each
    row's kind, the newer versions among the commits applied, the commits refused (those read,
    of kinds 1 to 4 but for the check); in history mode the same rows take effect, with the
    reference's committed offsets, commit times and epochs."""
    rows = _record_rows(key, value, control)
    reference = decode_commits_reference(rows.column("key"), rows.column("value"), control)
    decoded, errors = commits._with_columns(rows, reference)
    read = flags(rows.column("_error").is_null())
    commit = commit_keys(rows.column("key"), flags(rows.column("isControl"))) & read
    for history in (False, True):
        checking = effects._engine_type()(history=history)
        checked = effects._add_checked(checking, rows)
        told = effects._engine_type()(history=history)
        numbers = _history_numbers(decoded) if history else ()
        kinds = effects._add_records(told, decoded, *numbers)
        assert checked.kinds.tolist() == kinds.tolist()
        applied = (kinds >= effects.PLAIN_COMMIT) & (kinds <= effects.TRANSACTIONAL_TOMBSTONE)
        newer = flags(decoded.column("isNewerVersion"))
        assert checked.newer == int(np.count_nonzero(newer & applied))
        assert checked.refused == sorted(r for r in errors if commit[r])
        _assert_left(rows, checked, read & ~applied & ~_idle_markers(rows, kinds, read & ~applied))
        # markers of a producer the view holds records of are left to it, every one
        everyone = np.unique(effects.int64_numbers(rows.column("producerId"), -1))
        waited = effects._add_checked(effects._engine_type()(history=history), rows, everyone)
        _assert_left(rows, waited, read & ~applied)
        if history:
            # a COMMIT marker of the transactional rows' producer: they take effect too
            marker = _record_rows(
                pa.array([b"\x00\x00\x00\x01"], pa.binary()),
                pa.array([b"\x00\x00\x00\x00\x00\x00"], pa.binary()),
                pa.array([True]),
            ).set_column(7, "isTransactional", pa.array([True]))
            effects._add_checked(checking, marker)
            marked, _ = commits.decode_commits(marker)
            effects._add_records(told, marked, *_history_numbers(marked))
            assert checking.effect_rows() == told.effect_rows()
            order = np.arange(checking.key_count, dtype=np.int64)
            assert checking.keyed(order) == told.keyed(order)


def _history_numbers(decoded: pa.Table) -> tuple[np.ndarray, ...]:
    """The reference's numbers of decoded rows as history mode's ``add_records`` takes them:
    committed offsets, commit times, epochs (int32, -1 where a value has none) and their
    validity (every one valid: the -1 is the reference's)."""
    committed, times, epochs = commit_numbers(decoded)
    return committed, times, epochs.astype(np.int32), np.ones(len(epochs), np.uint8)


def _idle_markers(rows: pa.Table, kinds: np.ndarray, left: np.ndarray) -> np.ndarray:
    """The markers the pass drops of the rows ``left`` when the view waits on no producer: an
    end-transaction marker that reads without an error (the reference's ``control_record``),
    of a producer with no transactional data row among those left."""
    producers = effects.int64_numbers(rows.column("producerId"), -1)
    control = flags(rows.column("isControl"))
    transactional = flags(rows.column("isTransactional"))
    pending = set(producers[left & transactional & ~control].tolist())
    keys, values = rows.column("key").to_pylist(), rows.column("value").to_pylist()
    idle = np.zeros(rows.num_rows, np.bool_)
    for r in np.nonzero(left & (kinds >= effects.ABORT_MARKER))[0].tolist():
        read_whole = control_record((r, 0, keys[r], values[r])).error is None
        idle[r] = read_whole and int(producers[r]) not in pending
    return idle


def _assert_left(rows: pa.Table, checked: effects.CheckedRows, left: np.ndarray) -> None:
    """The pass's records of the rows it left (``left``: read, not offset commits applied) hold
    what the columns hold of them."""
    at = np.nonzero(left)[0]
    records = checked.left
    assert records.dtype == effects.LEFT_ROW
    assert records["row"].tolist() == at.tolist()
    assert records["kind"].tolist() == checked.kinds[at].tolist()
    assert records["refused"].tolist() == [r in checked.refused for r in at.tolist()]
    for field, column in (("control", "isControl"), ("transactional", "isTransactional")):
        assert records[field].tolist() == flags(rows.column(column))[at].tolist(), field
    for field, column, null in (("producer", "producerId", -1), ("offset", "offset", -1)):
        numbers = effects.int64_numbers(rows.column(column), null)
        assert records[field].tolist() == numbers[at].tolist(), field
    timestamps = effects.int64_numbers(rows.column("timestamp"), 0)
    assert records["timestamp"].tolist() == timestamps[at].tolist()
    for name in ("key", "value"):
        offsets, _ = effects.binary_buffers(rows.column(name))
        starts, sizes = offsets[at], offsets[at + 1] - offsets[at]
        if name == "value":  # -1 for a null value
            sizes = np.where(flags(rows.column(name).is_valid())[at], sizes, -1)
        assert records[f"{name}_start"].tolist() == starts.tolist(), name
        assert records[f"{name}_size"].tolist() == sizes.tolist(), name
