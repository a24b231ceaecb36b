"""The plain commits the native engine finds superseded (codegen.dumps.views.superseded) are
rows the reference reduction drops: dropping them first leaves ``reduce_plain``'s answer row
for row, and the committed offsets of the native backend equal the pure backend's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.dumps.views.commit_rows import commit_rows, commit_rows_by_log
from codegen.dumps.views.committed import CommittedOffsets
from codegen.dumps.views.reduction import reduce_plain
from codegen.dumps.views.superseded import (
    NOT_PLAIN,
    PLAIN_COMMIT,
    PLAIN_TOMBSTONE,
    TRANSACTIONAL_TOMBSTONE,
    native_enabled,
    superseded,
)
from codegen.runtime.backends import use_backend
from tests.test_views_offsets import _decoded, _key, logs, write_log

pytestmark = pytest.mark.skipif(not native_enabled(), reason="the native engine is not built")


def _kinds(rows: pa.Table) -> np.ndarray:
    """Each decoded row's kind, from its commit row (the rows are one commit each)."""
    out = np.full(rows.num_rows, NOT_PLAIN, np.uint8)
    commits = commit_rows(rows)
    offsets = rows.column("offset").to_pylist()
    for row in commits.to_pylist():
        if row["marker"] != -1:
            continue
        i = offsets.index(row["recordOffset"])
        if row["isTransactional"]:
            out[i] = TRANSACTIONAL_TOMBSTONE if row["isTombstone"] else NOT_PLAIN
        else:
            out[i] = PLAIN_TOMBSTONE if row["isTombstone"] else PLAIN_COMMIT
    return out


