"""Every record of a coordinator partition by kind (``codegen.forensics.loaded``): the int16 each
key and value starts with read by the engine (``row_heads.h``) and by the reference (numpy
gathers), and the kinds counted from them."""

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


def test_the_engine_reads_the_heads() -> None:
    """The native cases below are the engine's, not the reference's again."""
    with _backend("native"):
        assert loaded.engine_function("int16_heads") is not None
    with _backend("pure"):
        assert loaded.engine_function("int16_heads") is None


rows = st.lists(st.one_of(st.none(), st.binary(max_size=5)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(values=rows, start=st.integers(0, 6), null=st.integers(-3, 3), short=st.integers(-3, 3))
def test_the_engine_reads_each_rows_first_int16_as_the_reference(
    values: list[bytes | None], start: int, null: int, short: int
) -> None:
    column = pa.array(values, pa.binary())[min(start, len(values)) :]  # sliced: offsets
    with _backend("native"):
        native = loaded._heads(column, null, short)
    with _backend("pure"):
        reference = loaded._heads(column, null, short)
    assert native.tolist() == reference.tolist()
    expected = [
        null if v is None else short if len(v) < 2 else int.from_bytes(v[:2], "big", signed=True)
        for v in values[min(start, len(values)) :]
    ]
    assert native.tolist() == expected


def test_int16_heads_checks_its_buffers() -> None:
    ends = np.array([0, 2, 4], np.int32)
    assert np.frombuffer(
        _records.int16_heads(ends, b"\x00\x05\xff\xfe", None, 0, -1, -2), np.int64
    ).tolist() == [5, -2]
    assert np.frombuffer(
        _records.int16_heads(ends, b"\x00\x05\xff\xfe", b"\x02", 0, -1, -2), np.int64
    ).tolist() == [-1, -2]
    with pytest.raises(ValueError, match="outside its data"):
        _records.int16_heads(ends, b"\x00\x05\xff", None, 0, -1, -2)
    with pytest.raises(ValueError, match="bitmap is too short"):
        _records.int16_heads(ends, b"\x00\x05\xff\xfe", b"\x03", 7, -1, -2)
    with pytest.raises(ValueError, match="bitmap is too short"):
        _records.int16_heads(ends, b"\x00\x05\xff\xfe", b"\x03", -1, -1, -2)
    with pytest.raises(ValueError, match="rows \\+ 1"):
        _records.int16_heads(b"\x00\x00", b"", None, 0, -1, -2)
    with pytest.raises(TypeError):
        _records.int16_heads(ends, b"")


@pytest.mark.parametrize("rows", [1, 3, 4, 5, 8, 9])
def test_offsets_that_fall_anywhere_are_refused(rows: int) -> None:
    # row_offsets.h checks four rows a step and the rest one at a time: a fall in either part
    data = bytes(2 * rows)
    rising = np.arange(0, 2 * rows + 1, 2, dtype=np.int32)
    assert len(_records.int16_heads(rising, data, None, 0, -1, -2)) == 8 * rows
    for at in range(1, rows + 1):
        fallen = rising.copy()
        fallen[at] = fallen[at - 1] - 1
        with pytest.raises(ValueError, match="outside its data"):
            _records.int16_heads(fallen, data, None, 0, -1, -2)
    below = rising - 1
    below[1:] = rising[1:]
    with pytest.raises(ValueError, match="outside its data"):
        _records.int16_heads(below, data, None, 0, -1, -2)


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
