"""The reduction of commit rows (:mod:`codegen.dumps.views.commit_rows`) that a log of any
size is read through in bounded memory: :func:`reduce_plain` keeps per key the newest plain
commit (and what a tombstone needs), every transactional commit and marker. It runs on any
chunk of rows, in any order, any number of times (Spark runs it in ``mapInArrow``; the pure
backend's :class:`~codegen.dumps.views.committed.CommittedOffsets` whenever rows pile up), and is
the plain reference the native one-pass reduction (:mod:`codegen.dumps.views.effects`) is
held to.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.dumps.views.commit_rows import LOG_COMMIT_KEY
from codegen.dumps.views.compaction import (
    NO_MARKER,
    first_after,
    flags,
    in_log_order,
    key_groups,
    key_ids,
    last_rows,
)

__all__ = ["reduce_plain"]


def reduce_plain(rows: pa.Table) -> pa.Table:
    """Per (log partition, key), only the newest non-transactional commit (by log offset), its
    tombstones and the commits just before them; transactional commits and markers are kept.
    Order of the input does not matter; the output is in log-offset order per log partition."""
    if rows.num_rows == 0:
        return rows
    one_log = in_log_order(rows, "logTopic", "logPartition")
    if not one_log:
        rows = rows.sort_by(
            [(c, "ascending") for c in ("logTopic", "logPartition", "recordOffset")]
        )
    marker = rows.column("marker").to_numpy()
    plain = ~flags(rows.column("isTransactional")) & (marker == NO_MARKER)
    tombstone = flags(rows.column("isTombstone"))
    keep = ~plain
    if not tombstone.any():
        keep[last_rows(rows, LOG_COMMIT_KEY, plain)] = True
    else:
        _keep_around_tombstones(rows, plain, tombstone, marker, keep, one_log)
    return rows if keep.all() else rows.filter(pa.array(keep))


def _keep_around_tombstones(
    rows: pa.Table,
    plain: npt.NDArray[np.bool_],
    tombstone: npt.NDArray[np.bool_],
    marker: npt.NDArray[np.int8],
    keep: npt.NDArray[np.bool_],
    one_log: bool,
) -> None:
    """Of the plain commits of rows in log order (log partitions one after another), keep per
    key the newest, every tombstone and the commit just before each (what says whether the
    tombstone deleted a live offset). A transactional tombstone takes effect at its
    producer's next marker, after any plain commits of its key made in between: keep the last
    plain commit of the key before that marker, or, while no marker is in the rows, every
    plain commit of the key after the tombstone and the last one before it. ``one_log``: the
    rows are of one log partition."""
    order, bounds = key_groups(rows, LOG_COMMIT_KEY)  # every row, by key, each key's in log order
    ids = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    in_plain = plain[order]
    # the plain commits by (key, row): ascending as one number, key * stride + row
    stride = rows.num_rows + 1
    key_of, row_of = ids[in_plain], order[in_plain]
    by_key = key_of * stride + row_of
    same_key_next = np.zeros(len(by_key), np.bool_)
    same_key_next[:-1] = key_of[1:] == key_of[:-1]
    keep[row_of[~same_key_next]] = True  # each key's newest
    dead = tombstone[row_of]
    keep[row_of[dead]] = True
    keep[row_of[:-1][dead[1:] & same_key_next[:-1]]] = True  # just before a tombstone
    pending = np.flatnonzero(tombstone & ~plain & (marker == NO_MARKER))
    if not len(pending):
        return
    end, found = _next_markers(rows, pending, np.flatnonzero(marker != NO_MARKER), one_log)
    key = np.empty(rows.num_rows, np.int64)
    key[order] = ids
    key = key[pending]
    # the last plain commit of the key before the marker (or before the open tombstone)
    last = np.searchsorted(by_key, key * stride + end) - 1
    hit = last >= 0
    hit[hit] &= key_of[last[hit]] == key[hit]
    keep[row_of[last[hit]]] = True
    # an open tombstone: every plain commit of the key after it
    open_ = ~found
    lo = np.searchsorted(by_key, key[open_] * stride + pending[open_], side="right")
    hi = np.searchsorted(by_key, (key[open_] + 1) * stride)
    cover = np.zeros(len(by_key) + 1, np.int64)
    np.add.at(cover, lo, 1)
    np.add.at(cover, hi, -1)
    keep[row_of[np.cumsum(cover[:-1]) > 0]] = True


def _next_markers(
    rows: pa.Table,
    pending: npt.NDArray[np.intp],
    markers: npt.NDArray[np.intp],
    one_log: bool,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """The row of the next marker of each ``pending`` row's producer in its log partition (the
    row itself where there is none), and whether there is one (``one_log``: the rows are of
    one log partition)."""
    if not len(markers):
        return pending, np.zeros(len(pending), np.bool_)
    log = np.zeros(rows.num_rows, np.int64) if one_log else key_ids(rows, LOG_COMMIT_KEY[:2])
    producers = rows.column("producerId").to_numpy()
    both = np.concatenate([pending, markers])
    _, producer = np.unique(producers[both], return_inverse=True)
    owner = log[both] * (producer.max() + 1) + producer  # a producer in a log partition
    end = first_after(owner[: len(pending)], pending, owner[len(pending) :], markers)
    found = end >= 0
    return np.where(found, markers[end], pending), found