def _reduced(rows: list[pa.Table]) -> list[dict[str, Any]]:
    tables = [commit_rows(t) for t in rows]
    tables = [t for t in tables if t.num_rows]
    return reduce_plain(pa.concat_tables(tables)).to_pylist() if tables else []


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs, batch_rows=st.sampled_from([1, 3, 1000]), split=st.integers(0, 40))
def test_superseded_rows_are_rows_the_reduction_drops(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int, split: int
) -> None:  # fmt: skip
    """The rows before ``split`` are reduced as they are (an earlier window); those after it
    lose their superseded rows, the transactional tombstones' keys of before given again."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    decoded = _decoded(path, batch_rows)
    before, after = decoded[: split % (len(decoded) + 1)], decoded[split % (len(decoded) + 1) :]
    kept_keys = []
    for rows in before:
        kinds = _kinds(rows)
        kept_keys += [k for k, kind in zip(rows.column("key").to_pylist(), kinds, strict=True)
                      if kind == TRANSACTIONAL_TOMBSTONE]  # fmt: skip
    chunks = [(pa.array(kept_keys, pa.binary()), np.full(len(kept_keys), 3, np.uint8))]
    chunks += [(rows.column("key"), _kinds(rows)) for rows in after]
    dropped = superseded(chunks)
    assert dropped is not None
    assert not dropped[0].any()
    left = [rows.filter(pa.array(~d)) for rows, d in zip(after, dropped[1:], strict=True)]
    assert _reduced(before + left) == _reduced(before + after)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=logs,
    batch_rows=st.sampled_from([1, 3, 1000]),
    reduce_every=st.sampled_from([1, 4, 1 << 18]),
)
def test_committed_offsets_are_those_of_the_pure_backend(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int, reduce_every: int
) -> None:  # fmt: skip
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    decoded = _decoded(path, batch_rows)
    answers = []
    for backend in ("native", "pure"):
        use_backend(backend)
        try:
            offsets = CommittedOffsets(reduce_every=reduce_every)
            for table in decoded:
                offsets.add(table)
            answers.append((offsets.table(), offsets.deleted()))
        finally:
            use_backend(None)
    assert answers[0][0].equals(answers[1][0])
    assert answers[0][1].equals(answers[1][1])


def test_the_later_commit_of_a_key_supersedes_the_one_before() -> None:
    a, b = _key(False, "g", "t", 0), _key(True, "g", "t", 0)  # one key, either record type
    other = _key(False, "g", "t", 1)
    keys = pa.array([a, other, b, a, a, b], pa.binary())
    kinds = np.array([1, 1, 1, 2, 1, 1], np.uint8)  # the 4th a tombstone
    (dropped,) = superseded([(keys, kinds)]) or [None]
    assert dropped is not None
    # the first is superseded by the third; the third stays (before the tombstone), the fifth
    # is superseded by the sixth
    assert dropped.tolist() == [True, False, False, False, True, False]


def test_more_keys_than_the_first_table_holds() -> None:
    # The engine's key table starts at 4,096 slots and grows at half full: 5,000 keys, each
    # committed twice, grow it twice (under make sanitize too). Every first commit is
    # superseded by its key's second, in another chunk for the odd keys.
    keys = [_key(False, "g", "t", p) for p in range(5_000)]
    first = pa.array(keys, pa.binary())
    second = pa.array(keys[::2], pa.binary())
    third = pa.array(keys[1::2], pa.binary())
    ones = [np.ones(len(k), np.uint8) for k in (first, second, third)]
    dropped = superseded(list(zip((first, second, third), ones, strict=True)))
    assert dropped is not None
    assert [d.tolist() for d in dropped] == [[True] * 5_000, [False] * 2_500, [False] * 2_500]


def test_a_transactional_tombstones_key_keeps_its_rows() -> None:
    """Before and after the tombstone: its marker, perhaps not read yet, decides which
    commit it deletes."""
    a, b = _key(False, "g", "t", 0), _key(False, "g", "t", 1)
    keys = pa.array([a, b, a, b, a, a], pa.binary())
    dropped = superseded([(keys, np.array([1, 1, 1, 1, 3, 1], np.uint8))])
    assert dropped is not None
    assert dropped[0].tolist() == [False, True, False, False, False, False]
    earlier = pa.array([a], pa.binary())  # a key kept by an earlier window's tombstone
    dropped = superseded([(earlier, np.array([3], np.uint8)), (keys[:4], np.ones(4, np.uint8))])
    assert dropped is not None
    assert [d.tolist() for d in dropped] == [[False], [False, True, False, False]]


@pytest.mark.parametrize(
    "key",
    [
        b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00\x00",  # a byte after the partition
        b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00",  # short
        b"\x00\x02\x00\x01g\x00\x01t\x00\x00\x00\x00",  # another record type
        b"\x00\x01\xff\xffg\x00\x01t\x00\x00\x00\x00",  # a negative length
    ],
)
def test_a_key_of_another_shape_is_left_to_the_reduction(key: bytes) -> None:
    keys = pa.array([_key(False, "g", "t", 0), key], pa.binary())
    assert superseded([(keys, np.array([1, 1], np.uint8))]) is None
    assert superseded([(keys, np.array([1, 0], np.uint8))]) is not None  # not asked about


def test_the_pure_backend_drops_nothing_here() -> None:
    keys = pa.array([_key(False, "g", "t", 0)] * 2, pa.binary())
    use_backend("pure")
    try:
        assert superseded([(keys, np.array([1, 1], np.uint8))]) is None
    finally:
        use_backend(None)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs, batch_rows=st.sampled_from([1, 3, 1000]), seed=st.randoms(use_true_random=False))
def test_sparks_reduction_step_is_the_reference_in_any_order(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int, seed: Any
) -> None:  # fmt: skip
    """``mapInArrow``'s step: a slice in log order loses its superseded commits first; one
    out of order is reduced as it is; either way ``reduce_plain``'s answer."""
    from spark_udfs.compacted import _reduce_commits

    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    decoded = _decoded(path, batch_rows)
    shuffled = decoded[:]
    seed.shuffle(shuffled)
    for tables in (decoded, shuffled):
        batches = [b for t in tables for b in t.to_batches()]
        got = list(_reduce_commits(iter(batches)))
        assert (pa.Table.from_batches(got).to_pylist() if got else []) == _reduced(tables)


