"""Filters Spark pushes into ``kafka-log`` (``DataSourceReader.pushFilters``, Spark 4.1+).

A query's conjuncts on ``topic``, ``partition``, ``offset``, ``timestamp``, ``isControl`` and,
with ``decode``, ``recordName`` (``=``, ``<``, ``<=``, ``>``, ``>=``, ``IN``; ``NOT isControl``)
are taken by the source; the others stay with Spark. What the source takes it applies exactly,
row by row (Spark does not look at those rows again), after skipping what cannot match before
decoding anything:

- a file whose topic or partition (from its folder) fails is not read;
- a segment whose offsets (from its file name up to the next segment's) miss the offset range
  is not read;
- in a file read, the offset index (``.index``) says where the first wanted offset can start,
  and a batch whose header says its offsets, its newest timestamp or its control flag cannot
  match is not read;
- the decoder decodes only the records of the wanted record names.

When the source takes filters (the option ``pushFilters``, :func:`takes_filters`), Spark
sends them only with ``spark.sql.python.filterPushdown.enabled`` on (off by default;
``spark_udfs.session`` turns it on where it registers the source).

Each input partition carries the filters of the scan that planned it (``LogSlices.pushed``),
and its read applies those, never filters kept in the reader. That is all a source can do:
where Spark plans each scan on its own, each scan then reads its own rows.

By default (``pushFilters=auto``) the source takes filters only where Spark keeps each scan's
read plan to that scan (:func:`scoped_read_plans`). Classic Spark 4.3.0 does not: the planning
worker calls ``reader()``, ``pushFilters()`` and ``partitions()`` on one reader per scan and
sends back its partitions and its pickled ``read``, but ``PythonScanBuilder`` stores them on
the loaded DataFrame's ``PythonDataSourceV2`` (``setReadInfo``), and every scan of that
DataFrame reads with what is stored there when it runs, partitions and ``read`` alike. So a
query that scans one loaded DataFrame twice with different filters (a union or self-join of
two filtered copies) reads both with the last scan's partitions and filters, and a later query
whose filters Spark cannot send (none, or only ones it does not translate) reads with those of
an earlier query: rows go missing either way. Handing every filter back to Spark (which then
filters each scan's rows again) and pruning by the OR of all scans' filters does not help: a
scan Spark sends no filter for is never shown to the source (``df.where(...).union(df)``
plans once, for the filtered scan, and the whole scan reads that plan), and both scans get the
same partitions and ``read``, so only a read that skips nothing is right for both. Spark
Connect resolves each query's plan anew, one ``PythonDataSourceV2`` per scan, once its plan
cache (:data:`PLAN_CACHE_CONF`) is off, which ``spark_udfs.session`` does for its sessions
(taking filters by default there). The option ``where`` (:func:`given_filters`) gives the
same filters at load instead: part of the DataFrame, so of every scan of it.

Reads are ranged (:func:`read_ranges`): the offset and time indexes beside a segment give the
window of it that can hold wanted records, which one read fetches (a 1 GB segment in object
storage costs its indexes and the window), and the headers of the batches in it say which to
decode.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    Not,
)

from codegen.dumps import storage
from codegen.dumps.storage import StoragePath

__all__ = [
    "PLAN_CACHE_CONF",
    "PUSHDOWN_CONF",
    "Pushed",
    "batch_ranges",
    "given_filters",
    "index_positions",
    "keep_files",
    "push",
    "read_ranges",
    "read_window",
    "scoped_read_plans",
    "takes_filters",
]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
PLAN_CACHE_CONF = "spark.connect.session.planCache.enabled"
"""Spark Connect's cache of resolved plans: on, the scans of one loaded DataFrame share its
read plan across queries too; ``spark_udfs.session`` turns it off for its sessions."""

_SEGMENT = re.compile(r"^(\d{20})\.log$")
# v2 batch header: baseOffset int64, batchLength int32, leaderEpoch int32, magic int8,
# crc uint32, attributes int16, lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64.
_HEADER = struct.Struct(">qiiBIhiqq")
_CONTROL = 0x20
_MAX = 2**63 - 1
_MIN = -(2**63)


def scoped_read_plans() -> bool:
    """Whether this Spark keeps the read plan a scan's filters made to that scan.

    SPARK-58551 (apache/spark#57752, Spark 5.0) moved the plan from ``PythonDataSourceV2`` into
    ``PythonScanBuilder``/``PythonScan`` in the change that added ``DataSourceReader.pushLimit``,
    so that method marks a Spark where pushed filters cannot leak into another scan."""
    return hasattr(DataSourceReader, "pushLimit")


def takes_filters(option: str) -> bool:
    """The ``pushFilters`` option: ``true``, ``false``, or ``auto`` (true where
    :func:`scoped_read_plans`)."""
    value = option.lower()
    if value not in ("auto", "true", "false"):
        raise ValueError(f"kafka-log: pushFilters={option!r}: use auto, true or false")
    return scoped_read_plans() if value == "auto" else value == "true"


@dataclass(frozen=True, slots=True)
class Range:
    """``lo <= x <= hi``; a value outside, or null, fails."""

    lo: int = _MIN
    hi: int = _MAX

    def meet(self, lo: int = _MIN, hi: int = _MAX) -> Range:
        return Range(max(self.lo, lo), min(self.hi, hi))

    @property
    def everything(self) -> bool:
        return self.lo == _MIN and self.hi == _MAX

    def overlaps(self, lo: int, hi: int) -> bool:
        return lo <= self.hi and hi >= self.lo


@dataclass(frozen=True, slots=True)
class Pushed:
    """The conjunction of the filters the source took."""

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    partition: Range = field(default_factory=Range)
    offset: Range = field(default_factory=Range)
    timestamp: Range = field(default_factory=Range)  # microseconds since the epoch
    control: bool | None = None
    record_names: frozenset[str] | None = None

    @property
    def empty(self) -> bool:
        return self == Pushed()

    def slice_matches(self, topic: str | None, partition: int | None) -> bool:
        """Whether a file of ``topic``/``partition`` (its constant columns) can have rows."""
        if self.topics is not None and (topic is None or topic not in self.topics):
            return False
        if self.partitions is not None or not self.partition.everything:
            if partition is None or not self.partition.overlaps(partition, partition):
                return False
            if self.partitions is not None and partition not in self.partitions:
                return False
        return True

    def row_mask(self, rb: pa.RecordBatch) -> pa.Array | None:
        """The rows of ``rb`` that pass the row filters (offset, timestamp, isControl,
        recordName), or None when every row does; null fails, as in SQL."""
        masks: list[pa.Array] = []
        names = set(rb.schema.names)
        if not self.offset.everything:
            masks.append(_in_range(rb.column("offset"), self.offset))
        if not self.timestamp.everything:
            micros = rb.column("timestamp").cast(pa.int64())
            masks.append(_in_range(micros, self.timestamp))
        if self.control is not None:
            masks.append(pc.equal(rb.column("isControl"), self.control))
        if self.record_names is not None and "recordName" in names:
            wanted = pa.array(sorted(self.record_names), pa.string())
            masks.append(pc.is_in(rb.column("recordName"), value_set=wanted))
        if not masks:
            return None
        mask = masks[0]
        for m in masks[1:]:
            mask = pc.and_kleene(mask, m)
        return pc.fill_null(mask, False)

    def row_columns(self) -> set[str]:
        """The raw columns :meth:`row_mask` reads."""
        out = set()
        if not self.offset.everything:
            out.add("offset")
        if not self.timestamp.everything:
            out.add("timestamp")
        if self.control is not None:
            out.add("isControl")
        return out


def _in_range(col: pa.Array, r: Range) -> pa.Array:
    lo = pc.greater_equal(col, pa.scalar(r.lo, pa.int64()))
    hi = pc.less_equal(col, pa.scalar(r.hi, pa.int64()))
    return pc.and_kleene(lo, hi)


def _micros(value: Any) -> int | None:
    """A timestamp literal as Spark hands it (a naive local ``datetime``, or an aware one)."""
    if not isinstance(value, dt.datetime):
        return None
    return int(value.timestamp()) * 1_000_000 + value.microsecond


_NUMERIC = {"partition", "offset", "timestamp"}


def push(filters: Sequence[Filter], decoding: bool) -> tuple[Pushed, list[Filter]]:
    """The filters the source takes, as one :class:`Pushed`, and those left to Spark."""
    pushed = Pushed()
    rest: list[Filter] = []
    for f in filters:
        taken = _take(f, pushed, decoding)
        if taken is None:
            rest.append(f)
        else:
            pushed = taken
    return pushed, rest


def _take(f: Filter, p: Pushed, decoding: bool) -> Pushed | None:
    """``p`` with ``f`` added, or None when the source cannot apply ``f`` exactly."""
    if isinstance(f, Not):
        child = f.child
        if isinstance(child, EqualTo) and child.attribute == ("isControl",):
            negated = child.value
            return _control(p, not negated) if isinstance(negated, bool) else None
        return None
    attribute: tuple[str, ...] = getattr(f, "attribute", ())
    if len(attribute) != 1:
        return None
    name = attribute[0]
    value: Any = getattr(f, "value", None)
    if name == "isControl":
        if isinstance(f, EqualTo) and isinstance(value, bool):
            return _control(p, value)
        return None
    if name in ("topic", "recordName"):
        if name == "recordName" and not decoding:
            return None
        if isinstance(f, EqualTo) and isinstance(value, str):
            values = frozenset([value])
        elif isinstance(f, In) and all(isinstance(v, str) for v in value):
            values = frozenset(value)
        else:
            return None
        if name == "topic":
            return replace(p, topics=values if p.topics is None else p.topics & values)
        names = p.record_names
        return replace(p, record_names=values if names is None else names & values)
    if name not in _NUMERIC:
        return None
    if isinstance(f, In):
        if name != "partition" or not all(_is_int(v) for v in value):
            return None
        values_i = frozenset(int(v) for v in value)
        return replace(p, partitions=values_i if p.partitions is None else p.partitions & values_i)
    number = _micros(value) if name == "timestamp" else (int(value) if _is_int(value) else None)
    if number is None:
        return None
    bounds = _bounds(f, number)
    if bounds is None:
        return None
    return replace(p, **{name: getattr(p, name).meet(*bounds)})


# The ``where`` option: conjuncts joined by AND (outside quotes), each a comparison of a column
# with a literal, a column IN a list, or isControl / NOT isControl.
_AND = re.compile(r"\s+and\s+(?=(?:[^']*'[^']*')*[^']*$)", re.I)
_CONJUNCT = re.compile(
    r"(?P<not>not\s+)?(?P<name>[A-Za-z_]\w*)"
    r"(?:\s*(?P<op><=|>=|=|<|>)\s*(?P<literal>.+)|\s+in\s*\((?P<values>.*)\))?",
    re.I | re.S,
)
_LITERAL = re.compile(r"'[^']*'|-?\d+|true|false", re.I)
_COMPARISONS: dict[str, Callable[[tuple[str, ...], Any], Filter]] = {
    "=": EqualTo,
    "<": LessThan,
    "<=": LessThanOrEqual,
    ">": GreaterThan,
    ">=": GreaterThanOrEqual,
}


def given_filters(where: str, decoding: bool) -> list[Filter]:
    """The filters of the ``where`` option, as Spark would push them; a conjunct the source
    cannot apply exactly (or cannot read) is an error that says what it takes."""
    filters: list[Filter] = []
    for conjunct in _AND.split(where.strip()) if where.strip() else []:
        f = _given_filter(conjunct.strip(), where)
        if _take(f, Pushed(), decoding) is None:
            needs = " (recordName needs decode)" if "recordName" in conjunct else ""
            raise ValueError(
                f"kafka-log: where={where!r}: the source cannot apply {conjunct!r}{needs}; "
                "it takes comparisons of topic, partition, offset, timestamp (an ISO time "
                "with its zone) and, with decode, recordName with a literal, IN lists and "
                "[NOT] isControl: put the rest in .where()"
            )
        filters.append(f)
    return filters


def _given_filter(conjunct: str, where: str) -> Filter:
    m = _CONJUNCT.fullmatch(conjunct)
    if m is None or (m["not"] and (m["op"] or m["values"] is not None)):
        raise ValueError(
            f"kafka-log: where={where!r}: cannot read {conjunct!r}; write conjuncts joined by "
            "AND, each `column op literal` (=, <, <=, >, >=), `column IN (literals)` or "
            "[NOT] isControl"
        )
    name = m["name"]
    if m["op"] is None and m["values"] is None:
        bare: Filter = EqualTo((name,), True)
        return Not(bare) if m["not"] else bare
    if m["values"] is not None:
        items = [v.strip() for v in m["values"].split(",")]
        return In((name,), tuple(_literal(name, v, where) for v in items))
    return _COMPARISONS[m["op"]]((name,), _literal(name, m["literal"].strip(), where))


def _literal(name: str, text: str, where: str) -> Any:
    if not _LITERAL.fullmatch(text):
        raise ValueError(
            f"kafka-log: where={where!r}: {text!r} is not a literal: use an integer, "
            "'a string', true or false"
        )
    if text.startswith("'"):
        value = text[1:-1]
        if name != "timestamp":
            return value
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            raise ValueError(
                f"kafka-log: where={where!r}: timestamp {value!r}: give an ISO time with its "
                "zone, '2024-05-01T12:00:00Z'"
            )
        return moment
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return int(text)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bounds(f: Filter, n: int) -> tuple[int, int] | None:
    if isinstance(f, EqualTo):
        return n, n
    if isinstance(f, GreaterThan):
        return n + 1, _MAX
    if isinstance(f, GreaterThanOrEqual):
        return n, _MAX
    if isinstance(f, LessThan):
        return _MIN, n - 1
    if isinstance(f, LessThanOrEqual):
        return _MIN, n
    return None


def _control(p: Pushed, value: bool) -> Pushed:
    if p.control is not None and p.control != value:
        return replace(p, offset=Range(1, 0))  # contradicts itself: no row
    return replace(p, control=value)


def keep_files(
    files: Iterable[tuple[StoragePath, str | None, int | None]], pushed: Pushed
) -> list[tuple[StoragePath, str | None, int | None]]:
    """``files`` without those whose topic, partition or offsets (segment file names: a
    segment holds the offsets from its name up to the next segment's of its folder) cannot
    match."""
    files = [f for f in files if pushed.slice_matches(f[1], f[2])]
    if pushed.offset.everything:
        return files
    bases: dict[str, list[int]] = {}
    for path, _, _ in files:
        m = _SEGMENT.match(path.name)
        if m:
            bases.setdefault(str(path.parent), []).append(int(m.group(1)))
    for listed in bases.values():
        listed.sort()
    out = []
    for path, topic, part in files:
        m = _SEGMENT.match(path.name)
        if m:
            base = int(m.group(1))
            starts = bases[str(path.parent)]
            i = bisect.bisect_right(starts, base)
            end = starts[i] - 1 if i < len(starts) else _MAX
            if not pushed.offset.overlaps(base, end):
                continue
        out.append((path, topic, part))
    return out


# --------------------------------------------------------------------------- reading a slice
#
# A slice is read with one ranged read: the bytes from where the indexes say the first
# wanted record can be (and, for an offset range, up to where its last can be), plus the header
# of the batch after them, which confirms that the end the index gave is a batch's start. The
# batches in those bytes are then kept or skipped by their headers, in memory.

_INDEX_ENTRY = np.dtype(">i4")
_TIME_ENTRY = np.dtype([("ts", ">i8"), ("rel", ">i4")])


def _offset_index(segment: StoragePath, base: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(absolute last offsets, positions) of the batches the offset index beside ``segment``
    names (``<base>.index``: int32 relative offset, int32 position; a preallocated index ends
    in zeros), ascending; None without an index or with one out of order."""
    index = segment.parent / (segment.name[: -len(".log")] + ".index")
    try:
        raw = np.frombuffer(storage.read_range(index), dtype=_INDEX_ENTRY)
    except OSError:
        return None
    if raw.size < 2:
        return None
    entries = raw[: raw.size // 2 * 2].reshape(-1, 2)
    rel, pos = entries[:, 0].astype(np.int64), entries[:, 1].astype(np.int64)
    valid = (rel > 0) | (np.arange(len(rel)) == 0)
    rel, pos = rel[valid], pos[valid]
    if not (np.all(np.diff(pos) > 0) and np.all(np.diff(rel) > 0)):
        return None
    return base + rel, pos


def index_positions(segment: StoragePath) -> list[int] | None:
    """The batch positions the offset index beside ``segment`` names, ascending (None
    without a usable index)."""
    m = _SEGMENT.match(segment.name)
    found = _offset_index(segment, int(m.group(1))) if m else None
    return None if found is None else [int(p) for p in found[1]]


def _time_floor(segment: StoragePath, base: int, ts_lo: int) -> int | None:
    """The first offset whose records can have a timestamp at or after ``ts_lo`` (ms), from
    the time index beside ``segment`` (``<base>.timeindex``: int64 largest timestamp so far,
    int32 its relative offset; every record up to that offset is no newer): None when it
    rules nothing out."""
    index = segment.parent / (segment.name[: -len(".log")] + ".timeindex")
    try:
        data = storage.read_range(index)
    except OSError:
        return None
    raw = np.frombuffer(data[: len(data) // 12 * 12], dtype=_TIME_ENTRY)
    raw = raw[(raw["rel"] > 0) | (np.arange(raw.size) == 0)]  # a preallocated tail
    if raw.size == 0 or np.any(np.diff(raw["ts"]) <= 0):
        return None
    i = int(np.searchsorted(raw["ts"], ts_lo, side="left")) - 1
    return None if i < 0 else base + int(raw["rel"][i]) + 1


def read_window(path: StoragePath, start: int, end: int, pushed: Pushed) -> tuple[int, int]:
    """The part of ``[start, end)`` of segment ``path`` where batches that can match lie, by
    its offset index (an offset range) and time index (a lower time bound): ``(start, end)``
    when no index narrows it. Batch positions, unchecked: :func:`read_ranges` checks them."""
    m = _SEGMENT.match(path.name)
    wants_ts = pushed.timestamp.lo != _MIN
    if not m or (pushed.offset.everything and not wants_ts):
        return start, end
    base = int(m.group(1))
    first = pushed.offset.lo if pushed.offset.lo != _MIN else None
    if wants_ts:
        floor = _time_floor(path, base, pushed.timestamp.lo // 1000)
        if floor is not None:
            first = floor if first is None else max(first, floor)
    index = _offset_index(path, base) if first is not None or pushed.offset.hi != _MAX else None
    if index is None:
        return start, end
    offsets, positions = index
    lo, hi = start, end
    if first is not None:
        # an entry names a batch whose last offset it holds: from the last entry at or below
        # ``first`` on, nothing at or after ``first`` is missed
        i = int(np.searchsorted(offsets, first, side="right")) - 1
        if i >= 0:
            lo = max(start, min(int(positions[i]), end))
    if pushed.offset.hi != _MAX:
        # the batch after the first entry at or past ``hi`` starts past it
        j = int(np.searchsorted(offsets, pushed.offset.hi, side="left")) + 1
        if j < len(positions):
            hi = min(end, max(int(positions[j]), lo))
    return lo, hi


def read_ranges(
    path: StoragePath, start: int, end: int, pushed: Pushed
) -> Iterator[tuple[int, bytes]]:
    """The bytes of ``[start, end)`` of ``path`` that hold batches that can match, as
    ``(position, bytes)``: one ranged read of the window the indexes give (checked: it starts
    at a batch at or below the wanted offsets and ends where a batch starts, else the whole
    range is read), then the batches whose headers (offsets, newest timestamp, control flag)
    rule them out are left out. Entries that are not v2 or do not frame are kept, so the
    reader reports them as it would."""
    lo, hi = read_window(path, start, end, pushed)
    data = storage.read_range(path, lo, min(end, hi + _HEADER.size) if hi < end else hi)
    if not _window_holds(data, lo, hi, start, end, pushed):
        lo, hi = start, end
        data = storage.read_range(path, start, end)
    data = data[: hi - lo]
    yield from ((lo + s, data[s:e]) for s, e in batch_ranges(data, pushed))


def _window_holds(data: bytes, lo: int, hi: int, start: int, end: int, pushed: Pushed) -> bool:
    """Whether the window the indexes gave starts at a batch no later than the wanted
    offsets and ends at a batch past them (an index that is stale, or of another file, is
    not used)."""
    if lo != start:
        if len(data) < _HEADER.size:
            return False
        base, _, _, magic, *_ = _HEADER.unpack_from(data)
        if magic != 2 or base > max(pushed.offset.lo, 0):
            return False
    if hi != end:
        at = hi - lo
        if len(data) < at + _HEADER.size:
            return False
        base, _, _, magic, *_ = _HEADER.unpack_from(data, at)
        if magic != 2 or base <= pushed.offset.hi:
            return False
    return True


def batch_ranges(data: bytes, pushed: Pushed) -> list[tuple[int, int]]:
    """The byte ranges of ``data`` (back-to-back entries) holding batches that can match,
    from their headers (offsets, newest timestamp, control flag); batches that are not v2 or
    do not frame are kept, so the reader reports them as it would."""
    end = len(data)
    wants_ts = pushed.timestamp.lo != _MIN
    if pushed.offset.everything and not wants_ts and pushed.control is None:
        return [(0, end)] if end else []
    pos = 0
    ranges: list[tuple[int, int]] = []
    while pos + _HEADER.size <= end:
        base, length, _, magic, _, attrs, delta, _, max_ts = _HEADER.unpack_from(data, pos)
        stop = pos + 12 + length
        if length < _HEADER.size - 12 or stop > end or magic != 2 or delta < 0:
            break  # the reader reports what is wrong from here on
        keep = (
            pushed.offset.overlaps(base, base + delta)
            and not (wants_ts and max_ts * 1000 < pushed.timestamp.lo)
            and (pushed.control is None or bool(attrs & _CONTROL) == pushed.control)
        )
        if keep:
            if ranges and ranges[-1][1] == pos:
                ranges[-1] = (ranges[-1][0], stop)
            else:
                ranges.append((pos, stop))
        pos = stop
    if pos < end:
        if ranges and ranges[-1][1] == pos:
            ranges[-1] = (ranges[-1][0], end)
        else:
            ranges.append((pos, end))
    return ranges
