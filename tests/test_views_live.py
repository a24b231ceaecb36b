"""The live records from columns (``codegen.dumps.views.live``, what ``downgrade-check`` judges)
against the record-by-record view (``codegen.forensics.coordinator_partitions.LiveRecords``), on real
segments with commits, tombstones, group records and transactions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_views_offsets import logs, write_log

from codegen.dumps.arrow import record_batches
from codegen.dumps.coordinator import coordinator_decoder, decode_batches
from codegen.dumps.views.live import LiveKeys
from codegen.forensics.coordinator_partitions import LiveRecords


def _record_view(path: Path) -> list[Any]:
    view = LiveRecords(0).add_batches(decode_batches(path))
    assert isinstance(view, LiveRecords)
    return sorted(view.live.values(), key=lambda r: r.offset)


def _column_view(path: Path, batch_rows: int, reduce_every: int) -> list[Any]:
    keys = LiveKeys(reduce_every=reduce_every)
    for rb in record_batches(path, batch_rows=batch_rows):
        keys.add(rb)
    view = LiveRecords(0)
    view.take_live(keys.table(), coordinator_decoder("__consumer_offsets"))
    return sorted(view.live.values(), key=lambda r: r.offset)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=logs,
    batch_rows=st.sampled_from([1, 4, 1000]),
    reduce_every=st.sampled_from([1, 3, 1 << 18]),
)
def test_live_records_from_columns_equal_the_record_view(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int, reduce_every: int
) -> None:  # fmt: skip
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    assert _column_view(path, batch_rows, reduce_every) == _record_view(path)


def test_a_real_dump_has_the_same_live_records() -> None:
    folder = Path(__file__).parent / "data" / "kafka-data" / "aibulb" / "__consumer_offsets-0"
    (segment,) = sorted(folder.glob("*.log"))[:1]
    expected = _record_view(segment)
    assert expected and _column_view(segment, 100, 50) == expected