def test_commit_rows_by_log_reduce_each_log_partition_as_the_reference() -> None:
    """Rows of two log partitions interleaved, one in log order and one not: each reduces to
    what reduce_plain makes of all its rows."""
    a, b = _key(False, "g", "t", 0), _key(False, "g", "t", 1)

    def rows(log: int, offsets: list[int], keys: list[bytes]) -> pa.Table:
        n = len(offsets)
        value = pa.array([{"offset": o} for o in offsets])
        union = pa.StructArray.from_arrays([value], ["OffsetCommitValue"])
        key = pa.StructArray.from_arrays(
            [pa.array([{"group": "g", "topic": "t", "partition": k[-1]} for k in keys])],
            ["OffsetCommitKey"],
        )
        return pa.table(
            {
                "topic": pa.array(["__consumer_offsets"] * n),
                "partition": pa.array([log] * n, pa.int32()),
                "offset": pa.array(offsets, pa.int64()),
                "producerId": pa.array([-1] * n, pa.int64()),
                "isTransactional": pa.array([False] * n),
                "isControl": pa.array([False] * n),
                "key": pa.array(keys, pa.binary()),
                "recordName": pa.array(["OffsetCommit"] * n),
                "isTombstone": pa.array([False] * n),
                "decodedKey": key,
                "decodedValue": union,
            }
        )

    first = rows(0, [0, 1, 2, 3], [a, b, a, b])  # log 0 in order
    second = rows(1, [9, 8, 7], [a, a, b])  # log 1 not
    mixed = pa.concat_tables([first.slice(0, 2), second, first.slice(2)])
    got = commit_rows_by_log([mixed])
    assert [t.num_rows for t in got] == [2, 3]  # log 0's two superseded rows left out
    for left, whole in zip(got, (first, second), strict=True):
        assert reduce_plain(left).to_pylist() == reduce_plain(commit_rows(whole)).to_pylist()


def test_many_keys_grow_the_table_and_keep_each_keys_bytes() -> None:
    """More keys than the first table and arena hold (4,096 slots, 64 KiB): each key's second
    commit still supersedes its first and no other."""
    keys = [_key(False, f"group-{i:05d}", "a-topic-name", i % 7) for i in range(12_000)]
    column = pa.array(keys + keys[::-1], pa.binary())
    (dropped,) = superseded([(column, np.ones(len(column), np.uint8))]) or [None]
    assert dropped is not None
    assert dropped.tolist() == [True] * len(keys) + [False] * len(keys)


def _engine_call(chunks: Any) -> Any:
    from codegen.native import _records

    return _records.superseded_commits(chunks)


def _chunk(offsets: list[int], data: bytes, kinds: list[int]) -> tuple[Any, ...]:
    n = len(kinds)
    return (np.array(offsets, np.int32), data, np.array(kinds, np.uint8), np.zeros(n, np.uint8))


@pytest.mark.parametrize(
    ("chunks", "error", "message"),
    [
        (None, TypeError, "a list of chunks"),
        ([(b"", b"")], TypeError, "a chunk is"),
        ([_chunk([0], b"", [1])], ValueError, "disagree"),  # offsets one short
        ([_chunk([0, 13], _key(False, "g", "t", 0), [1])], ValueError, "outside its data"),
        ([_chunk([4, 0], b"\0" * 8, [1])], ValueError, "outside its data"),  # backwards
        ([_chunk([-1, 2], b"\0" * 8, [0])], ValueError, "outside its data"),
        ([_chunk([0, 0], b"", [4])], ValueError, "0, 1, 2 or 3"),
        ([(np.zeros(2, np.int32), b"", np.zeros(1, np.uint8), b"\0")], BufferError, "writable"),
    ],
)
def test_bad_arguments_are_typed_errors(chunks: Any, error: type[Exception], message: str) -> None:
    """Every length is checked before the key bytes are read; ``out`` must be writable."""
    with pytest.raises(error, match=message):
        _engine_call(chunks)
