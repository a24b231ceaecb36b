"""Which files ``dump`` reads, and where each comes from.

A path is a segment or snapshot file, a partition folder (``<topic>-<n>``) or a broker's log
folder (its partition folders). :func:`input_files` lists the files to read in order;
:func:`guess_topic` tells the internal topic of a file by its folder or file name and
:class:`RowSource` the topic and partition its rows carry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from codegen.dumps.coordinator import CONSUMER_OFFSETS, SHARE_GROUP_STATE, TRANSACTION_STATE
from codegen.dumps.metadata import CLUSTER_METADATA, REMOTE_LOG_METADATA
from codegen.dumps.segments import segment_files
from codegen.dumps.storage import StoragePath

__all__ = [
    "INTERNAL_TOPICS",
    "LOG_FOLDER_SUFFIXES",
    "TXN_INDEX",
    "NothingToRead",
    "RowSource",
    "guess_topic",
    "input_files",
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


class NothingToRead(ValueError):
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
        name, _, number = sub.name.rpartition("-")
        if name and number.isdigit() and sub.is_dir():
            found.append((name, int(number), sub))
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


@dataclass(frozen=True, slots=True)
class RowSource:
    """Where the rows of one file come from: its topic, partition and path."""

    topic: str | None
    partition: int | None
    file: str

    @classmethod
    def of(cls, path: StoragePath, topic: str | None) -> RowSource:
        """The topic (the decoder's, else the partition folder's) and partition of a file, from
        its folder name (``orders-3``); None where the name does not tell."""
        name, _, number = path.parent.name.rpartition("-")
        partition = int(number) if name and number.isdigit() else None
        return cls(topic or (name if partition is not None else None), partition, str(path))

    @property
    def label(self) -> str:
        if self.topic is None:
            return ""
        return self.topic if self.partition is None else f"{self.topic}-{self.partition}"

    def json_fields(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "file": self.file}
