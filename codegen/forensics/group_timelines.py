"""A partition's group timelines (:mod:`codegen.forensics.groups`): the events its records made,
in the order they took effect, and the committed offsets tombstones deleted, which stay the
columns of :meth:`codegen.dumps.views.committed.CommittedOffsets.deleted` until read.

Read as events (:meth:`Timelines.events`, :meth:`Timelines.of`), the two are merged by
offset, a record's events before the deletions at the same offset, each in the order found:
the reference, which the table, the HTML report and Spark read. ``groups --format jsonl``
prints them from the deletion columns and the record events in one pass instead
(:mod:`codegen.forensics.groups_json`).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.slotted import Slotted

__all__ = ["OFFSET_DELETED", "EventRow", "GroupEvent", "Timelines"]

OFFSET_DELETED: Final = "offset-deleted"
"""The kind of a deleted committed offset's event."""


class GroupEvent(Slotted):
    partition: int
    offset: int
    timestamp: int
    group: str
    kind: str
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The event as a group's timeline lists it (its group and partition are the
        group's). ``detail`` holds JSON values already: shared, not copied."""
        return {
            "offset": self.offset,
            "timestamp": self.timestamp,
            "kind": self.kind,
            "detail": self.detail,
        }


EventRow = tuple[int, int, str, str, dict[str, Any]]
"""A record's event not yet made a :class:`GroupEvent`: offset, timestamp, group, kind, detail
(the partition is its timelines')."""


class Timelines:
    """The events of one partition's groups: ``records`` (the events of its records, appended
    as they take effect: as rows to :attr:`rows`, made events when read) and the deleted
    committed offsets given to :meth:`add_deleted`."""

    def __init__(self, partition: int, records: list[GroupEvent] | None = None) -> None:
        self.partition = partition
        self._records: list[GroupEvent] = [] if records is None else records
        self.rows: list[EventRow] = []
        """Events of the records after ``records``, as rows (a replay makes thousands: a tuple
        each, not an object; ``groups --format jsonl`` prints them as rows)."""
        self.deleted: pa.Table | None = None
        """The deletions not yet merged into events (``DELETION_SCHEMA``: group, topic,
        partition, recordOffset, timestamp; in the order they took effect); None: none."""
        self._merged: list[GroupEvent] | None = None
        self._by_group: dict[str, list[GroupEvent]] | None = None

    @property
    def records(self) -> list[GroupEvent]:
        """The events of the records, in the order they took effect: :attr:`rows` made events
        here, once (an event read twice is the same object)."""
        if self.rows:
            partition = self.partition
            self._records.extend([GroupEvent(partition, *row) for row in self.rows])
            self.rows.clear()
        return self._records

    def event_rows(self) -> list[EventRow]:
        """The events of the records as rows, in the order of :attr:`records`."""
        made = [(e.offset, e.timestamp, e.group, e.kind, e.detail) for e in self._records]
        return made + self.rows if made else list(self.rows)

    def add_deleted(self, table: pa.Table) -> None:
        """Deletions of committed offsets (rows of ``DELETION_SCHEMA``), after the records."""
        if not table.num_rows:
            return
        if self.deleted is not None:  # a second lot: the first merged in as events
            self.records[:] = self.events()
        self.deleted = table
        self._merged = self._by_group = None

    def events(self) -> list[GroupEvent]:
        """Every event: by offset, where offsets were deleted (else as the records made them)."""
        if self.deleted is None:
            return self.records
        if self._merged is None:
            self._merged = _merged(self.partition, self.records, self.deleted)
        return self._merged

    def of(self, group: str) -> list[GroupEvent]:
        """The events of ``group``, in the order of :meth:`events`."""
        if self._by_group is None:
            by_group: dict[str, list[GroupEvent]] = {}
            for e in self.events():
                by_group.setdefault(e.group, []).append(e)
            self._by_group = by_group
        return self._by_group.get(group, [])

    def groups(self) -> set[str]:
        """The groups with an event."""
        names = {e.group for e in self._records}
        names.update(row[2] for row in self.rows)
        if self.deleted is not None:
            names.update(self.deleted.column("group").unique().to_pylist())
        return names

    def created(self) -> set[str]:
        """The groups with a ``created`` event."""
        made = {e.group for e in self._records if e.kind == "created"}
        return made | {row[2] for row in self.rows if row[3] == "created"}


def _merged(partition: int, records: list[GroupEvent], table: pa.Table) -> list[GroupEvent]:
    """``records`` and the deletions of ``table`` as events, by offset (stable: ``records``
    first at a tie)."""
    at = table.column("recordOffset").to_numpy()
    deleted = [
        GroupEvent(
            partition, offset, timestamp, group, OFFSET_DELETED, {"topic": t, "partition": p}
        )
        for offset, timestamp, group, t, p in zip(
            at.tolist(),
            table.column("timestamp").to_pylist(),
            _strings(table.column("group")),
            _strings(table.column("topic")),
            table.column("partition").to_pylist(),
            strict=True,
        )
    ]
    if not records:
        return deleted if _ascending(at) else _by_offset(deleted, at)
    return _by_offset(records + deleted, np.concatenate([_offsets(records), at]))


def _strings(column: pa.ChunkedArray) -> list[str]:
    """A string column's values, one str object per distinct value (deletions repeat their
    groups and topics)."""
    encoded = column.combine_chunks().dictionary_encode(null_encoding="encode")
    names = encoded.dictionary.to_pylist()
    return [names[i] for i in encoded.indices.to_numpy(zero_copy_only=False).tolist()]


def _offsets(events: list[GroupEvent]) -> npt.NDArray[np.int64]:
    return np.fromiter((e.offset for e in events), np.int64, len(events))


def _ascending(values: npt.NDArray[np.int64]) -> bool:
    return bool((values[1:] >= values[:-1]).all())


def _by_offset(events: list[GroupEvent], offsets: npt.NDArray[np.int64]) -> list[GroupEvent]:
    """``events`` by ``offsets`` (their offsets), ties in the order given."""
    return [events[i] for i in np.argsort(offsets, kind="stable").tolist()]
