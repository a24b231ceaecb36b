"""Which files ``dump`` reads, and where each comes from.

A path is a segment or snapshot file, a partition folder (``<topic>-<n>``), a broker's log
folder (its partition folders), or a tiered topic's remote storage (Kafka's LocalTieredStorage
layout, :mod:`codegen.dumps.remote_storage`: its root or a remote partition folder).
:func:`input_files` lists the files to read in order; :func:`tiered_order` puts a partition's
remote and local segments in offset order, each read below the next one's base offset;
:func:`guess_topic` tells the internal topic of a file by its folder or file name and
:class:`RowSource` the topic and partition its rows carry.
"""

from __future__ import annotations

from typing import Any, Final

from codegen.dumps.coordinator import CONSUMER_OFFSETS, SHARE_GROUP_STATE, TRANSACTION_STATE
from codegen.dumps.metadata import CLUSTER_METADATA, REMOTE_LOG_METADATA
from codegen.dumps.partition_folders import partition_of
from codegen.dumps.remote_storage import (
    is_remote_storage,
    readable_segments,
    remote_file_name,
    remote_partition,
    remote_partitions,
    remote_segments,
)
from codegen.dumps.segments import segment_file_info, segment_files
from codegen.dumps.storage import StoragePath
from codegen.errors import BadInputError
from codegen.slotted import FrozenSlotted

__all__ = [
    "INTERNAL_TOPICS",
    "LOG_FOLDER_SUFFIXES",
    "TXN_INDEX",
    "NothingToRead",
    "RowSource",
    "guess_topic",
    "input_files",
    "local_topic_id",
    "readable_remote",
    "tiered_order",
]

INTERNAL_TOPICS: Final = (
    CONSUMER_OFFSETS,
    TRANSACTION_STATE,
    SHARE_GROUP_STATE,
    CLUSTER_METADATA,
    REMOTE_LOG_METADATA,
)
"""The internal topics whose records ``dump`` decodes by its own specs."""
TXN_INDEX: Final = ".txnindex"
"""Aborted-transaction indexes: read in every format, an entry a line or row."""
LOG_FOLDER_SUFFIXES: Final = (
    ".log",
    ".checkpoint",
    ".index",
    ".timeindex",
    TXN_INDEX,
    ".snapshot",
)
"""The files of a partition folder ``--format dump-log`` reads (Kafka's tool reads these kinds)."""


class NothingToRead(BadInputError, ValueError):
    """A folder given holds no file to read; the text says what it holds and what to pass."""


def guess_topic(path: StoragePath) -> str | None:
    """The internal topic a segment path belongs to, from its folder or file name."""
    if path.name.endswith(".checkpoint"):
        return CLUSTER_METADATA
    for part in reversed(path.resolve().parts):
        for topic in INTERNAL_TOPICS:
            if part == topic or part.startswith(topic + "-"):
                return topic
    return None


def _partition_folders(log_dir: StoragePath) -> list[tuple[str, int, StoragePath]]:
    """(topic, partition, folder) of the partition folders (``<topic>-<n>``) of a broker's log
    folder, by topic and partition number."""
    found: list[tuple[str, int, StoragePath]] = []
    for sub in log_dir.iterdir():
        owner = partition_of(sub.name)
        if owner is not None and sub.is_dir():
            found.append((*owner, sub))
    return sorted(found, key=lambda entry: entry[:2])


def _name(path: StoragePath) -> str:
    return path.name


def _folder_files(
    folder: StoragePath, every_kind: bool, txn_index: bool = False
) -> list[StoragePath]:
    if not every_kind:
        found = segment_files(folder)
        if txn_index:  # each after the segment it indexes (same base offset)
            found = sorted([*found, *folder.glob(f"*{TXN_INDEX}")], key=lambda f: f.name)
        return found
    return sorted(
        (f for f in folder.iterdir() if f.suffix in LOG_FOLDER_SUFFIXES and f.is_file()), key=_name
    )


