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

By default (``pushFilters=auto``) the source takes them only where Spark keeps each scan's read
plan to that scan (:func:`scoped_read_plans`). Spark 4.3.0 does not: the planning worker calls
``reader()``, ``pushFilters()`` and ``partitions()`` on one reader per scan and sends back its
partitions and its pickled ``read`` (the reader with its filters), but ``PythonScanBuilder``
stores them on the loaded DataFrame's ``PythonDataSourceV2`` (``setReadInfo``), and every scan
of that DataFrame reads with what is stored there when it runs, partitions and ``read`` alike.
So a query that scans one loaded DataFrame twice with different filters (a union or self-join
of two filtered copies) reads both with the last scan's filters, and a later query whose
filters Spark cannot send (none, or only ones it does not translate) reads with the filters of
an earlier query: rows go missing either way, and nothing the source keeps in its partitions
or its reader can tell the scans apart. The option ``where`` (:func:`given_filters`) gives
the same filters at load instead: part of the DataFrame, so of every scan of it.
"""

from __future__ import annotations

import bisect
import datetime as dt
import os
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
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

__all__ = [
    "PUSHDOWN_CONF",
    "Pushed",
    "batch_ranges",
    "given_filters",
    "keep_files",
    "push",
    "scoped_read_plans",
    "takes_filters",
]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

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
    files: Iterable[tuple[Path, str | None, int | None]], pushed: Pushed
) -> list[tuple[Path, str | None, int | None]]:
    """``files`` without those whose topic, partition or offsets (segment file names: a
    segment holds the offsets from its name up to the next segment's of its folder) cannot
    match."""
    files = [f for f in files if pushed.slice_matches(f[1], f[2])]
    if pushed.offset.everything:
        return files
    bases: dict[Path, list[int]] = {}
    for path, _, _ in files:
        m = _SEGMENT.match(path.name)
        if m:
            bases.setdefault(path.parent, []).append(int(m.group(1)))
    for listed in bases.values():
        listed.sort()
    out = []
    for path, topic, part in files:
        m = _SEGMENT.match(path.name)
        if m:
            base = int(m.group(1))
            starts = bases[path.parent]
            i = bisect.bisect_right(starts, base)
            end = starts[i] - 1 if i < len(starts) else _MAX
            if not pushed.offset.overlaps(base, end):
                continue
        out.append((path, topic, part))
    return out


def _index_start(path: str, start: int, end: int, first: int) -> int:
    """Where in segment ``path`` the batch holding offset ``first`` starts at the latest,
    from the offset index beside it (``<base>.index``: entries of relative offset and file
    position, ascending); ``start`` when there is no index or no entry below ``first``."""
    m = _SEGMENT.match(os.path.basename(path))
    index = path[: -len(".log")] + ".index"
    if not m or not os.path.exists(index):
        return start
    base = int(m.group(1))
    raw = np.fromfile(index, dtype=">i4")
    if raw.size < 2:
        return start
    entries = raw[: raw.size // 2 * 2].reshape(-1, 2)
    rel, pos = entries[:, 0].astype(np.int64), entries[:, 1].astype(np.int64)
    valid = (rel > 0) | (np.arange(len(rel)) == 0)  # a preallocated index ends in zeros
    rel, pos = rel[valid], pos[valid]
    # an entry names a batch whose base offset is at most base + rel: every earlier batch
    # ends before that one, so reading from its position misses nothing at or after it
    i = int(np.searchsorted(base + rel, first, side="right")) - 1
    if i < 0 or not (np.all(np.diff(pos) > 0) and np.all(np.diff(rel) > 0)):
        return start
    return max(start, min(int(pos[i]), end))


def batch_ranges(path: str, start: int, end: int, pushed: Pushed) -> list[tuple[int, int]]:
    """The byte ranges of ``[start, end)`` of ``path`` holding batches that can match, from
    their headers (offsets, newest timestamp, control flag); batches that are not v2 or do
    not frame are kept, so the reader reports them as it would."""
    wants_ts = pushed.timestamp.lo != _MIN
    if pushed.offset.everything and not wants_ts and pushed.control is None:
        return [(start, end)]
    pos = start
    ranges: list[tuple[int, int]] = []
    with open(path, "rb") as fh:
        if pushed.offset.lo != _MIN:
            pos = _index_start(path, start, end, pushed.offset.lo)
            fh.seek(pos)
            head = fh.read(_HEADER.size)
            # An index that does not point at a batch at or below the offset (stale, or
            # from another file) is not used.
            if pos != start and (
                len(head) < _HEADER.size
                or _HEADER.unpack(head)[3] != 2
                or _HEADER.unpack(head)[0] > pushed.offset.lo
            ):
                pos = start
        while pos + 12 <= end:
            fh.seek(pos)
            head = fh.read(_HEADER.size)
            if len(head) < _HEADER.size:
                break
            base, length, _, magic, _, attrs, delta, _, max_ts = _HEADER.unpack(head)
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
