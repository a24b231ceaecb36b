"""The live records from columns (``codegen.dumps.views.live``, what ``downgrade-check`` judges),
by the engine (``live_keys.h``) and by the reference, against the record-by-record view
(``codegen.forensics.coordinator_partitions.LiveRecords``), on real segments with commits,
tombstones, group records and transactions."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from downgrade_logs import key
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_views_offsets import logs_with_groups, write_log

from codegen.dumps.arrow import record_batches
from codegen.dumps.coordinator import CoordinatorDecoder, coordinator_decoder, decode_batches
from codegen.dumps.views.effects import kinds_of
from codegen.dumps.views.live import LiveColumns, LiveKeys
from codegen.forensics.coordinator_partitions import LiveRecord, LiveRecords, scan_partition
from codegen.forensics.loaded import group_of
from codegen.runtime.backends import use_backend


def _record_view(path: Path) -> list[Any]:
    view = LiveRecords(0).add_batches(decode_batches(path))
    assert isinstance(view, LiveRecords)
    return sorted(view.live.values(), key=lambda r: r.offset)


def _column_view(path: Path, batch_rows: int, reduce_every: int, native: bool) -> list[Any]:
    keys = LiveKeys(reduce_every=reduce_every, native=native)
    for rb in record_batches(path, batch_rows=batch_rows):
        keys.add(rb)
    view = LiveRecords(0)
    assert keys.complete
    view.take_live(keys.records(), coordinator_decoder("__consumer_offsets"))
    return sorted(view.live.values(), key=lambda r: r.offset)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=logs_with_groups,
    batch_rows=st.sampled_from([1, 4, 1000]),
    reduce_every=st.sampled_from([1, 3, 1 << 18]),
)
def test_live_records_from_columns_equal_the_record_view(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int, reduce_every: int
) -> None:  # fmt: skip
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    expected = _record_view(path)
    assert _column_view(path, batch_rows, reduce_every, native=True) == expected
    assert _column_view(path, batch_rows, reduce_every, native=False) == expected


def test_the_engine_reads_the_live_records() -> None:
    """The native case above is the engine's, not the reference's again."""
    assert LiveKeys(native=True).native
    assert not LiveKeys(native=False).native


def test_rows_out_of_log_order_are_read_by_the_reference(tmp_path: Path) -> None:
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    steps = [("commit", k % 4, False, 3, k, None, False) for k in range(12)]
    steps += [("group", "g1", 4, 7), ("commit", 1, False, 3, 99, 7, True), ("end", 7, 1)]
    write_log(path, steps)
    backwards = list(reversed(list(record_batches(path, batch_rows=5))))
    keys = LiveKeys(native=True)
    for rb in backwards:
        keys.add(rb)
    assert not keys.complete
    with pytest.raises(ValueError, match="out of log order"):
        keys.records()
    decoder = coordinator_decoder("__consumer_offsets")
    view = scan_partition("__consumer_offsets", 0, lambda: iter(backwards), decoder)
    assert sorted(view.live.values(), key=lambda r: r.offset) == _record_view(path)


def _rows_of(columns: tuple[bytes, bytes, bytes, bytes]) -> list[tuple[int, int, bytes]]:
    """The engine's live() columns as (offset, value version, key) rows."""
    offsets, versions, key_offsets, key_data = columns
    ends = np.frombuffer(key_offsets, np.int32).tolist()
    keys = [key_data[a:b] for a, b in itertools.pairwise(ends)]
    numbers = zip(
        np.frombuffer(offsets, np.int64).tolist(),
        np.frombuffer(versions, np.int32).tolist(),
        strict=True,
    )
    return [(o, v, k) for (o, v), k in zip(numbers, keys, strict=True)]


def test_the_engine_checks_its_buffers() -> None:
    from codegen.native import _records

    engine = _records.LiveKeys()
    offsets = np.array([0, 4], np.int32)
    one = np.ones(1, np.int64)
    kinds = np.ones(1, np.uint8)
    with pytest.raises(ValueError, match="outside its data"):
        engine.add(offsets, b"abc", offsets, b"abcd", kinds, one, one)
    with pytest.raises(ValueError, match="0 to 6"):
        engine.add(offsets, b"abcd", offsets, b"abcd", kinds * 7, one, one)
    with pytest.raises(ValueError, match="one length"):
        engine.add(offsets, b"abcd", offsets, b"abcd", kinds, one, np.ones(2, np.int64))
    with pytest.raises(TypeError):
        engine.add(offsets, b"abcd")
    assert engine.add(offsets, b"abcd", offsets, b"\x00\x05xy", kinds, one, one)
    assert _rows_of(engine.live()) == [(1, 5, b"abcd")]


def test_a_real_dump_has_the_same_live_records() -> None:
    folder = Path(__file__).parent / "data" / "kafka-data" / "aibulb" / "__consumer_offsets-0"
    (segment,) = sorted(folder.glob("*.log"))[:1]
    expected = _record_view(segment)
    assert expected and _column_view(segment, 100, 50, native=True) == expected
    assert _column_view(segment, 100, 50, native=False) == expected


