"""Lag's commits as JSON text: each partition's commits as one JSON array, written from the
commit columns by the native printer where it is built (an output of the lag view,
:mod:`codegen.forensics.lag`, for ``lag --format jsonl``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import orjson

from codegen.dumps.json_text import native_printer
from codegen.forensics.commits import COMMIT_FIELDS, CommitColumns
from codegen.forensics.lag import GroupLag, PartitionLag

__all__ = ["commits_json", "group_line", "group_parts"]


def commits_json(partitions: Sequence[PartitionLag]) -> list[bytes]:
    """Each partition's commits as one JSON array text (what ``[c.to_json() for c in
    p.commits]`` encodes to, compact): written from the columns by the native printer
    (``object_arrays`` in ``codegen/native/jsontext.c``), or from the objects (the pure
    backend, and where the printer is not built)."""
    if not partitions:
        return []
    printer = native_printer()
    if printer is None:
        return [orjson.dumps([c.to_json() for c in p.commits]) for p in partitions]
    first = partitions[0].history
    starts = np.fromiter((p.history.start for p in partitions), np.int64, len(partitions))
    stops = np.fromiter((p.history.stop for p in partitions), np.int64, len(partitions))
    shared = all(p.history.record_offset is first.record_offset for p in partitions)
    if shared and np.array_equal(starts[1:], stops[:-1]):
        rows = slice(int(starts[0]), int(stops[-1]))
        columns = first
    else:  # commits of several log partitions: gathered first
        columns = _gathered([p.history for p in partitions])
        rows = slice(0, len(columns))
        lengths = stops - starts
        stops = np.cumsum(lengths)
        starts = stops - lengths
    known = np.ascontiguousarray(columns.known[rows], np.bool_)
    values = (
        columns.record_offset,
        columns.commit_timestamp,
        columns.offset,
        columns.leader_epoch,
        columns.log_end_offset,
        columns.lag,
    )
    masks = tuple(known if name in ("logEndOffset", "lag") else None for name in COMMIT_FIELDS)
    texts: list[bytes] = printer.object_arrays(
        _COMMIT_PREFIXES,
        tuple(np.ascontiguousarray(v[rows], np.int64) for v in values),
        masks,
        np.append(starts, stops[-1]) - starts[0],
    )
    return texts


def group_line(group: GroupLag, commits: Sequence[bytes]) -> bytes:
    """``orjson.dumps(group.to_json(commits))`` with ``commits`` (each partition's commits'
    JSON array text, :func:`commits_json`) as they are: :func:`group_parts` joined."""
    return b"".join(group_parts(group, commits))


def group_parts(group: GroupLag, commits: Sequence[bytes]) -> list[bytes]:
    """The text of :func:`group_line` in parts, ``commits`` among them as they are: orjson
    writes only the small objects around them (given whole groups, it grew and copied its
    buffer as it took the texts: 0.23 G of lag's 7.3 G instructions at 1 M records), and a
    writer given the parts copies the texts no more (``os.writev``). TypeError where orjson
    refuses a value."""
    parts = [orjson.dumps({"group": group.group, "status": group.status, "now": group.now})]
    parts[0] = parts[0][:-1]
    opening = b',"partitions":['
    for p, text in zip(group.partitions, commits, strict=True):
        parts += (opening, orjson.dumps(p.summary_json())[:-1], b',"commits":', text, b"}")
        opening = b","
    parts.append(b',"partitions":[]' if opening != b"," else b"]")
    if group.share_partitions:
        parts += (
            b',"sharePartitions":',
            orjson.dumps([s.to_json() for s in group.share_partitions]),
        )
    parts.append(b"}")
    return parts


_COMMIT_PREFIXES: Final = tuple(
    ("{" if i == 0 else ",").encode() + orjson.dumps(name) + b":"
    for i, name in enumerate(COMMIT_FIELDS)
)
"""What comes before each member's value in a commit's JSON object."""


def _gathered(histories: Sequence[CommitColumns]) -> CommitColumns:
    def take(name: str) -> np.ndarray:
        return np.concatenate([getattr(h, name)[h.start : h.stop] for h in histories])

    names = (
        "record_offset",
        "commit_timestamp",
        "offset",
        "leader_epoch",
        "log_end_offset",
        "lag",
        "known",
    )
    ro, ts, off, epoch, end, lag, known = (take(n) for n in names)
    return CommitColumns(ro, ts, off, epoch, end, lag, known, 0, len(ro))
