"""Every record a coordinator's loader meets in one partition, by kind.

A broker loads a coordinator partition from the log start to its end, in log order
(:mod:`codegen.forensics.loaders`): every record the files hold, not only the ones compaction
would keep. :class:`LoadedPartition` sums them up from the ``kafka-log`` Arrow columns
(:data:`codegen.dumps.arrow.RECORD_SCHEMA`) of one partition: per kind (record type, value
version or tombstone) the first offset, how many there are and the group of the first, and the
first control batch (transaction markers). Only the first record of each kind is decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.columnar.decode import Rows
from codegen.dumps.views.commit_rows import single_array
from codegen.dumps.views.compaction import flags
from codegen.dumps.views.effects import binary_buffers, engine_function
from codegen.slotted import Slotted, field

if TYPE_CHECKING:
    from codegen.dumps.coordinator import CoordinatorDecoder

__all__ = ["GROUP_FIELDS", "NO_KEY", "LoadedPartition", "RecordKind", "group_of"]

NO_KEY: Final = -1
"""The record type of a record without a key (or with a key too short to hold one)."""
_TOMBSTONE: Final = -1
_NO_VERSION: Final = -2
"""The value version of a value too short to hold one."""


class RecordKind(Slotted):
    """The records of one type and value version (None: tombstones) of a partition."""

    record_type: int
    value_version: int | None
    first_offset: int
    count: int
    name: str
    """The record's name from our specs, ``unknown`` for a type they do not have."""
    group: str | None
    """The group (transactional id) of the first one."""


class LoadedPartition(Slotted):
    """What the loader of one coordinator partition reads, in log order."""

    topic: str
    partition: int
    records: int = 0
    first_control_offset: int | None = None
    kinds: dict[tuple[int, int], RecordKind] = field(default_factory=dict)
    source: Callable[[], Iterable[pa.RecordBatch]] | None = None
    """Reads the partition's rows again (for :meth:`decoded`), when kept."""

    def add(self, rb: pa.RecordBatch, decoder: CoordinatorDecoder) -> None:
        """Count the records of ``kafka-log`` rows of this partition, given in log order."""
        readable = flags(rb.column("_error").is_null())
        control = flags(rb.column("isControl")) & readable
        offsets = rb.column("offset").to_numpy(zero_copy_only=False)
        if control.any() and self.first_control_offset is None:
            self.first_control_offset = int(offsets[control][0])
        rows = readable & ~control
        if not rows.any():
            return
        key_column = rb.column("key")
        self.records += int(np.count_nonzero(rows))
        for code, at, n in _kinds_in(rb, rows):
            rtype, version = code // 65536 - 32768, code % 65536 - 32768
            kind = self.kinds.get((rtype, version))
            if kind is not None:
                kind.count += n
                continue
            key = key_column[at].as_py()
            name, group = "unknown", None
            if rtype != NO_KEY and key is not None:
                _, decoded_name, key_obj = decoder.decode_key(key)
                name = decoded_name or "unknown"
                group = group_of(key_obj)
            self.kinds[(rtype, version)] = RecordKind(
                rtype,
                None if version == _TOMBSTONE else version,
                int(offsets[at]),
                n,
                name,
                group,
            )

    def in_log_order(self) -> list[RecordKind]:
        """The kinds by their first offset."""
        return sorted(self.kinds.values(), key=lambda k: k.first_offset)

    def records_of(self, kind: RecordKind) -> Iterator[tuple[int, bytes, bytes]]:
        """(offset, key, value) of every record of ``kind`` (not tombstones) in log order,
        read again from :attr:`source`."""
        if self.source is None or kind.value_version is None:
            return
        for rb in self.source():
            readable = flags(rb.column("_error").is_null())
            rows = readable & ~flags(rb.column("isControl"))
            keys, values = Rows(rb.column("key")), Rows(rb.column("value"))
            types, typed = keys.int16_at(keys.starts, keys.ends)
            versions, versioned = values.int16_at(values.starts, values.ends)
            rows &= keys.valid & typed & values.valid & versioned
            rows &= (types == kind.record_type) & (versions == kind.value_version)
            if not rows.any():
                continue
            offsets = rb.column("offset")
            for i in np.flatnonzero(rows).tolist():
                key, value = rb.column("key")[i].as_py(), rb.column("value")[i].as_py()
                yield int(offsets[i].as_py()), key, value

    def decoded(self, decoder: CoordinatorDecoder) -> Iterator[tuple[int, str, Any, Any]]:
        """(offset, record name, key, value or None) of every record in log order, read again
        from :attr:`source`; an offset commit's value is only said to be there (not decoded)."""
        if self.source is None:
            return
        for rb in self.source():
            readable = flags(rb.column("_error").is_null())
            rows = readable & ~flags(rb.column("isControl"))
            keys = rb.column("key").to_pylist()
            values = rb.column("value").to_pylist()
            offsets = rb.column("offset").to_pylist()
            for i in np.flatnonzero(rows).tolist():
                key, value = keys[i], values[i]
                if key is None or len(key) < 2:
                    continue
                if key[:2] in (b"\x00\x00", b"\x00\x01"):  # offset commits: keys only
                    _, _, key_obj = decoder.decode_key(key)
                    yield offsets[i], "OffsetCommit", key_obj, None if value is None else True
                    continue
                rec = decoder.decode(key, value, offsets[i])
                yield offsets[i], rec.name or "unknown", rec.key, rec.value