def _odd_keys() -> list[tuple[str, bytes]]:
    commit = key("OffsetCommitKey", group="g", topic="t", partition=3)
    return [
        ("__consumer_offsets", commit),
        ("__consumer_offsets", commit + b"after"),  # bytes after a key are no part of it
        ("__consumer_offsets", commit[:-2]),  # cut short: does not decode
        ("__consumer_offsets", key("LegacyOffsetCommitKey", group="", topic="t", partition=0)),
        ("__consumer_offsets", key("ConsumerGroupMetadataKey", group_id="cg")),
        ("__consumer_offsets", key("ConsumerGroupMemberMetadataKey", group_id="m", member_id="x")),
        ("__consumer_offsets", b"\x00\x02"),  # a type alone
        ("__consumer_offsets", b"\x00"),  # no type
        ("__consumer_offsets", b"\xff\xffabc"),  # type -1
        ("__consumer_offsets", b"\x7f\x00abc"),  # a type our specs lack
        ("__transaction_state", key("TransactionLogKey", transactional_id="tx")),
        (
            "__share_group_state",
            key("ShareSnapshotKey", group_id="s", topic_id=uuid.uuid4(), partition=1),
        ),
    ]


@pytest.mark.parametrize("backend", ["native", "pure"])
def test_live_keys_are_decoded_as_decode_key_and_group_of_read_each(backend: str) -> None:
    use_backend(backend)
    try:
        for topic in ("__consumer_offsets", "__transaction_state", "__share_group_state"):
            decoder = CoordinatorDecoder(topic)
            keys = [k for t, k in _odd_keys() if t == topic]
            live = [(10 + i, i - 1, k) for i, k in enumerate(keys)]
            columns = LiveColumns(
                np.array([o for o, _, _ in live], np.int64),
                np.array([v for _, v, _ in live], np.int32),
                pa.array(keys, pa.binary()),
            )
            view = LiveRecords(7)
            view.take_live(columns, decoder)
            expected = {}
            for offset, version, k in live:
                rtype, name, key_obj = decoder.decode_key(k)
                group = group_of(key_obj)
                expected[k] = LiveRecord(7, offset, rtype, name or "unknown", version, group)
            assert list(view.live.items()) == list(expected.items())
            assert type(next(iter(view.live.values()))) is LiveRecord
    finally:
        use_backend(None)


def test_odd_keys_are_odd() -> None:
    """The keys above hold what they say: groups, keys that do not decode, unknown types."""
    decoder = CoordinatorDecoder("__consumer_offsets")
    found = [decoder.decode_key(k) for t, k in _odd_keys() if t == "__consumer_offsets"]
    assert [group_of(k) for _, _, k in found] == [
        "g",
        "g",
        None,
        "",
        "cg",
        "m",
        None,
        None,
        None,
        None,
    ]
    assert [t for t, _, _ in found] == [1, 1, 1, 0, 3, 5, 2, -1, -1, 32512]


@pytest.mark.parametrize("gap", [1, 1 << 12, 1 << 25, 1 << 45])
def test_the_engines_live_records_are_by_offset(gap: int) -> None:
    # keys written again in a shuffled order, the offsets apart by up to `gap` (one radix pass
    # of 11 bits, two, three, five): live() has each key's last record, by offset
    from codegen.native import _records

    rng = np.random.default_rng(gap)
    writes = rng.integers(0, 300, 2000)
    offsets = np.cumsum(rng.integers(1, gap + 1, len(writes))).astype(np.int64) - 1
    keys = [b"key-%d" % w for w in writes]
    ends = np.cumsum([0] + [len(k) for k in keys]).astype(np.int32)
    values = np.arange(0, 2 * len(keys) + 1, 2, dtype=np.int32)
    engine = _records.LiveKeys()
    kinds = np.ones(len(keys), np.uint8)
    producers = np.full(len(keys), -1, np.int64)
    value_data = b"".join(int(w).to_bytes(2, "big") for w in writes)
    assert engine.add(ends, b"".join(keys), values, value_data, kinds, producers, offsets)
    last = {k: (int(o), int(w)) for k, o, w in zip(keys, offsets, writes, strict=True)}
    assert _rows_of(engine.live()) == sorted((o, w, k) for k, (o, w) in last.items())


def test_kinds_of_every_flag_and_marker() -> None:
    # 0 passed over, 1 plain record, 2 plain tombstone, 3 and 4 transactional, 5 ABORT, 6 COMMIT
    cases = list(itertools.product([False, True], [False, True], [False, True], [-1, 0, 1]))
    record, transactional, tombstone, marker = (np.array(c) for c in zip(*cases, strict=True))
    kinds = kinds_of(record, transactional, tombstone, marker.astype(np.int8))
    assert kinds.dtype == np.uint8
    expected = [5 + m if m >= 0 else (1 + b + 2 * t if r else 0) for r, t, b, m in cases]
    assert kinds.tolist() == expected
