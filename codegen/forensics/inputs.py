"""What the forensics commands read: a cluster's disks, given as paths and globs.

Each path is one of

- a broker image: a log dir holding ``<topic>-<partition>`` folders (and, on a real broker,
  ``replication-offset-checkpoint``, ``meta.properties``...);
- a partition folder (``__consumer_offsets-7``, ``orders-0``);
- a segment file (``00000000000000000000.log``), whose topic is its folder's name.

Several paths are merged into one :class:`LogDirs`: a partition held by several replicas
(one per broker image) is kept once per replica, and the readers choose among them (the
coordinator topics: the replica with the most data; log ends: the highest, and they say so).

Log ends (:class:`LogEnds`) come, per data partition, from the first of these that a replica
has: its segments' batches (the end over time), its empty segments (no batch: the base offset
of the active segment, the broker's log end after retention or compaction removed every
record), or a broker image's ``replication-offset-checkpoint`` (the partition's high watermark
when the broker wrote it; no history). Each log end says where it came from.

A command states what it needs (:meth:`LogDirs.require`): given something else, the error says
what was expected and what was found.

``--as-of`` reads the disks as they were at a moment (:func:`resolve_cut`, :func:`segments_at`,
docs/forensics.md): of every partition, the batches up to the cut (:mod:`codegen.dumps.views.cut`)
and the segment files that held them; the brokers' checkpoints, written at the end, are left
out.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.dumps import storage
from codegen.dumps.batch_rows import batch_rows, header_rows
from codegen.dumps.coordinator_types import CONSUMER_OFFSETS
from codegen.dumps.header_ends import batch_ends
from codegen.dumps.model import ReadError, SegmentError
from codegen.dumps.partition_folders import is_partition_folder, partition_of
from codegen.dumps.recognize import NotKafkaData, require_kafka_data
from codegen.dumps.segments import SegmentReader, segment_file_info, segment_files
from codegen.dumps.storage import RemotePath, StoragePath
from codegen.dumps.views.cut import AsOf, kept_batches, newest_batch_time
from codegen.dumps.views.log_ends import (
    EARLIEST,
    REPLICATION_CHECKPOINT,
    SEGMENT_SCHEMA,
    LogEndSteps,
    SegmentsAt,
    best_candidate,
    compared_where,
    log_end_steps,
    segments_at,
    steps_of,
)
from codegen.errors import BadInputError
from codegen.slotted import FrozenSlotted, Slotted, field

__all__ = [
    "NO_CUT",
    "REPLICATION_CHECKPOINT",
    "Cut",
    "InputError",
    "LogDirs",
    "LogEnd",
    "LogEnds",
    "PartitionFolder",
    "as_log_dirs",
    "discover",
    "expand",
    "parse_as_of",
    "read_offset_checkpoint",
    "replica_at",
    "replica_rows",
    "resolve_cut",
]


class InputError(BadInputError, ValueError):
    """An input that is not what a command reads (no such path, the wrong topic, no segment,
    an ``--as-of`` it cannot take)."""


class PartitionFolder(FrozenSlotted):
    """One replica of a partition: its folder, and the broker image it was found in."""

    topic: str
    partition: int
    folder: StoragePath
    image: StoragePath | None
    """The log dir given (or the folder above a partition folder given), None for a file."""

    def logs(self) -> list[StoragePath]:
        return [f for f in segment_files(self.folder) if f.suffix == ".log"]


def expand(
    paths: Iterable[str | StoragePath], options: Mapping[str, str] | None = None
) -> list[StoragePath]:
    """Paths with their globs (``*``, ``?``, ``[...]``, ``{a,b}``) expanded, in order, without
    repeats; local paths or URLs of object storage (:mod:`codegen.dumps.storage`, its
    ``options``)."""
    out: list[StoragePath] = []
    for text, found in storage.expand(list(paths), options):
        if not found:
            raise InputError(f"{text}: the pattern matches nothing")
        out.extend(f for f in found if f not in out)
    return out


def read_offset_checkpoint(path: StoragePath) -> dict[tuple[str, int], int]:
    """A broker's ``replication-offset-checkpoint`` (version 0: a version line, a count line,
    then ``topic partition offset`` lines). Raises :class:`InputError` when malformed."""
    lines = path.read_text(encoding="utf-8").splitlines()
    try:
        version, count = int(lines[0]), int(lines[1])
    except (IndexError, ValueError):
        raise InputError(f"{path}: not an offset checkpoint (version and count lines)") from None
    if version != 0:
        raise InputError(f"{path}: offset checkpoint version {version}, only 0 is known")
    entries: dict[tuple[str, int], int] = {}
    for n, line in enumerate(lines[2 : 2 + count], start=3):
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].lstrip("-").isdigit():
            raise InputError(f"{path}:{n}: expected 'topic partition offset', found {line!r}")
        entries[(parts[0], int(parts[1]))] = int(parts[2])
    if len(entries) != count:
        raise InputError(f"{path}: {count} entries announced, {len(entries)} found")
    return entries


def _partition_of(folder: StoragePath) -> tuple[str, int] | None:
    return partition_of(folder.name)


class LogDirs(Slotted):
    """The partition folders, segment files and offset checkpoints of the paths given."""

    given: list[StoragePath]
    images: list[StoragePath] = field(default_factory=list)
    """Folders holding partition folders (the log dirs given, or above a partition folder)."""
    replicas: dict[tuple[str, int], list[PartitionFolder]] = field(default_factory=dict)
    """(topic, partition) -> its replicas among the paths given."""
    neighbours: dict[tuple[str, int], list[PartitionFolder]] = field(default_factory=dict)
    """Partition folders next to a partition folder given: read for log ends only."""
    files: list[StoragePath] = field(default_factory=list)
    """Segment files given outside any partition folder."""
    checkpoints: dict[tuple[str, int], list[tuple[int, StoragePath]]] = field(default_factory=dict)
    """(topic, partition) -> (high watermark, checkpoint file) per image holding one."""
    other: list[StoragePath] = field(default_factory=list)
    """What the paths held that is none of the above (for error messages)."""

    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.replicas})

    def partitions(self, topic: str) -> dict[int, list[PartitionFolder]]:
        return {p: r for (t, p), r in sorted(self.replicas.items()) if t == topic}

    def describe(self) -> str:
        """What the paths hold, for messages: topics and partition counts, or the files."""
        if self.replicas:
            counts: dict[str, int] = {}
            for t, _ in self.replicas:
                counts[t] = counts.get(t, 0) + 1
            listed = ", ".join(f"{t} ({n} partition(s))" for t, n in sorted(counts.items())[:8])
            more = f" and {len(counts) - 8} more topic(s)" if len(counts) > 8 else ""
            return f"partition folders of {listed}{more}"
        if self.files:
            return f"{len(self.files)} segment file(s)"
        if self.other:
            names = ", ".join(p.name for p in self.other[:6])
            return f"no Kafka partition folder or segment (found: {names})"
        return "nothing (empty folders)"

    def require(self, *topics: str, command: str) -> None:
        """Raise :class:`InputError` unless the paths hold one of ``topics`` (or bare segment
        files, read as the first of them)."""
        if any(t in topics for t, _ in self.replicas):
            return
        if self.files and not self.replicas:
            return
        wanted = ", ".join(f"{t}-N" for t in topics)
        raise InputError(
            f"expected {wanted} partition folders (or broker log dirs holding them) for "
            f"{command}; {', '.join(map(str, self.given))} holds {self.describe()}"
        )

    def coordinator_replicas(self, topic: str) -> list[PartitionFolder]:
        """The replica read of each partition of a coordinator topic (with segments): the one
        whose last segment starts furthest (then the most bytes)."""
        chosen = [max(replicas, key=_replica_rank) for replicas in self.partitions(topic).values()]
        return [r for r in chosen if r.logs()]

    def coordinator_segments(
        self, topic: str, files_are: str = "__consumer_offsets"
    ) -> list[tuple[int, list[StoragePath]]]:
        """(partition, .log segments) of a coordinator topic, one replica per partition
        (:meth:`coordinator_replicas`). Bare segment files are read as partition -1 of
        ``files_are``."""
        out = [(r.partition, r.logs()) for r in self.coordinator_replicas(topic)]
        if self.files and topic == files_are:
            by_partition: dict[int, list[StoragePath]] = {}
            for f in self.files:
                by_partition.setdefault(-1, []).append(f)
            out.extend(sorted(by_partition.items()))
        return out


def _replica_rank(r: PartitionFolder) -> tuple[int, int]:
    logs = r.logs()
    if not logs:
        return (-1, 0)
    base = segment_file_info(logs[-1]).base_offset or 0
    return (base, sum(f.stat().st_size for f in logs))


def as_log_dirs(
    paths: str | StoragePath | Sequence[str | StoragePath] | LogDirs,
    options: Mapping[str, str] | None = None,
) -> LogDirs:
    """``paths`` discovered (a :class:`LogDirs` is kept as it is)."""
    if isinstance(paths, LogDirs):
        return paths
    return discover([paths] if isinstance(paths, str | Path | RemotePath) else list(paths), options)


def discover(
    paths: Sequence[str | StoragePath], options: Mapping[str, str] | None = None
) -> LogDirs:
    """The partition folders, files and checkpoints under ``paths`` (globs expanded; local
    paths or URLs of object storage, read with ``options``: :mod:`codegen.dumps.storage`)."""
    given = expand(paths, options)
    if not given:
        raise InputError("no path given: give broker log dirs, partition folders or segments")
    dirs = LogDirs(given)
    for path in given:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
        if path.is_file():
            owner = _partition_of(path.parent)
            if owner is not None and path.suffix == ".log":
                _add(dirs.replicas, PartitionFolder(*owner, path.parent, None))
            elif path.suffix == ".log":
                dirs.files.append(path)
            else:
                dirs.other.append(path)
            continue
        own = _partition_of(path)
        if own is not None and any(f.suffix == ".log" for f in path.iterdir()):
            _add(dirs.replicas, PartitionFolder(*own, path, path.parent))
            _scan_image(dirs, path.parent, dirs.neighbours, skip=path)
            continue
        if not _scan_image(dirs, path, dirs.replicas):
            if any(f.suffix == ".log" for f in path.iterdir() if f.is_file()):
                # Segments in a folder not named <topic>-<partition>.
                dirs.files.extend(f for f in segment_files(path) if f.suffix == ".log")
            else:
                dirs.other.extend(sorted(path.iterdir()))
    try:
        require_kafka_data(_log_files(dirs))
    except NotKafkaData as exc:
        raise InputError(str(exc)) from None
    return dirs


def _log_files(dirs: LogDirs) -> Iterator[StoragePath]:
    """The segment files of every partition folder found and the segment files given."""
    for table in (dirs.replicas, dirs.neighbours):
        for replicas in table.values():
            for r in replicas:
                yield from r.logs()
    yield from dirs.files


def _add(table: dict[tuple[str, int], list[PartitionFolder]], r: PartitionFolder) -> None:
    replicas = table.setdefault((r.topic, r.partition), [])
    if all(x.folder.resolve() != r.folder.resolve() for x in replicas):
        replicas.append(r)


def _scan_image(
    dirs: LogDirs,
    image: StoragePath,
    into: dict[tuple[str, int], list[PartitionFolder]],
    skip: StoragePath | None = None,
) -> bool:
    found = False
    for sub in storage.listdir(image):
        if sub == skip or not is_partition_folder(sub):
            continue
        owner = _partition_of(sub)
        assert owner is not None
        found = True
        _add(into, PartitionFolder(*owner, sub, image))
    checkpoint = image / REPLICATION_CHECKPOINT
    if checkpoint.is_file():
        found = True
        for k, hw in read_offset_checkpoint(checkpoint).items():
            entries = dirs.checkpoints.setdefault(k, [])
            if all(p != checkpoint for _, p in entries):
                entries.append((hw, checkpoint))
    if found and image not in dirs.images:
        dirs.images.append(image)
    return found


class Cut(FrozenSlotted):
    """``--as-of`` resolved for every partition read: ``__consumer_offsets`` by its own cut (an
    offset is one of its offsets), every other partition by a time, ``now``."""

    consumer_offsets: AsOf | None
    others: AsOf | None
    now: int | None
    """The moment of the cut (epoch ms); None without a cut."""

    def of(self, topic: str) -> AsOf | None:
        return self.consumer_offsets if topic == CONSUMER_OFFSETS else self.others


NO_CUT: Final = Cut(None, None, None)


def parse_as_of(text: str) -> AsOf:
    """``123`` (a log offset) or an ISO-8601 time (``2024-05-01T12:00:00Z``; UTC if no zone)."""
    text = text.strip()
    if text.isdigit():
        return AsOf(offset=int(text))
    try:
        moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"--as-of {text!r} is neither a log offset (digits) nor an ISO-8601 time such as "
            "2024-05-01T12:00:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return AsOf(timestamp_ms=int(moment.timestamp() * 1000))


def resolve_cut(dirs: LogDirs, as_of: AsOf | None) -> Cut:
    """``as_of`` for every partition of ``dirs``. A time cuts every partition at that time. A
    ``__consumer_offsets`` offset cuts its partitions there; the moment of the cut is the
    newest timestamp of the batches (with records) it keeps, and the other partitions are read
    as of that moment (-1 when it keeps none: they keep nothing either)."""
    if as_of is None:
        return NO_CUT
    if as_of.offset is None:
        return Cut(as_of, as_of, as_of.timestamp_ms)
    kept = [
        kept_batches(batch_rows(f), as_of)
        for _, files in dirs.coordinator_segments(CONSUMER_OFFSETS)
        for f in files
    ]
    moment = max((newest_batch_time(rows) for rows in kept), default=-1)
    return Cut(as_of, AsOf(timestamp_ms=moment), moment)


def replica_rows(
    logs: Sequence[StoragePath], errors: list[SegmentError] | None = None
) -> tuple[pa.Table, pa.Table]:
    """A replica's segments (:data:`codegen.dumps.views.log_ends.SEGMENT_SCHEMA`) and their
    batch rows with their ``segment`` (:func:`codegen.dumps.batch_rows.batch_rows`), what the
    views of :mod:`codegen.dumps.views.log_ends` read. What could not be read also goes to
    ``errors``."""
    segments = pa.table(
        {
            "segment": list(range(len(logs))),
            "baseOffset": [segment_file_info(f).base_offset for f in logs],
        },
        schema=SEGMENT_SCHEMA,
    )
    tables = []
    for n, f in enumerate(logs):
        items = list(SegmentReader(f).batch_header_columns())
        if errors is not None:
            errors.extend(i for i in items if isinstance(i, SegmentError))
        rows = header_rows(items)
        tables.append(rows.append_column("segment", pa.repeat(pa.scalar(n, pa.int32()), len(rows))))
    batches = (
        pa.concat_tables(tables)
        if tables
        else header_rows([]).append_column("segment", pa.array([], pa.int32()))
    )
    return segments, batches


def replica_at(
    logs: Sequence[StoragePath], cut: AsOf | None, errors: list[SegmentError] | None = None
) -> SegmentsAt:
    """A replica's segments and batches as they were at ``cut`` (:func:`codegen.dumps.views
    .log_ends.segments_at`)."""
    return segments_at(*replica_rows(logs, errors), cut)


class LogEnd(Slotted):
    """A partition's log end over time, and where it was read."""

    times: Final[npt.NDArray[np.int64]]
    """Running maxima of batch timestamps (sorted, for bisection); int64, as given."""
    ends: Final[npt.NDArray[np.int64]]
    source: Final[str]
    """``segments``, ``empty segments`` or ``replication-offset-checkpoint``."""
    where: Final[str]
    """The folder or checkpoint file read (and how many replicas were compared)."""
    history: Final[bool]
    """False when only the end at the image's time is known (a checkpoint)."""

    __eq__ = object.__eq__  # compared and hashed by identity (not by its arrays)
    __hash__ = object.__hash__

    def __init__(
        self,
        times: npt.NDArray[np.int64],
        ends: npt.NDArray[np.int64],
        source: str,
        where: str,
        history: bool,
    ) -> None:
        self.times = np.asarray(times, np.int64)
        self.ends = np.asarray(ends, np.int64)
        self.source = source
        self.where = where
        self.history = history

    @property
    def last(self) -> int:
        return int(self.ends[-1])

    def arrays(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """:attr:`times` and :attr:`ends`."""
        return self.times, self.ends

    def at(self, timestamp: int) -> int:
        i = int(np.searchsorted(self.times, timestamp, side="right"))
        return int(self.ends[i - 1]) if i else 0


class LogEnds:
    """Log end offsets of data partitions, from a :class:`LogDirs`' replicas and checkpoints;
    with a ``cut``, from the segments as they were then (:func:`segments_at`): the
    checkpoints, written at the end, are left out.

    Without a cut, the batches of every replica asked for at once are read by the native
    header pass in one call (:func:`codegen.dumps.header_ends.batch_ends`); a replica with a
    file the pass leaves to the reference (or any, without the pass or with a cut) is read from
    its batch rows (:func:`replica_at`). Both give the steps of
    :func:`codegen.dumps.views.log_ends.steps_of`.

    ``errors`` receives the segment errors of the replicas read, as each partition's log end
    is read (the log end is that of the batches read whole): the native pass checks each
    batch's framing and CRC as the reference does and leaves a file with an error to it, which
    reports it."""

    def __init__(
        self,
        dirs: LogDirs | None,
        cut: AsOf | None = None,
        errors: list[ReadError] | None = None,
    ) -> None:
        self.dirs = dirs
        self.cut = cut
        self.errors = errors
        self._found: dict[tuple[str, int], LogEnd | None] = {}

    def of(self, topic: str, partition: int) -> LogEnd | None:
        k = (topic, partition)
        if k not in self._found:
            self._load([k])
        return self._found[k]

    def data_ends(self) -> pa.Table:
        """``endTime, history``: the newest step of the log end of every data partition found
        (not the internal topics') and of every partition asked for."""
        if self.dirs is not None:
            keys = sorted({*self.dirs.replicas, *self.dirs.neighbours})
            self._load([k for k in keys if not k[0].startswith("__") and k not in self._found])
        found = [e for e in self._found.values() if e is not None and len(e.times)]
        return pa.table(
            {"endTime": [int(e.times[-1]) for e in found], "history": [e.history for e in found]},
            schema=pa.schema([pa.field("endTime", pa.int64()), pa.field("history", pa.bool_())]),
        )

    def _load(self, keys: list[tuple[str, int]]) -> None:
        if self.dirs is None:
            self._found.update(dict.fromkeys(keys))
            return
        dirs = self.dirs
        replicas = {k: dirs.replicas.get(k) or dirs.neighbours.get(k) or [] for k in keys}
        steps = self._replica_steps([r for rs in replicas.values() for r in rs])
        at = 0
        for k, rs in replicas.items():
            candidates = [
                LogEnd(s.times, s.ends, s.source, str(r.folder), True)
                for r, s in zip(rs, steps[at : at + len(rs)], strict=True)
                if s is not None
            ]
            at += len(rs)
            if self.cut is None:
                candidates += [
                    LogEnd(_one(EARLIEST), _one(hw), REPLICATION_CHECKPOINT, str(path), False)
                    for hw, path in dirs.checkpoints.get(k, [])
                ]
            self._found[k] = _best(candidates)

    def _replica_steps(self, replicas: list[PartitionFolder]) -> list[LogEndSteps | None]:
        """Each replica's log end over time (:func:`log_end_steps`)."""
        logs = [r.logs() for r in replicas]
        files = [f for fs in logs for f in fs]
        ends = batch_ends(files) if self.cut is None and files else None
        found: list[LogEndSteps | None] = []
        at = 0
        for fs in logs:
            read = [] if ends is None else [e for e in ends[at : at + len(fs)] if e is not None]
            at += len(fs)
            if fs and len(read) == len(fs):
                times = np.concatenate([t for t, _ in read])
                lasts = np.concatenate([last for _, last in read])
                found.append(steps_of(times, lasts, segment_file_info(fs[-1]).base_offset))
            else:
                segment_errors: list[SegmentError] = []
                found.append(log_end_steps(replica_at(fs, self.cut, segment_errors)))
                if self.errors is not None:
                    self.errors += segment_errors
        return found


def _one(value: int) -> npt.NDArray[np.int64]:
    return np.array([value], np.int64)


def _best(candidates: list[LogEnd]) -> LogEnd | None:
    """A partition's log end among its candidates, in the order they are compared
    (:func:`codegen.dumps.views.log_ends.best_candidate`)."""
    if not candidates:
        return None
    chosen = candidates[
        best_candidate([c.last for c in candidates], [c.history for c in candidates])
    ]
    if len(candidates) == 1:
        return chosen
    where = compared_where(chosen.where, len(candidates))
    return LogEnd(chosen.times, chosen.ends, chosen.source, where, chosen.history)
