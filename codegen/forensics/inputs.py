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
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from codegen.dumps import storage
from codegen.dumps.model import BatchHeader
from codegen.dumps.recognize import NotKafkaData, require_kafka_data
from codegen.dumps.segments import SegmentReader, segment_file_info, segment_files
from codegen.dumps.storage import RemotePath, StoragePath

__all__ = [
    "REPLICATION_CHECKPOINT",
    "InputError",
    "LogDirs",
    "LogEnd",
    "LogEnds",
    "PartitionFolder",
    "as_log_dirs",
    "discover",
    "expand",
    "read_offset_checkpoint",
]

REPLICATION_CHECKPOINT: Final = "replication-offset-checkpoint"
_PARTITION_DIR: Final = re.compile(r"^(.+)-(\d+)$")
_EARLIEST: Final = -(1 << 63)


class InputError(ValueError):
    """An input that is not what a command reads (no such path, the wrong topic, no segment)."""


@dataclass(frozen=True, slots=True)
class PartitionFolder:
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
    m = _PARTITION_DIR.match(folder.name)
    return (m.group(1), int(m.group(2))) if m else None


@dataclass(slots=True)
class LogDirs:
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

    def coordinator_segments(
        self, topic: str, files_are: str = "__consumer_offsets"
    ) -> list[tuple[int, list[StoragePath]]]:
        """(partition, .log segments) of a coordinator topic, one replica per partition: the
        one whose last segment starts furthest (then the most bytes). Bare segment files are
        read as partition -1 of ``files_are``."""
        out: list[tuple[int, list[StoragePath]]] = []
        for partition, replicas in self.partitions(topic).items():
            best = max(replicas, key=_replica_rank)
            logs = best.logs()
            if logs:
                out.append((partition, logs))
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
        if not sub.is_dir() or sub == skip:
            continue
        owner = _partition_of(sub)
        if owner is None:
            continue
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


@dataclass(frozen=True, slots=True)
class LogEnd:
    """A partition's log end over time, and where it was read."""

    times: list[int]
    """Running maxima of batch timestamps (sorted, for bisection)."""
    ends: list[int]
    source: str
    """``segments``, ``empty segments`` or ``replication-offset-checkpoint``."""
    where: str
    """The folder or checkpoint file read (and how many replicas were compared)."""
    history: bool
    """False when only the end at the image's time is known (a checkpoint)."""

    @property
    def last(self) -> int:
        return self.ends[-1]

    def at(self, timestamp: int) -> int:
        i = bisect.bisect_right(self.times, timestamp)
        return self.ends[i - 1] if i else 0


class LogEnds:
    """Log end offsets of data partitions, from a :class:`LogDirs`' replicas and checkpoints."""

    def __init__(self, dirs: LogDirs | None) -> None:
        self.dirs = dirs
        self._found: dict[tuple[str, int], LogEnd | None] = {}
        self.newest_timestamp = -1

    def of(self, topic: str, partition: int) -> LogEnd | None:
        k = (topic, partition)
        if k in self._found:
            return self._found[k]
        found = self._load(k)
        self._found[k] = found
        if found is not None and found.history and found.times:
            self.newest_timestamp = max(self.newest_timestamp, found.times[-1])
        return found

    def newest_data_timestamp(self) -> int:
        """The newest batch timestamp of every data partition found (not the internal
        topics'), -1 when there is none."""
        if self.dirs is not None:
            for k in sorted({*self.dirs.replicas, *self.dirs.neighbours}):
                if not k[0].startswith("__"):
                    self.of(*k)
        return self.newest_timestamp

    def _load(self, k: tuple[str, int]) -> LogEnd | None:
        if self.dirs is None:
            return None
        replicas = self.dirs.replicas.get(k) or self.dirs.neighbours.get(k) or []
        candidates = [e for r in replicas if (e := _from_segments(r)) is not None]
        candidates += [
            LogEnd([_EARLIEST], [hw], REPLICATION_CHECKPOINT, str(path), False)
            for hw, path in self.dirs.checkpoints.get(k, [])
        ]
        if not candidates:
            return None
        # Prefer segments (they have a history) over a checkpoint at the same end.
        best = max(candidates, key=lambda e: (e.last, e.history))
        if len(candidates) > 1:
            return LogEnd(
                best.times,
                best.ends,
                best.source,
                f"{best.where}; the highest of {len(candidates)} replicas/checkpoints",
                best.history,
            )
        return best


def _from_segments(r: PartitionFolder) -> LogEnd | None:
    logs = r.logs()
    if not logs:
        return None
    times: list[int] = []
    ends: list[int] = []
    newest = -1
    for f in logs:
        for item in SegmentReader(f).batch_headers():
            if not isinstance(item, BatchHeader):
                continue
            # Running maxima keep both lists sorted for the bisection.
            newest = max(newest, item.max_timestamp)
            times.append(newest)
            ends.append(max(ends[-1] if ends else 0, item.last_offset + 1))
    active_base = segment_file_info(logs[-1]).base_offset
    if not times:
        if active_base is None:
            return None
        return LogEnd([_EARLIEST], [active_base], "empty segments", str(r.folder), True)
    if active_base is not None and active_base > ends[-1]:
        # The active segment is empty and starts past the last batch (records removed).
        times.append(times[-1])
        ends.append(active_base)
    return LogEnd(times, ends, "segments", str(r.folder), True)