def _remote_files(root: StoragePath, every_kind: bool, txn_index: bool) -> list[StoragePath]:
    """The files of a remote storage root or remote partition folder: with ``every_kind``
    every file of every copy (``--format dump-log`` prints files as they are), else the
    segments of one complete copy per base offset (and their transaction indexes with
    ``txn_index``)."""
    found: list[StoragePath] = []
    for partition in remote_partitions(root):
        copies = remote_segments(partition)
        if every_kind:
            files = [f for c in copies for s, f in c.files.items() if s in LOG_FOLDER_SUFFIXES]
            found += sorted(files, key=_name)
            continue
        for copy in readable_segments(copies):
            found += [
                f for s, f in copy.files.items() if s == ".log" or (txn_index and s == TXN_INDEX)
            ]
    return found


def input_files(
    paths: tuple[StoragePath, ...],
    topic: str | None,
    every_kind: bool = False,
    txn_index: bool = False,
) -> list[StoragePath]:
    """The files to read: files as given; a partition folder's segments and snapshots (with
    ``txn_index``, its aborted-transaction indexes; with ``every_kind``, its index and
    producer-state files too); for a broker's log folder, also those of its partition folders
    (of ``topic`` only, when given). :class:`NothingToRead` for a folder without any."""
    out: list[StoragePath] = []
    for p in paths:
        if not p.is_dir():
            out.append(p)
            continue
        if is_remote_storage(p):
            # tiered storage holds no internal topic: none of it when one is asked for
            found = [] if topic is not None else _remote_files(p, every_kind, txn_index)
            if not found:
                raise NothingToRead(
                    f"{p} is a tiered topic's remote storage without a complete remote segment"
                    + (f" (it holds no {topic})" if topic else "")
                    + "; pass a broker's log folder, a partition folder or segment files"
                )
            out.extend(found)
            continue
        found = _folder_files(p, every_kind, txn_index)
        partitions = _partition_folders(p)
        if topic is not None and partitions:
            # a log folder's own files (bootstrap.checkpoint): only those of the topic asked for
            found = [f for f in found if guess_topic(f) == topic]
        for name, _, sub in partitions:
            if topic is None or name == topic:
                found.extend(_folder_files(sub, every_kind, txn_index))
        if not found:
            what = ", ".join(sorted(f.name for f in p.iterdir())[:5]) or "nothing"
            where = (
                f"and its partition folders ({', '.join(sub.name for _, _, sub in partitions[:3])}"
                f"{', ...' if len(partitions) > 3 else ''}) hold none"
                if partitions
                else "and no partition folders (such as __consumer_offsets-0 or orders-0)"
            )
            raise NothingToRead(
                f"{p} holds no .log or .checkpoint files {where}"
                + (f" of topic {topic}" if topic else "")
                + f"; it holds {what}. Pass a partition folder, a broker's log folder or "
                "segment files."
            )
        out.extend(found)
    return out


def readable_remote(files: list[StoragePath]) -> list[StoragePath]:
    """``files`` without the remote segments that are not read: copies the broker did not
    finish, and second copies of the same offsets (:func:`readable_segments`)."""
    chosen: dict[str, set[str]] = {}
    out: list[StoragePath] = []
    for f in files:
        partition = remote_partition(f.parent) if remote_file_name(f.name) else None
        if partition is None or f.suffix != ".log":
            out.append(f)
            continue
        folder = str(f.parent)
        if folder not in chosen:
            picked = readable_segments(remote_segments(partition))
            chosen[folder] = {c.log.name for c in picked if c.log is not None}
        if f.name in chosen[folder]:
            out.append(f)
    return out


def local_topic_id(folder: StoragePath) -> str | None:
    """The topic id a local partition folder's ``partition.metadata`` names, or None."""
    meta = folder / "partition.metadata"
    try:
        text = meta.read_text(encoding="utf-8") if meta.is_file() else ""
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id" and value.strip():
            return value.strip()
    return None