def _kinds_in(rb: pa.RecordBatch, rows: npt.NDArray[np.bool_]) -> list[tuple[int, int, int]]:
    """The kinds of record of a chunk's rows ``rows``: (code, first row, count) by code, the
    code ``(record type + 32768) * 65536 + value version + 32768`` (a key's record type and a
    value's version: the big-endian int16 each starts with; :data:`NO_KEY` for a null key or
    one shorter, :data:`_TOMBSTONE` for a null value, :data:`_NO_VERSION` for one shorter). By
    the engine in one pass (``record_kinds.h``) where it is built and asked for, else by
    :func:`_heads` and :func:`_kinds_of`, the reference."""
    key, value = single_array(rb.column("key")), single_array(rb.column("value"))
    record_kinds = engine_function("record_kinds")
    if record_kinds is not None and key.type == value.type == pa.binary():
        return record_kinds(  # type: ignore[no-any-return]
            *binary_buffers(key),
            *binary_buffers(value),
            rows.view(np.uint8),
            key.buffers()[0] if key.null_count else None,
            key.offset,
            value.buffers()[0] if value.null_count else None,
            value.offset,
        )
    types, versions = _heads(key, NO_KEY, NO_KEY), _heads(value, _TOMBSTONE, _NO_VERSION)
    codes = (types[rows] + 32768) * 65536 + (versions[rows] + 32768)
    distinct, first, counts = _kinds_of(codes)
    at = np.flatnonzero(rows)[first]
    return list(zip(distinct.tolist(), at.tolist(), counts.tolist(), strict=True))


def _heads(column: pa.Array, null: int, short: int) -> npt.NDArray[np.int64]:
    """The big-endian int16 each row of a binary column starts with (a key's record type, a
    value's version), ``null`` where the row is null and ``short`` where it holds fewer than
    two bytes."""
    rows = Rows(column)
    values, read = rows.int16_at(rows.starts, rows.ends)
    return np.where(rows.valid, np.where(read, values, short), null)


_FEW_KINDS: Final = 64
"""Up to this many kinds in a chunk, each one's first row is found by a pass of its own."""


def _kinds_of(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(codes, return_index=True, return_counts=True)``: a chunk holds few kinds,
    so each one's first row is found by a comparison over the chunk rather than by the stable
    sort of every row that ``return_index`` makes."""
    distinct, counts = np.unique(codes, return_counts=True)
    if len(distinct) > _FEW_KINDS:
        return np.unique(codes, return_index=True, return_counts=True)
    first = np.array([int(np.argmax(codes == code)) for code in distinct.tolist()], np.intp)
    return distinct, first, counts


GROUP_FIELDS: Final = ("group", "group_id", "transactional_id")
"""The fields a key names its group (or transactional id) by, the first set one."""


def group_of(key: object) -> str | None:
    """The group (or transactional id) a record's key names."""
    if key is None:
        return None
    for name in GROUP_FIELDS:
        value = getattr(key, name, None)
        if value is not None:
            return str(value)
    return None
