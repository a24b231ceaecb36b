"""Lag's commits as JSON text: each partition's commits as one JSON array, written from the
commit columns by the native printer where it is built (an output of the lag view,
:mod:`codegen.forensics.lag`, for ``lag --format jsonl``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import numpy as np
import orjson

from codegen.dumps.json_text import native_printer
from codegen.forensics.commits import COMMIT_FIELDS, CommitColumns
from codegen.forensics.lag import GroupLag, PartitionLag
from codegen.forensics.output import json_bytes

__all__ = ["Write", "commits_json", "group_parts", "write_group_lines"]

Write = Callable[[bytes | memoryview], object]
"""An output's write (a buffered stream's: it takes all it is given, the native printer also
gives again what a short write left), given text: a memoryview read within the call only."""


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
    texts: list[bytes] = printer.object_arrays(_COMMIT_PREFIXES, *_commit_rows(partitions))
    return texts


def write_group_lines(groups: Sequence[GroupLag], write: Write) -> int:
    """Each group's line of ``lag --format jsonl`` (``orjson.dumps(group.to_json())``), ending
    with a newline, given to ``write``; their count. The native printer writes them through one
    buffer it reuses (``lag_write``, ``codegen/native/lag_lines.h``), where lines made whole
    (each a bytes object, megabytes at 16 M records) were written into fresh memory and out of
    cache; a group whose line it does not print is given to the reference
    (:func:`_reference_line`) within the same call, its line written in its place."""
    printer = native_printer()
    partitions = [p for g in groups for p in g.partitions]
    if printer is None or not partitions:  # a line at a time: none held but the one written
        for group in groups:
            write(_reference_line(group))
        return len(groups)
    columns, masks, bounds = _commit_rows(partitions)
    written: int = printer.lag_write(
        write,
        _reference_line,
        list(groups),
        _shares(groups),
        _COMMIT_PREFIXES,
        columns,
        masks,
        bounds,
    )
    return written


def _reference_line(group: GroupLag) -> bytes:
    """The group's line by the reference, with its newline: :func:`group_parts` joined, or
    where orjson refuses a value (integers past 64 bits, lone surrogates) the standard
    library's JSON (:func:`~codegen.forensics.output.json_bytes`)."""
    commits = commits_json(group.partitions)
    try:
        parts = group_parts(group, commits)
    except TypeError:
        parts = [json_bytes(group.to_json())]
    parts.append(b"\n")
    return b"".join(parts)


def _shares(groups: Sequence[GroupLag]) -> list[bytes | None]:
    """Each group's "sharePartitions" text, None where it has none."""
    return [
        orjson.dumps([s.to_json() for s in g.share_partitions]) if g.share_partitions else None
        for g in groups
    ]


def _commit_rows(
    partitions: Sequence[PartitionLag],
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray | None, ...], np.ndarray]:
    """The partitions' commits as the printer reads them: int64 columns (:data:`COMMIT_FIELDS`),
    their masks (null where 0) and each partition's bounds in them."""
    # the columns compared by identity (a set of their ids took some 860 instructions a
    # partition)
    first = partitions[0].columns
    # comprehensions into np.fromiter: np.fromiter of a map of attrgetter took some 500
    # instructions a partition more each
    n = len(partitions)
    starts = np.fromiter([p.start for p in partitions], np.int64, n)
    stops = np.fromiter([p.stop for p in partitions], np.int64, n)
    shared = all(p.columns is first for p in partitions)
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
    return (
        tuple(np.ascontiguousarray(v[rows], np.int64) for v in values),
        masks,
        np.append(starts, stops[-1]) - starts[0],
    )


def group_parts(group: GroupLag, commits: Sequence[bytes]) -> list[bytes]:
    """``orjson.dumps(group.to_json(commits))`` in parts, with ``commits`` (each partition's
    commits' JSON array text, :func:`commits_json`) among them as they are: orjson
    writes only the small objects around them (given whole groups, it grew and copied its
    buffer as it took the texts: 0.23 G of lag's 7.3 G instructions at 1 M records). TypeError
    where orjson refuses a value."""
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
