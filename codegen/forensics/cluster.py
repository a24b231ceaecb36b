"""The cluster's own view from ``__cluster_metadata``: topics, finalized features, dynamic configs.

The state is the latest KRaft snapshot (``<end offset>-<epoch>.checkpoint``) of the partition,
then the log's records from the snapshot's end offset on (every log record when there is no
snapshot). When neither holds a ``metadata.version``, the ``bootstrap.checkpoint`` of a broker
image gives it (the level the cluster was formatted with).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from codegen.dumps.decoded import ERROR, KIND_CONTROL, RECORD, UNKNOWN, DecodedRecord
from codegen.dumps.metadata import CLUSTER_METADATA, decode_metadata_records
from codegen.dumps.model import SegmentError
from codegen.dumps.segments import segment_file_info, segment_files
from codegen.dumps.storage import StoragePath
from codegen.forensics.inputs import LogDirs
from codegen.slotted import Slotted, field

__all__ = ["CONFIG_RESOURCE_TYPES", "ClusterMetadata", "cluster_metadata", "metadata_files"]

METADATA_VERSION: Final = "metadata.version"
KRAFT_VERSION: Final = "kraft.version"

CONFIG_RESOURCE_TYPES: Final = {
    0: "UNKNOWN",
    2: "TOPIC",
    4: "BROKER",
    8: "BROKER_LOGGER",
    16: "CLIENT_METRICS",
    32: "GROUP",
}
"""``ConfigResource.Type`` ids of kafka-clients 4.4 (names for messages)."""


class ClusterMetadata(Slotted):
    """What the cluster's metadata log says at its end."""

    source: str
    mode: str = "KRaft"
    topics: dict[str, str] = field(default_factory=dict)
    """Topic id -> name."""
    partitions: dict[str, set[int]] = field(default_factory=dict)
    """Topic id -> its partitions."""
    metadata_version: int | None = None
    features: dict[str, int] = field(default_factory=dict)
    """Finalized features other than metadata.version (level 0 = not finalized, left out)."""
    configs: dict[tuple[int, str], set[str]] = field(default_factory=dict)
    """(resource type, resource name) -> the names of its live dynamic configs."""
    record_kinds: dict[tuple[int, int], tuple[str, int, str]] = field(default_factory=dict)
    """(api key, version) -> (file, offset, name) of its first record, in the order a broker
    loads them: the latest snapshot, then the log after it."""
    source_file: str = ""
    """The file being read (set while replaying)."""

    @property
    def partition_counts(self) -> dict[str, int]:
        return {name: len(self.partitions.get(tid, ())) for tid, name in self.topics.items()}

    def config_type_name(self, rtype: int) -> str:
        return CONFIG_RESOURCE_TYPES.get(rtype, f"type {rtype}")

    def add(self, rec: DecodedRecord) -> None:
        value: Any = rec.value
        if rec.kind == KIND_CONTROL:
            if value is not None and hasattr(value, "k_raft_version"):
                self._feature(KRAFT_VERSION, int(value.k_raft_version))
            return
        if rec.kind in (RECORD, UNKNOWN, ERROR) and rec.key_bytes is None:
            kind = (rec.record_type, rec.value_version)
            if kind not in self.record_kinds:
                self.record_kinds[kind] = (self.source_file, rec.offset, rec.name)
        if rec.kind != RECORD or value is None:
            return
        name = rec.name
        if name == "TopicRecord":
            self.topics[str(value.topic_id)] = value.name
        elif name == "PartitionRecord":
            self.partitions.setdefault(str(value.topic_id), set()).add(value.partition_id)
        elif name == "RemoveTopicRecord":
            tid = str(value.topic_id)
            self.topics.pop(tid, None)
            self.partitions.pop(tid, None)
        elif name == "FeatureLevelRecord":
            if value.name == METADATA_VERSION:
                self.metadata_version = int(value.feature_level)
            else:
                self._feature(value.name, int(value.feature_level))
        elif name == "ConfigRecord":
            k = (int(value.resource_type), str(value.resource_name))
            names = self.configs.setdefault(k, set())
            if value.value is None:
                names.discard(value.name)
                if not names:
                    del self.configs[k]
            else:
                names.add(value.name)

    def _feature(self, name: str, level: int) -> None:
        if level > 0:
            self.features[name] = level
        else:
            self.features.pop(name, None)


def _replay(
    meta: ClusterMetadata, records: Iterable[DecodedRecord], start: int = 0, source: str = ""
) -> None:
    meta.source_file = source
    for rec in records:
        if rec.offset >= start:
            meta.add(rec)


def metadata_files(dirs: LogDirs) -> tuple[list[StoragePath], int] | None:
    """The files a node loads its metadata from, in that order: the latest snapshot of the
    replica of ``__cluster_metadata-0`` holding the most, then its log segments; and the
    snapshot's end offset, below which log records are not loaded (None: no such partition)."""
    replicas = dirs.partitions(CLUSTER_METADATA).get(0, [])
    if not replicas:
        return None

    def rank(folder: StoragePath) -> tuple[int, int]:
        files = segment_files(folder)
        ends = [
            segment_file_info(f).base_offset or segment_file_info(f).snapshot_end_offset or 0
            for f in files
        ]
        return (max(ends, default=-1), sum(f.stat().st_size for f in files))

    folder = max((r.folder for r in replicas), key=rank)
    files = segment_files(folder)
    snapshots = [f for f in files if f.suffix == ".checkpoint"]
    start = 0
    chosen: list[StoragePath] = []
    if snapshots:
        latest = max(snapshots, key=lambda f: segment_file_info(f).snapshot_end_offset or 0)
        chosen.append(latest)
        start = segment_file_info(latest).snapshot_end_offset or 0
    chosen.extend(f for f in files if f.suffix == ".log")
    return chosen, start


def cluster_metadata(
    dirs: LogDirs, errors: list[SegmentError] | None = None
) -> ClusterMetadata | None:
    """The metadata log's state, from the replica of ``__cluster_metadata-0`` holding the most
    (None when the paths hold no ``__cluster_metadata``)."""
    found = metadata_files(dirs)
    if found is None:
        return None
    files, start = found
    meta = ClusterMetadata(str(files[0].parent) if files else "")
    for f in files:
        if f.suffix == ".checkpoint":
            _replay(meta, decode_metadata_records(f, errors=errors), source=f.name)
        else:
            _replay(meta, decode_metadata_records(f, errors=errors), start, f.name)
    if meta.metadata_version is None:
        for image in dirs.images:
            bootstrap = image / "bootstrap.checkpoint"
            if bootstrap.is_file():
                _replay(
                    meta, decode_metadata_records(bootstrap, errors=errors), source=bootstrap.name
                )
                break
    return meta
