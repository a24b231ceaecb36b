"""What a log end over time is made of, read from many segment files at once: each batch's
newest timestamp and last offset (:func:`codegen.dumps.views.log_ends.steps_of`), by the native
header pass over all the files in one call (``batch_header_ends``,
``codegen/native/header_ends.h``; one per :data:`FILES_PER_CALL` files or
:data:`BYTES_PER_CALL` bytes), without the rows of
:func:`codegen.dumps.batch_rows.batch_rows` that the reference reads them from.

The newest time of the batches with records of many files (:func:`newest_times`, the lag's
*now*) is read the same way, by a walk of the files' header chains (``newest_batches``,
``codegen/native/newest_batches.h``) that keeps that one number of each.

The native pass reads a file whole or leaves it to the reference: a file holding an entry the
pass leaves to the reference (an error, a legacy entry...) is given as None, and its batch
rows are read as every file's are without the native pass.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from codegen.dumps.segments import SegmentReader, header_pass_for
from codegen.dumps.storage import StoragePath

__all__ = ["BatchEnds", "batch_ends", "newest_times"]

FILES_PER_CALL: Final = 256
"""Most files one call of the native pass holds open (each map holds a file descriptor)."""
BYTES_PER_CALL: Final = 1 << 26
"""Most bytes of files one call holds, but for its last file's: read whole (remote segments) or
mapped (local ones: the pages of a map the pass touches count in the process's memory until
the call ends, and a header walk touches every page; the walk of :func:`newest_times` gives
back the pages it has passed, so a mapped file counts at most the ``NEWEST_WALK_HELD`` bytes
it holds)."""

I64 = npt.NDArray[np.int64]

BatchEnds = tuple[I64, I64]
"""A segment file's batches' ``maxTimestamp`` and ``lastOffset``, in file order."""


def batch_ends(files: Sequence[StoragePath]) -> list[BatchEnds | None] | None:
    """Per file, its batches' newest timestamps and last offsets; None for a file the native
    header pass does not read whole. None without the native header pass (not built, or the
    ``pure`` backend asked for)."""
    module = header_pass_for(None)
    if module is None:
        return None
    found: list[BatchEnds | None] = []
    for read, sizes in _calls(module.batch_header_ends, files):
        found += _per_file(read, sizes)
    return found


def newest_times(files: Sequence[StoragePath]) -> list[int | None] | None:
    """Per file, the newest timestamp of its batches with records, as
    ``codegen.forensics.lag.newest_batches`` gives it (-1 without one), by the native walk of
    the files' header chains (``newest_batches``, ``codegen/native/newest_batches.h``); None
    for a file the reference must read (an entry the walk leaves to it, or no whole batch of
    the newest time). None without the native header pass."""
    module = header_pass_for(None)
    if module is None:
        return None
    found: list[int | None] = []
    held = getattr(module, "NEWEST_WALK_HELD", None)
    for read, _ in _calls(module.newest_batches, files, held):
        newest, whole = (np.frombuffer(b, np.int64).tolist() for b in read)
        found += [t if w else None for t, w in zip(newest, whole, strict=True)]
    return found


def _calls(
    function: Any, files: Sequence[StoragePath], mapped_held: int | None = None
) -> Iterator[tuple[Any, list[int]]]:
    """``function(buffers, *checks)`` of the native header pass over the files, at most
    :data:`FILES_PER_CALL` files or :data:`BYTES_PER_CALL` bytes a call: what each
    call gave, and the sizes of its files. ``mapped_held``: the most bytes of a mapped file
    the function holds at once (it gives back the pages it has passed: ``newest_batches``),
    None: all it touches."""
    at = 0
    while at < len(files):
        with ExitStack() as stack:
            readers: list[SegmentReader] = []
            data: list[bytes | mmap.mmap] = []
            held = 0
            while at < len(files) and len(data) < FILES_PER_CALL and held <= BYTES_PER_CALL:
                readers.append(SegmentReader(files[at]))
                data.append(stack.enter_context(readers[-1].opened()))
                size = len(data[-1])
                if mapped_held is not None and type(data[-1]) is mmap.mmap:
                    size = min(size, mapped_held)
                held += size
                at += 1
            sizes = [len(d) for d in data]
            yield function(data, *readers[0].header_pass_checks()), sizes


def _per_file(read: tuple[bytes, bytes, bytes, bytes], sizes: list[int]) -> list[BatchEnds | None]:
    """What one call read, per file: its batches, None where it stopped before the end."""
    times, lasts, counts, stops = (np.frombuffer(b, np.int64) for b in read)
    bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
    return [
        (times[a:b], lasts[a:b]) if stop == size else None
        for a, b, stop, size in zip(bounds[:-1], bounds[1:], stops.tolist(), sizes, strict=True)
    ]
