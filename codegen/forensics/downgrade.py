"""Downgrade readiness: can the group coordinator of a given Kafka release load this dump?

Only records still live after compaction matter (the last value per key, not tombstoned;
transactional commits count once committed, see :mod:`codegen.dumps.compacted`): a broker of
the target release reads exactly those when it loads the partition. Each live record is judged
against what that release reads (:mod:`codegen.forensics.releases`):

``unknown-type``
    the release does not know the record type and predates KIP-915, so loading fails;
``value-version``
    the value version is above the highest the release reads, and the release cannot read it
    with that highest version (it predates KIP-915, or that version is not flexible);
``group-conversion``
    a consumer, share or streams group record of a type the release does not know: even a
    KIP-915 coordinator, which skips it, would lose the group. Per KIP-848's downgrade steps the
    group must first be converted to a classic group (consumers leave and rejoin with
    ``group.protocol=classic``) or deleted.

Record types the release does not know that are not group state (skipped by a KIP-915
coordinator) are listed as ``ignored``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from codegen.dumps.compacted import CompactedView
from codegen.dumps.coordinator import CONSUMER_OFFSETS, decode_batches
from codegen.dumps.decoded import ERROR, RECORD, TOMBSTONE, UNKNOWN, DecodedRecord
from codegen.dumps.model import SegmentError
from codegen.dumps.segments import segment_files
from codegen.forensics.releases import Release, release

__all__ = [
    "Blocker",
    "DowngradeReport",
    "DumpInputError",
    "LiveRecord",
    "LiveRecords",
    "check_downgrade",
    "dump_partitions",
    "judge",
    "live_records",
]

GROUP_RECORD_PREFIXES: Final = ("ConsumerGroup", "ShareGroup", "StreamsGroup")
_PARTITION_DIR: Final = re.compile(r"^__consumer_offsets-(\d+)$")


class DumpInputError(ValueError):
    """The dump cannot be read as ``__consumer_offsets`` segments (bad path, no segments)."""


@dataclass(slots=True)  # not frozen: one per record, and frozen init is slower
class LiveRecord:
    """A record still live after compaction."""

    partition: int
    offset: int
    record_type: int
    name: str
    """Record name from our specs (``OffsetCommit``, ``ConsumerGroupMetadata``...), or
    ``unknown`` for a type our specs do not have."""
    value_version: int
    group: str | None


class LiveRecords(CompactedView):
    """The compacted view, also keeping every live record by (record type, key bytes)."""

    def __init__(self, partition: int) -> None:
        super().__init__()
        self.partition = partition
        self.live: dict[bytes, LiveRecord] = {}

    def add(self, rec: DecodedRecord) -> None:
        super().add(rec)
        if rec.kind not in (RECORD, TOMBSTONE, UNKNOWN, ERROR) or rec.key_bytes is None:
            return
        if rec.value_bytes is None:
            self.live.pop(rec.key_bytes, None)
            return
        version = rec.value_version
        if version < 0 and len(rec.value_bytes) >= 2:
            version = int.from_bytes(rec.value_bytes[:2], "big", signed=True)
        self.live[rec.key_bytes] = LiveRecord(
            self.partition,
            rec.offset,
            rec.record_type,
            rec.name if rec.kind != UNKNOWN and rec.name else "unknown",
            version,
            _group_of(rec),
        )


def _group_of(rec: DecodedRecord) -> str | None:
    key: Any = rec.key
    if key is None:
        return None
    group = getattr(key, "group", None) or getattr(key, "group_id", None)
    return str(group) if group is not None else None


def _partition_of(folder: Path) -> int:
    m = _PARTITION_DIR.match(folder.name)
    return int(m.group(1)) if m else -1


def dump_partitions(path: Path) -> list[tuple[int, list[Path]]]:
    """(partition, segment files) to read: a log folder's ``__consumer_offsets-N`` folders, a
    partition folder, or one segment file."""
    if not path.exists():
        raise DumpInputError(f"{path}: no such file or folder; give a __consumer_offsets dump")
    if path.is_file():
        return [(_partition_of(path.parent), [path])]
    subs = sorted(
        (int(m.group(1)), sub)
        for sub in path.iterdir()
        if sub.is_dir() and (m := _PARTITION_DIR.match(sub.name))
    )
    found = [(n, [f for f in segment_files(sub) if f.suffix == ".log"]) for n, sub in subs]
    if not found:
        found = [(_partition_of(path), [f for f in segment_files(path) if f.suffix == ".log"])]
    found = [(n, files) for n, files in found if files]
    if not found:
        raise DumpInputError(
            f"{path}: no .log segment found; give a __consumer_offsets-N folder, a broker's "
            "log folder holding them, or a segment file"
        )
    return found


def live_records(path: Path, errors: list[SegmentError] | None = None) -> list[LiveRecords]:
    """The compacted state of each ``__consumer_offsets`` partition under ``path``."""
    views: list[LiveRecords] = []
    for partition, files in dump_partitions(path):
        view = LiveRecords(partition)
        for f in files:
            view.add_batches(decode_batches(f, CONSUMER_OFFSETS, errors=errors))
        views.append(view)
    return views


@dataclass(frozen=True, slots=True)
class Blocker:
    """A live record the target release cannot load, or skips."""

    rule: str
    """``unknown-type``, ``value-version``, ``group-conversion`` or ``ignored``."""
    partition: int
    offset: int
    record_type: int
    name: str
    value_version: int
    group: str | None
    reason: str


@dataclass(slots=True)
class DowngradeReport:
    target: str
    """The release line judged against."""
    live_records: int = 0
    blockers: list[Blocker] = field(default_factory=list)
    ignored: list[Blocker] = field(default_factory=list)
    segment_errors: list[str] = field(default_factory=list)

    @property
    def safe(self) -> bool:
        return not self.blockers

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "safe": self.safe,
            "liveRecords": self.live_records,
            "blockers": [_camel(asdict(b)) for b in self.blockers],
            "ignored": [_camel(asdict(b)) for b in self.ignored],
            "segmentErrors": self.segment_errors,
        }


def _camel(d: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        head, *rest = k.split("_")
        out[head + "".join(p.title() for p in rest)] = v
    return out


def _is_group_state(rec: LiveRecord) -> bool:
    name = rec.name
    if name == "unknown":
        # A type newer than our specs: name it from no spec, judge it as not group state.
        return False
    return name.startswith(GROUP_RECORD_PREFIXES)


def judge(rec: LiveRecord, target: Release) -> Blocker | None:
    """Why ``target`` cannot load ``rec`` (or skips it), or None when it reads it."""

    def finding(rule: str, reason: str) -> Blocker:
        return Blocker(
            rule,
            rec.partition,
            rec.offset,
            rec.record_type,
            rec.name,
            rec.value_version,
            rec.group,
            reason,
        )

    reads = target.reads(rec.record_type)
    if reads is None:
        if _is_group_state(rec):
            return finding(
                "group-conversion",
                f"Kafka {target.line} does not know record type {rec.record_type} ({rec.name}); "
                f"convert group {rec.group!r} to a classic group or delete it before downgrading "
                "(KIP-848 downgrade steps)",
            )
        if target.ignores_unknown:
            return finding(
                "ignored",
                f"Kafka {target.line} skips unknown record type {rec.record_type} (KIP-915)",
            )
        return finding(
            "unknown-type",
            f"Kafka {target.line} does not know record type {rec.record_type} and predates "
            "KIP-915 (3.5), so loading the partition fails; delete what wrote it (e.g. the "
            "group) before downgrading, or downgrade to 3.5 or later",
        )
    if rec.value_version > reads.highest_value_version:
        if target.ignores_unknown and reads.highest_is_flexible:
            return None
        why = (
            "predates KIP-915 (3.5)"
            if not target.ignores_unknown
            else f"its v{reads.highest_value_version} is not flexible"
        )
        return finding(
            "value-version",
            f"{reads.name}Value v{rec.value_version} is newer than the v"
            f"{reads.highest_value_version} Kafka {target.line} reads, and Kafka {target.line} "
            f"{why}; rewrite the record (e.g. commit the offset again, or let the group "
            "rebalance) from brokers whose inter.broker.protocol.version / metadata.version is "
            f"at most {target.line}, or delete it",
        )
    return None


def check_downgrade(path: Path | Iterable[LiveRecords], to: str) -> DowngradeReport:
    """Judge a dump (a path, or views made by :func:`live_records`) against release ``to``.

    Raises :class:`~codegen.forensics.releases.UnknownReleaseError` for an unknown release and
    :class:`DumpInputError` when the path holds no ``__consumer_offsets`` segment.
    """
    target = release(to)
    errors: list[SegmentError] = []
    views = live_records(path, errors) if isinstance(path, Path) else list(path)
    report = DowngradeReport(target.line, segment_errors=[str(e) for e in errors])
    for view in views:
        for rec in sorted(view.live.values(), key=lambda r: r.offset):
            report.live_records += 1
            finding = judge(rec, target)
            if finding is None:
                continue
            (report.ignored if finding.rule == "ignored" else report.blockers).append(finding)
    return report
