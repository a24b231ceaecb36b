"""Every record of a coordinator partition by kind (``codegen.forensics.loaded``): the int16 each
key and value starts with, and the kinds counted from them, by the engine in one pass
(``record_kinds.h``) and by the reference (numpy gathers)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_views_offsets import logs_with_groups, write_log

from codegen.dumps.arrow import record_batches
from codegen.dumps.coordinator import coordinator_decoder
from codegen.forensics import loaded
from codegen.forensics.loaded import LoadedPartition
from codegen.native import _records
from codegen.runtime.backends import use_backend


@contextmanager
def _backend(name: str) -> Iterator[None]:
    use_backend(name)
    try:
        yield
    finally:
        use_backend(None)


def test_the_engine_counts_the_kinds() -> None:
    """The native cases below are the engine's, not the reference's again."""
    with _backend("native"):
        assert loaded.engine_function("record_kinds") is not None
    with _backend("pure"):
        assert loaded.engine_function("record_kinds") is None


def _code(record_type: int, version: int) -> int:
    return (record_type + 32768) * 65536 + version + 32768


cells = st.one_of(st.none(), st.binary(max_size=3), st.sampled_from([b"\xff\xff", b"\x00\x01x"]))
rows = st.lists(st.tuples(cells, cells, st.booleans()), max_size=60)


@settings(max_examples=300, deadline=None)
@given(rows=rows, key_start=st.integers(0, 9), value_start=st.integers(0, 9))
def test_the_engine_counts_each_chunks_kinds_as_the_reference(
    rows: list[tuple[bytes | None, bytes | None, bool]], key_start: int, value_start: int
) -> None:
    # key and value sliced apart (their own offsets into their buffers and bitmaps)
    keys = pa.array([None] * key_start + [k for k, _, _ in rows], pa.binary())[key_start:]
    values = pa.array([None] * value_start + [v for _, v, _ in rows], pa.binary())[value_start:]
    rb = pa.RecordBatch.from_arrays([keys, values], ["key", "value"])
    counted = np.array([c for _, _, c in rows], np.bool_)
    with _backend("native"):
        native = loaded._kinds_in(rb, counted)
    with _backend("pure"):
        reference = loaded._kinds_in(rb, counted)
    assert native == reference

    def head(cell: bytes | None, null: int, short: int) -> int:
        if cell is None:
            return null
        return short if len(cell) < 2 else int.from_bytes(cell[:2], "big", signed=True)

    expected: dict[int, list[int]] = {}
    for i, (k, v, c) in enumerate(rows):
        if c:
            code = _code(head(k, -1, -1), head(v, -1, -2))
            expected.setdefault(code, [code, i, 0])[2] += 1
    assert native == [tuple(expected[c]) for c in sorted(expected)]


def _record_kinds(offsets: Any, data: Any, validity: Any = None, bit: int = 0) -> Any:
    """record_kinds of two rows whose keys are these and whose values are 5 and -2."""
    value_ends = np.array([0, 2, 4], np.int32)
    return _records.record_kinds(
        offsets, data, value_ends, b"\x00\x05\xff\xfe", np.ones(2, np.uint8), validity, bit, None, 0
    )


def test_record_kinds_checks_its_buffers() -> None:
    ends = np.array([0, 2, 4], np.int32)
    data = b"\x00\x05\xff\xfe"
    assert _record_kinds(ends, data) == [(_code(-2, -2), 1, 1), (_code(5, 5), 0, 1)]
    assert _record_kinds(ends, data, b"\x02") == [(_code(-2, -2), 1, 1), (_code(-1, 5), 0, 1)]
    assert _record_kinds(np.array([0, 1, 1], np.int32), data) == [
        (_code(-1, -2), 1, 1),
        (_code(-1, 5), 0, 1),
    ]
    with pytest.raises(ValueError, match="outside its data"):
        _record_kinds(ends, b"\x00\x05\xff")
    with pytest.raises(ValueError, match="bitmap is too short"):
        _record_kinds(ends, data, b"\x03", 7)
    with pytest.raises(ValueError, match="bitmap is too short"):
        _record_kinds(ends, data, b"\x03", -1)
    with pytest.raises(ValueError, match="outside its data"):
        _record_kinds(b"\x00\x00", b"")
    with pytest.raises(TypeError):
        _records.record_kinds(ends, b"")


@pytest.mark.parametrize("rows", [1, 3, 4, 5, 8, 9])
def test_offsets_that_fall_anywhere_are_refused(rows: int) -> None:
    # row_offsets.h checks four rows a step and the rest one at a time: a fall in either part
    data = bytes(2 * rows)
    rising = np.arange(0, 2 * rows + 1, 2, dtype=np.int32)
    counted = np.ones(rows, np.uint8)

    def kinds(key_offsets: Any) -> Any:
        return _records.record_kinds(key_offsets, data, rising, data, counted, None, 0, None, 0)

    assert kinds(rising) == [(_code(0, 0), 0, rows)]
    for at in range(1, rows + 1):
        fallen = rising.copy()
        fallen[at] = fallen[at - 1] - 1
        with pytest.raises(ValueError, match="outside its data"):
            kinds(fallen)
    below = rising - 1
    below[1:] = rising[1:]
    with pytest.raises(ValueError, match="outside its data"):
        kinds(below)


def _kinds(path: Path, batch_rows: int) -> list[Any]:
    decoder = coordinator_decoder("__consumer_offsets")
    partition = LoadedPartition("__consumer_offsets", 0)
    for rb in record_batches(path, batch_rows=batch_rows):
        partition.add(rb, decoder)
    return [partition.records, partition.first_control_offset, partition.in_log_order()]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs_with_groups, batch_rows=st.sampled_from([1, 4, 1000]))
def test_the_kinds_counted_by_the_engine_are_the_references(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int
) -> None:
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    with _backend("native"):
        native = _kinds(path, batch_rows)
    with _backend("pure"):
        assert native == _kinds(path, batch_rows)


@pytest.mark.parametrize("distinct", [1, 3, 64, 65, 300])
def test_the_kinds_of_a_chunk_are_numpys_unique(distinct: int) -> None:
    codes = np.random.default_rng(distinct).integers(0, distinct, 5000) * 65536 + 7
    expected = np.unique(codes, return_index=True, return_counts=True)
    assert [a.tolist() for a in loaded._kinds_of(codes)] == [a.tolist() for a in expected]
