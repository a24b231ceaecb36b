"""Decoded records rebuilt from rows of a log partition, for the views to replay.

Spark's ``kafka-log`` source gives one row per record, with the fields of its batch
(``producerId``, ``isTransactional``, ``isControl``, ``batchPosition``) repeated on each.
:func:`log_batches` turns the rows of one partition back into its batches, in offset order,
with their records decoded by the decoder the command line uses
(:class:`codegen.dumps.coordinator.CoordinatorDecoder`, control records by
:func:`codegen.dumps.decoded.control_record`), so a view fed from Spark is fed what
:func:`codegen.dumps.coordinator.decode_batches` feeds it from the files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from codegen.dumps.coordinator import CoordinatorDecoder
from codegen.dumps.decoded import DecodedRecord, control_record

__all__ = [
    "BATCH_COLUMNS",
    "RECORD_COLUMNS",
    "LogBatch",
    "log_batches",
]

RECORD_COLUMNS: Final = (
    "offset",
    "timestampMs",
    "key",
    "value",
    "producerId",
    "isTransactional",
    "isControl",
)
"""The columns :func:`log_batches` reads (``timestampMs``: epoch milliseconds)."""
BATCH_COLUMNS: Final = ("batchPosition",)
"""Where each batch starts in its file, when the rows have it. A batch is a run of rows with
the same position and header fields; two batches of two files at the same position, one right
after the other, read as one, which the views apply alike (what a view does with a batch
depends on its header fields only). Without it each record is a batch of its own."""


@dataclass(slots=True)
class LogBatch:
    """The header fields a view reads, and the batch's decoded records."""

    producer_id: int
    transactional: bool
    control: bool
    records: list[DecodedRecord] = field(default_factory=list)


def log_batches(
    chunks: Iterable[Mapping[str, Sequence[Any]]],
    decoder: CoordinatorDecoder,
    *,
    offset_order: bool = True,
) -> Iterator[LogBatch]:
    """The batches of one partition's rows, given in offset order in chunks (each chunk: name ->
    values, the :data:`RECORD_COLUMNS` and optionally the :data:`BATCH_COLUMNS`; a batch may
    span chunks), each record decoded in the order given. Chunks keep the Python objects of a
    large partition few at a time. ``offset_order=False`` takes rows in a file's order (with
    their batch positions), where offsets need not ascend."""
    current: LogBatch | None = None
    where: tuple[Any, ...] | None = None
    last = -1
    for columns in chunks:
        offsets = columns["offset"]
        producers = columns["producerId"]
        transactional = columns["isTransactional"]
        control = columns["isControl"]
        positions = columns.get("batchPosition")
        rows = zip(offsets, columns["timestampMs"], columns["key"], columns["value"], strict=True)
        for i, (offset, timestamp, key, value) in enumerate(rows):
            if offset < last and offset_order:
                raise ValueError(f"rows out of offset order: {offset} after {last}")
            last = offset
            at = (
                (offset,)
                if positions is None
                else (positions[i], producers[i], transactional[i], control[i])
            )
            if current is None or at != where:
                if current is not None:
                    yield current
                current = LogBatch(producers[i], bool(transactional[i]), bool(control[i]))
                where = at
            current.records.append(
                control_record((offset, timestamp, key, value))
                if current.control
                else decoder.decode(key, value, offset, timestamp)
            )
    if current is not None:
        yield current
