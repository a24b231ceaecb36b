"""``dump --format table`` by the native printer is the reference's text.

- the cells of a coordinator topic's batches (``record_cells`` of
  ``codegen/native/table_cells.h``) are the reference's (:func:`codegen.dumps.table.
  _record_cells`, the pure backend's path), on the real files in tests/data and on drawn and
  mutated records (errors, unknown and newer records, tombstones, control batches), among
  rows the reference makes (segment errors, single records);
- ``dump --format table`` prints the same bytes, summary and exit code on both backends.

The table's layout (``table_text.h``) is compared with its reference in
tests/test_text_table.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import drawn_coordinator_records
from test_jsonl_native import DUMPED_FOLDERS, assert_dump_same_on_both_backends, coordinator_files

from codegen.dumps import encode_control_batch, encode_record_batch
from codegen.dumps.coordinator import COORDINATOR_TOPICS, decode_batches
from codegen.dumps.json_text import jsontext_module
from codegen.dumps.log_dirs import RowSource
from codegen.dumps.model import ControlType, SegmentError
from codegen.dumps.table import TableRow, _record_cells, _record_columns
from codegen.runtime import backends

DATA = Path(__file__).resolve().parent / "data"
NATIVE = jsontext_module() is not None and backends.requested() != backends.PURE

pytestmark = [
    pytest.mark.native_only,
    pytest.mark.skipif(not NATIVE, reason="the native printer is not built or not asked for"),
]


def _rows(topic: str, data: bytes | str, name: str) -> list[TableRow]:
    """A table's rows as the dump loop gives them: a batch's records at a time, segment errors
    and a record of each batch on its own too."""
    source = RowSource.of(Path(name), topic)
    rows: list[TableRow] = []
    for item in decode_batches(data, topic, name=name):
        if isinstance(item, SegmentError):
            rows.append((item, topic, source))
            continue
        rows.append((item.records, topic, source))
        if item.records:
            rows.append((item.records[-1], topic, None))
    return rows


def _same_cells(rows: list[TableRow]) -> None:
    expected = [list(column) for column in zip(*_record_cells(rows), strict=True)]
    got = _record_columns(rows)
    assert got == (expected or [[] for _ in got])


@pytest.mark.parametrize("path", coordinator_files(), ids=lambda p: str(p.relative_to(DATA)))
def test_native_cells_are_the_reference_on_real_files(path: Path) -> None:
    _same_cells(_rows(path.parent.name.rpartition("-")[0], str(path), str(path)))


@pytest.mark.parametrize("topic", sorted(COORDINATOR_TOPICS))
def test_native_cells_are_the_reference_on_drawn_records(topic: str) -> None:
    """Drawn records, some mutated (a flipped byte, a cut value), and a torn batch after them."""

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        records=drawn_coordinator_records(topic),
        timestamp=st.sampled_from([-1, 0, 1_700_000_000_123, 253_402_300_799_999, 1 << 50]),
    )
    def check(records: list[tuple[bytes | None, bytes | None]], timestamp: int) -> None:
        data = encode_record_batch(
            records * 2, timestamp=timestamp, producer_id=7, transactional=True
        ) + encode_control_batch(ControlType.COMMIT, base_offset=len(records) * 2)
        torn = encode_record_batch(records, base_offset=len(records) * 2 + 1)
        _same_cells(_rows(topic, data + torn[:-3], "00000000000000000000.log"))

    check()


@pytest.mark.parametrize("folder", DUMPED_FOLDERS)
def test_dump_table_is_the_same_on_both_backends(folder: str) -> None:
    assert_dump_same_on_both_backends(folder, "table")
