"""The record-by-record reference of :mod:`codegen.forensics.commits`: the compacted view of
one ``__consumer_offsets`` partition that also keeps every commit and offset deletion. Apart
from the columns it is tested against, so that the commands reading them (``lag``) do not
import the record view."""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pyarrow as pa

from codegen.dumps.decoded import RECORD, TOMBSTONE, DecodedBatch, DecodedRecord
from codegen.dumps.views.compacted import CommittedOffset, CompactedView
from codegen.dumps.views.cut import AsOf
from codegen.forensics.commits import Commit, CommitColumns, keyed_commits

__all__ = ["OffsetsView"]

_OFFSET_RECORDS: Final = ("OffsetCommit", "LegacyOffsetCommit")


class OffsetsView(CompactedView):
    """The compacted view of one partition, also keeping every commit and offset deletion,
    record by record: the reference :func:`keyed_commits` is tested against."""

    def __init__(self, partition: int, as_of: AsOf | None = None) -> None:
        super().__init__()
        self.partition = partition
        self.as_of = as_of
        self.history: dict[tuple[str, str, int], list[Commit]] = {}
        """(group, topic, partition) -> its commits, oldest first (no log end offset, no lag)."""
        self.deletions: dict[tuple[str, str, int], list[int]] = {}

    def add_batch(self, item: DecodedBatch) -> None:
        batch = item.batch
        if self.as_of is not None and self.as_of.excludes(batch.base_offset, batch.max_timestamp):
            return
        super().add_batch(item)

    def take_history(self, history: pa.Table) -> None:
        """The commits from the columnar view (``codegen.dumps.views.offsets.HISTORY_SCHEMA`` rows
        of this partition, in the order they took effect), for a view fed no records."""
        kc = keyed_commits(history)
        last = pa.array(kc.last_rows)
        metadata = history.column("metadata").take(last).to_pylist()
        expire = history.column("expireTimestamp").take(last).to_pylist()
        unknown = np.zeros(len(kc.offset), np.bool_)
        columns = (kc.record_offset, kc.commit_timestamp, kc.offset, kc.leader_epoch)
        bounds = kc.bounds.tolist()
        for k, key in enumerate(kc.keys):
            cols = CommitColumns(*columns, kc.offset, kc.offset, unknown, bounds[k], bounds[k + 1])
            commits = self.history[key] = cols.commits()
            if kc.deleted_at[k]:
                self.deletions[key] = kc.deleted_at[k]
            if kc.live[k]:
                newest = commits[-1]
                self.offsets[key] = CommittedOffset(
                    *key,
                    newest.offset,
                    newest.leader_epoch,
                    metadata[k],
                    newest.commit_timestamp,
                    expire[k],
                    newest.record_offset,
                )

    def add(self, rec: DecodedRecord) -> None:
        super().add(rec)
        # The name first: most records are offset commits, and error records have no key.
        if rec.name not in _OFFSET_RECORDS or rec.kind not in (RECORD, TOMBSTONE):
            return
        key: Any = rec.key
        k = (key.group, key.topic, key.partition)
        value: Any = rec.value
        commits = self.history.get(k)
        if value is None:
            if commits is not None:
                self.deletions.setdefault(k, []).append(rec.offset)
            return
        commit = Commit(
            rec.offset,
            value.commit_timestamp,
            value.offset,
            getattr(value, "leader_epoch", -1),
            None,
            None,
        )
        if commits is None:
            self.history[k] = [commit]
        else:
            commits.append(commit)
