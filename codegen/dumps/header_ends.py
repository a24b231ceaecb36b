"""What a log end over time is made of, read from many segment files at once: each batch's
newest timestamp and last offset (:func:`codegen.dumps.views.log_ends.steps_of`), by the native
header pass over all the files in one call (``batch_header_ends``,
``codegen/native/header_ends.h``), without the rows of
:func:`codegen.dumps.batch_rows.batch_rows` that the reference reads them from.

The native pass reads a file whole or leaves it to the reference: a file holding an entry the
pass leaves to the reference (an error, a legacy entry...) is given as None, and its batch
rows are read as every file's are without the native pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from typing import Final

import numpy as np
import numpy.typing as npt

from codegen.dumps.segments import SegmentReader, header_pass_for
from codegen.dumps.storage import StoragePath

__all__ = ["BatchEnds", "batch_ends"]

FILES_PER_CALL: Final = 256
"""Most files one call of the native pass holds open (each map holds a file descriptor)."""

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
    for start in range(0, len(files), FILES_PER_CALL):
        readers = [SegmentReader(f) for f in files[start : start + FILES_PER_CALL]]
        with ExitStack() as stack:
            data = [stack.enter_context(r.opened()) for r in readers]
            sizes = [len(d) for d in data]
            times, lasts, counts, stops = module.batch_header_ends(
                data, *readers[0].header_pass_checks()
            )
        bounds = np.concatenate([[0], np.cumsum(np.frombuffer(counts, np.int64))])
        all_times = np.frombuffer(times, np.int64)
        all_lasts = np.frombuffer(lasts, np.int64)
        for n, stop in enumerate(np.frombuffer(stops, np.int64).tolist()):
            a, b = int(bounds[n]), int(bounds[n + 1])
            whole = stop == sizes[n]
            found.append((all_times[a:b], all_lasts[a:b]) if whole else None)
    return found
