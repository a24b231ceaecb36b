"""Remote segments of tiered topics kept as files: Kafka's ``LocalTieredStorage`` layout.

A remote storage root (``rsm.config.dir``) holds ``kafka-tiered-storage/`` and in it one folder
per partition, ``<topic>-<partition>-<topic id>``; each remote segment is a set of files named
``<base offset, 20 digits>-<segment id><suffix>``: the segment (``.log``), its offset and time
indexes (``.index``, ``.timeindex``), the producer-state snapshot (``.snapshot``), the leader
epochs of the segment (``.leader_epoch_checkpoint``), and ``.txnindex`` when the segment has
aborted transactions (the one file a complete copy may lack). Topic and segment ids are Kafka's
``Uuid`` text (22 characters of URL-safe base64).

A copy the broker did not finish (it stopped half way) leaves some of the files behind; the
broker copies the same offsets again under a new segment id. :func:`readable_segments` picks,
per base offset, a complete copy; :func:`remote_segments` lists them all. Paths are the
storage layer's (:mod:`codegen.dumps.storage`): a remote storage in object storage reads as on
disk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from codegen.dumps.storage import StoragePath
from codegen.slotted import FrozenSlotted, Slotted, field

__all__ = [
    "FILE_SUFFIXES",
    "OPTIONAL_SUFFIXES",
    "ROOT_FOLDER",
    "RemotePartition",
    "RemoteSegment",
    "is_remote_storage",
    "readable_segments",
    "remote_file_name",
    "remote_partition",
    "remote_partitions",
    "remote_segments",
]

ROOT_FOLDER: Final = "kafka-tiered-storage"
"""The folder LocalTieredStorage keeps under its configured ``dir``."""
FILE_SUFFIXES: Final = (
    ".log",
    ".index",
    ".timeindex",
    ".txnindex",
    ".leader_epoch_checkpoint",
    ".snapshot",
)
"""The files of a remote segment, in the order LocalTieredStorage copies them."""
OPTIONAL_SUFFIXES: Final = frozenset({".txnindex"})
"""Files a complete copy may lack (no aborted transaction in the segment)."""
_ID_LENGTH: Final = 22


def _id_and_rest(text: str) -> tuple[str, str] | None:
    """``<rest>-<22-character id>`` split, or None."""
    if len(text) <= _ID_LENGTH + 1 or text[-_ID_LENGTH - 1] != "-":
        return None
    ident = text[-_ID_LENGTH:]
    if not all((c.isalnum() and c.isascii()) or c in "-_" for c in ident):
        return None
    return ident, text[: -_ID_LENGTH - 1]


class RemotePartition(FrozenSlotted):
    """One partition's folder of remote segments."""

    topic: str
    partition: int
    topic_id: str
    folder: StoragePath

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition}"


def remote_partition(path: StoragePath) -> RemotePartition | None:
    """The partition of a folder named ``<topic>-<partition>-<topic id>``, or None."""
    split = _id_and_rest(path.name)
    if split is None:
        return None
    topic_id, rest = split
    topic, _, number = rest.rpartition("-")
    if not topic or not number.isdigit():
        return None
    return RemotePartition(topic, int(number), topic_id, path)


def remote_file_name(name: str) -> tuple[int, str, str] | None:
    """(base offset, segment id, suffix) of a remote segment file's name, or None."""
    stem, dot, rest = name.partition(".")
    split = _id_and_rest(stem)
    if split is None or not dot:
        return None
    segment_id, offset = split
    if not offset.isdigit():
        return None
    return int(offset), segment_id, dot + rest


class RemoteSegment(Slotted):
    """The files of one remote segment copy found in its partition's folder."""

    partition: RemotePartition
    base_offset: int
    segment_id: str
    files: dict[str, StoragePath] = field(default_factory=dict)
    """suffix -> path"""

    @property
    def missing(self) -> list[str]:
        """The files a complete copy has that this one lacks, in copy order."""
        return [s for s in FILE_SUFFIXES if s not in self.files and s not in OPTIONAL_SUFFIXES]

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def log(self) -> StoragePath | None:
        return self.files.get(".log")

    def sizes(self) -> Mapping[str, int]:
        return {s: p.stat().st_size for s, p in self.files.items()}


def is_remote_storage(p: StoragePath) -> bool:
    """Whether ``p`` is a remote storage root (``rsm.config.dir`` or its
    ``kafka-tiered-storage`` folder) or a remote partition folder."""
    if not p.is_dir():
        return False
    if (p / ROOT_FOLDER).is_dir() or p.name == ROOT_FOLDER:
        return True
    return remote_partition(p) is not None and any(
        remote_file_name(f.name) is not None for f in p.iterdir()
    )


def remote_partitions(p: StoragePath) -> list[RemotePartition]:
    """The remote partition folders of a storage root, of its ``kafka-tiered-storage``
    folder, or the folder itself when it is one; by topic, partition and topic id."""
    own = remote_partition(p)
    if own is not None and p.is_dir():
        return [own]
    root = p / ROOT_FOLDER if (p / ROOT_FOLDER).is_dir() else p
    found = [
        r for sub in root.iterdir() if sub.is_dir() and (r := remote_partition(sub)) is not None
    ]
    return sorted(found, key=lambda r: (r.topic, r.partition, r.topic_id))


def remote_segments(partition: RemotePartition) -> list[RemoteSegment]:
    """Every segment copy of a remote partition folder, by base offset (then segment id).
    Files of other names are left out."""
    by_id: dict[str, RemoteSegment] = {}
    for f in partition.folder.iterdir():
        parsed = remote_file_name(f.name) if f.is_file() else None
        if parsed is None:
            continue
        base, segment_id, suffix = parsed
        seg = by_id.setdefault(segment_id, RemoteSegment(partition, base, segment_id))
        seg.files[suffix] = f
    return sorted(by_id.values(), key=lambda s: (s.base_offset, s.segment_id))


def readable_segments(
    segments: Iterable[RemoteSegment], finished: frozenset[str] | None = None
) -> list[RemoteSegment]:
    """The copies to read, one per base offset, by base offset: those ``finished`` names (the
    segment ids whose copy finished and was not deleted, from ``__remote_log_metadata``), else
    the complete ones. Copies of the same offsets hold the same records."""
    chosen: dict[int, RemoteSegment] = {}
    for seg in segments:
        ok = seg.segment_id in finished if finished is not None else seg.complete
        if ok and seg.log is not None:
            chosen.setdefault(seg.base_offset, seg)
    return [chosen[b] for b in sorted(chosen)]