def _partition_key(f: StoragePath) -> tuple[tuple[str, int], bool, str | None] | None:
    """((topic, partition), whether the file is a remote copy, its topic id) of a segment or
    transaction index, None for a file of no partition folder."""
    remote = remote_partition(f.parent)
    if remote is not None:
        return (remote.topic, remote.partition), True, remote.topic_id
    name, _, number = f.parent.name.rpartition("-")
    if not name or not number.isdigit():
        return None
    return (name, int(number)), False, None


def tiered_order(
    files: list[StoragePath],
) -> tuple[list[StoragePath], dict[StoragePath, int]]:
    """``files`` with each tiered partition's remote and local segments in offset order, and
    the offset below which each remote segment is read (Kafka's read path: a remote segment
    serves the offsets below the next segment's base offset and below the local log's start;
    copies the local log still holds are not read). Remote segments of another incarnation of
    the topic (a topic id other than the local folder's) stay apart. Other files keep their
    place; a partition without remote segments is as given."""
    groups: dict[tuple[str, int], list[StoragePath]] = {}
    order: list[tuple[str, int] | StoragePath] = []
    for f in files:
        key = _partition_key(f) if f.suffix in (".log", TXN_INDEX) else None
        if key is None:
            order.append(f)
            continue
        if key[0] not in groups:
            order.append(key[0])
        groups.setdefault(key[0], []).append(f)
    bounds: dict[StoragePath, int] = {}
    out: list[StoragePath] = []
    for item in order:
        if not isinstance(item, tuple):
            out.append(item)
            continue
        members = groups[item]
        keyed = [(f, _partition_key(f)) for f in members]
        if not any(k is not None and k[1] for _, k in keyed):
            out.extend(members)
            continue
        local = [f for f, k in keyed if k is not None and not k[1]]
        local_ids = {local_topic_id(f.parent) for f in local} - {None}
        remote = [
            f for f, k in keyed if k is not None and k[1] and (not local_ids or k[2] in local_ids)
        ]
        apart = [f for f in members if f not in local and f not in remote]
        starts = [b for f in local if f.suffix == ".log" and (b := _base(f)) is not None]
        local_start = min(starts) if starts else None
        remote_logs = sorted(
            (f for f in remote if f.suffix == ".log"), key=lambda f: (_base(f) or 0, f.name)
        )
        bases = [_base(f) or 0 for f in remote_logs]
        for i, f in enumerate(remote_logs):
            if local_start is not None and bases[i] >= local_start:
                continue
            later = next((b for b in bases[i + 1 :] if b > bases[i]), None)
            ends = [b for b in (later, local_start) if b is not None]
            if ends:
                bounds[f] = min(ends)
            stem = f.name.split(".")[0]
            out.append(f)
            out.extend(g for g in remote if g.suffix == TXN_INDEX and g.name.startswith(stem + "."))
        out.extend(local)
        out.extend(apart)
    return out, bounds


def _base(f: StoragePath) -> int | None:
    return segment_file_info(f.name).base_offset


class RowSource(FrozenSlotted):
    """Where the rows of one file come from: its topic, partition and path."""

    topic: str | None
    partition: int | None
    file: str

    @classmethod
    def of(cls, path: StoragePath, topic: str | None) -> RowSource:
        """The topic (the decoder's, else the partition folder's) and partition of a file, from
        its folder name (``orders-3``, or a remote storage's ``orders-3-<topic id>``); None
        where the name does not tell."""
        remote = remote_partition(path.parent)
        if remote is not None:
            return cls(topic or remote.topic, remote.partition, str(path))
        owner = partition_of(path.parent.name)
        if owner is None:
            return cls(topic, None, str(path))
        return cls(topic or owner[0], owner[1], str(path))

    @property
    def label(self) -> str:
        if self.topic is None:
            return ""
        return self.topic if self.partition is None else f"{self.topic}-{self.partition}"

    def json_fields(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "file": self.file}
