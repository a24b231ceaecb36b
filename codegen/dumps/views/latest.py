"""``dump --compacted`` of user topics: the last record per key (a view over the records of
:mod:`codegen.dumps.user_topics`, resolving transactions as :mod:`codegen.dumps.views.compacted`
does)."""

from __future__ import annotations

from typing import Any

from codegen.dumps.decoded import ERROR, RECORD, TOMBSTONE, DecodedRecord
from codegen.dumps.views.compacted import CompactedView

__all__ = ["LatestByKey"]


class LatestByKey(CompactedView):
    """``dump --compacted`` of user topics: the last record per key of each partition (a
    tombstone deletes its key), with transactions resolved as in :class:`CompactedView`
    (records of a transaction count at its COMMIT marker; aborted ones never do).

    ``where`` is set to the file being fed (its topic and partition key the records).
    """

    def __init__(self) -> None:
        super().__init__()
        self.where: Any = None
        self.latest: dict[tuple[Any, bytes | None], tuple[DecodedRecord, Any]] = {}

    def add(self, rec: DecodedRecord) -> None:
        self.records += 1
        if rec.kind == TOMBSTONE:
            self.latest.pop((self._partition(), rec.key_bytes), None)
        elif rec.kind == RECORD:
            key = (self._partition(), rec.key_bytes)
            self.latest.pop(key, None)  # re-inserted last: rows come in order of last write
            self.latest[key] = (rec, self.where)
        elif rec.kind == ERROR:
            self.errors += 1

    def _partition(self) -> Any:
        where = self.where
        return None if where is None else (where.topic, where.partition)

    def rows(self) -> list[tuple[DecodedRecord, Any]]:
        """(record, where) of every live key, in the order of their last records."""
        return sorted(self.latest.values(), key=lambda r: (str(r[1] and r[1].label), r[0].offset))
