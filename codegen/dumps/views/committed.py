"""The committed offsets of a stream of decoded ``__consumer_offsets`` rows, for the command line
(``dump --compacted``, ``groups``): :class:`CommittedOffsets`.

With the native engine each log partition is one pass (:class:`codegen.dumps.views.effects
.RecordEffects`), in memory bounded by its keys; the pure backend makes commit rows of
everything (:func:`~codegen.dumps.views.commit_rows.commit_rows`), reduces them whenever they
pile up (:func:`~codegen.dumps.views.reduction.reduce_plain`) and sorts what is left
(:func:`~codegen.dumps.views.offsets.in_effect`): the reference the tests hold the engine to.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.columnar.package import SHIPPED
from codegen.dumps.views.commit_columns import engine_checks
from codegen.dumps.views.commit_rows import DELETION_SCHEMA, commit_rows
from codegen.dumps.views.commits import decode_commit_flags, decode_commits
from codegen.dumps.views.compaction import ReducedChunks, flags
from codegen.dumps.views.effects import (
    NO_PRODUCERS,
    CheckedRows,
    RecordEffects,
    native_enabled,
)
from codegen.dumps.views.offsets import (
    deletions_in_effect,
    in_effect,
    latest_in_effect,
    merge_partitions,
    offsets_of,
)
from codegen.dumps.views.reduction import reduce_plain

__all__ = ["CommittedOffsets"]


class CommittedOffsets:
    """The committed offsets of ``__consumer_offsets`` rows: add the rows of each log partition
    in log order (:meth:`add_checked` where the engine checks the commits as it reads them,
    else :meth:`add` of those :meth:`decode` gives), :meth:`end_partition` after each, then
    read :meth:`table` and :meth:`deleted`. ``package``: what the answer's rows are decoded
    with. ``reduce_every``: the pure backend's rows held before :func:`reduce_plain`."""

    def __init__(self, reduce_every: int = 1 << 18, package: str = SHIPPED) -> None:
        self._rows = ReducedChunks(reduce_plain, reduce_every)
        self._package = package
        self._effects: RecordEffects | None = None
        self._done: list[pa.Table] = []
        self._deleted: list[pa.Table] = []

    def decode(
        self, rb: pa.RecordBatch | pa.Table, package: str
    ) -> tuple[pa.Table, dict[int, str]]:
        """``rb``'s rows decoded as :meth:`add` reads them, and the decode errors by row, where
        the engine does not check them in its pass (:meth:`add_checked`): the commit flags
        alone where the engine decodes (:func:`~codegen.dumps.views.commits.decode_commit_flags`),
        else every commit column."""
        if native_enabled():
            return decode_commit_flags(rb, package)
        return decode_commits(rb, package)

    def add_checked(
        self,
        rb: pa.RecordBatch | pa.Table,
        package: str,
        waiting: npt.NDArray[np.int64] = NO_PRODUCERS,
    ) -> CheckedRows | None:
        """Add rows of the current log partition as the engine's columns give them, not
        decoded, where the engine's pass checks each of ``package``'s offset commits as it reads
        it (:meth:`RecordEffects.add_checked`; the kinds, newer versions, refused rows and rows
        left it found; ``waiting``: the producers a view holds records of); None, adding
        nothing, where it does not (:meth:`decode` the rows and :meth:`add` them)."""
        if not native_enabled() or not engine_checks(package):
            return None
        rows = rb if isinstance(rb, pa.Table) else pa.Table.from_batches([rb])
        if self._effects is None:
            self._effects = RecordEffects(self._package)
        return self._effects.add_checked(rows, waiting)

    def add(self, decoded: pa.Table | pa.RecordBatch) -> npt.NDArray[np.uint8] | None:
        """Add decoded rows of the current log partition; with the engine, each row's kind
        (:data:`~codegen.dumps.views.effects.PLAIN_COMMIT`, ...)."""
        rows = decoded if isinstance(decoded, pa.Table) else pa.Table.from_batches([decoded])
        if self._effects is None and native_enabled():
            self._effects = RecordEffects(self._package)
        if self._effects is not None:
            return self._effects.add(rows)
        self._rows.add(commit_rows(rows))
        return None

    def end_partition(self) -> None:
        """The current log partition is complete."""
        if self._effects is not None:
            effects, self._effects = self._effects, None
            self._done.append(offsets_of(effects.offsets()))
            deleted = effects.deletions()
            if deleted.num_rows:
                self._deleted.append(deleted)
        rows = self._rows.take()
        if rows is not None:
            ordered = in_effect(rows)  # once for both
            self._done.append(latest_in_effect(ordered))
            if flags(rows.column("isTombstone")).any():
                self._deleted.append(deletions_in_effect(ordered))

    def table(self) -> pa.Table:
        """The committed offsets of everything added (:data:`~codegen.dumps.views.commit_rows
        .OFFSET_SCHEMA`)."""
        self.end_partition()
        return merge_partitions(self._done)

    def deleted(self) -> pa.Table:
        """The tombstones that deleted a live committed offset (:data:`~codegen.dumps.views
        .commit_rows.DELETION_SCHEMA`), by log partition in the order added, each in the order
        they took effect."""
        self.end_partition()
        tables = [t for t in self._deleted if t.num_rows]
        return pa.concat_tables(tables) if tables else DELETION_SCHEMA.empty_table()
