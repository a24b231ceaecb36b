"""The plain offset commits that a later plain commit of the same key supersedes, found by the
native engine on the key bytes of the record loop's columns (``superseded_commits.h``), before
anything is taken out of the decoded columns.

:func:`codegen.dumps.views.reduction.reduce_plain` would drop each of these rows (it keeps per key
the newest plain commit, every plain tombstone and the plain commit just before it), and
dropping them first leaves its answer as it is, so :func:`~codegen.dumps.views.commit_rows
.commit_rows_left` makes commit rows of the other rows only: about one row in eight of a
``__consumer_offsets`` partition. A transactional tombstone keeps more (the plain commit of its
key before its marker, and every one after it while the marker is not read): no row of its key
is dropped, in the rows given and after them (the caller gives its key again as a row of
:data:`TRANSACTIONAL_TOMBSTONE` with every later chunk of the log partition). Without the engine
(the pure backend) nothing is dropped here and ``reduce_plain`` does it all.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.runtime import backends

__all__ = [
    "NOT_PLAIN",
    "PLAIN_COMMIT",
    "PLAIN_TOMBSTONE",
    "TRANSACTIONAL_TOMBSTONE",
    "native_enabled",
    "superseded",
]

NOT_PLAIN: Final = 0
"""A row that is not a plain commit (transactional, a marker, another record, not decoded)."""
PLAIN_COMMIT: Final = 1
"""A plain (not transactional) offset commit with a value."""
PLAIN_TOMBSTONE: Final = 2
"""A plain offset commit tombstone."""
TRANSACTIONAL_TOMBSTONE: Final = 3
"""An offset commit tombstone of a transactional batch: no row of its key is dropped."""


def _native() -> ModuleType | None:
    try:
        module = importlib.import_module("codegen.native._records")
    except ImportError:
        return None
    return module if hasattr(module, "superseded_commits") else None


def native_enabled() -> bool:
    """Whether :func:`superseded` asks the engine: it is built and the backend asked for is
    not ``pure``."""
    return backends.requested() != backends.PURE and _native() is not None


def superseded(
    chunks: list[tuple[pa.Array | pa.ChunkedArray, npt.NDArray[np.uint8]]],
) -> list[npt.NDArray[np.bool_]] | None:
    """Per chunk (a binary ``key`` column and each row's kind, :data:`PLAIN_COMMIT`, ...; the
    chunks consecutive rows of one log partition), which rows are superseded plain commits.
    None when the engine is not asked (:func:`native_enabled`) or cannot say (a key column
    of another type, a plain row whose key is not an offset commit's)."""
    module = _native() if native_enabled() else None
    if module is None:
        return None
    arguments = []
    outs = []
    for key, kinds in chunks:
        if isinstance(key, pa.ChunkedArray):
            key = key.combine_chunks() if key.num_chunks != 1 else key.chunk(0)
        if key.type != pa.binary() or len(key) != len(kinds):
            return None
        n = len(key)
        offsets = np.frombuffer(key.buffers()[1], np.int32, n + 1, key.offset * 4)
        data = key.buffers()[2] or b""
        out = np.zeros(n, np.uint8)
        arguments.append((offsets, data, np.ascontiguousarray(kinds, np.uint8), out))
        outs.append(out)
    if module.superseded_commits(arguments) is None:
        return None
    return [out.view(np.bool_) for out in outs]
