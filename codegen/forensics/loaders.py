"""How a Kafka release's coordinators load their partitions when a broker starts.

A coordinator loads a partition of its topic by reading every record of the log, from the log
start to its end, in order: tombstoned and overwritten records too (until the log cleaner has
removed them), and transactional records whatever their outcome. What it does with a record it
does not know, and what one unreadable record costs, differs by coordinator and release; each
:class:`Loader` says it as read from Kafka's sources:

- the old (Scala) group coordinator, ``GroupMetadataManager.doLoadGroupsAndOffsets`` (every
  release up to 3.9 by default; 4.0 with ``group.coordinator.new.enable=false``): it reads
  record types 0-2 only. An unknown type threw ``IllegalStateException`` until KIP-915's
  backport (3.4.1: ``UnknownKey``, skipped with a warning); a value version outside the
  generated class's versions always throws. ``loadGroupsAndOffsets`` catches it, logs "Error
  loading offsets from", and marks the partition loaded: the groups enter the cache only after
  the whole loop, so the partition is served as if it were empty;
- the new group coordinator's runtime (``CoordinatorLoaderImpl`` replaying into
  ``GroupCoordinatorShard``; 3.6-3.9 with ``group.coordinator.new.enable`` or, from 3.7,
  ``group.coordinator.rebalance.protocols`` including ``consumer``; the default from 4.0):
  unknown types raise ``UnknownRecordTypeException``, skipped. Before 4.0 a newer value version
  is read as the highest the generated class knows (its ``read()`` has no version guard); from
  4.0 (KAFKA-18672) ``CoordinatorRecordSerde`` throws ``UnknownRecordVersionException`` and the
  load fails: the partition is not served. 3.6's loader also refuses control batches;
- the transaction coordinator, ``TransactionStateManager.loadTransactionMetadata`` (Scala up to
  4.2): an unknown key version threw until 3.4.1 (then skipped), an unknown value version
  throws; the loop catches it and keeps the transactions read before it. From 4.3
  ``TransactionLog.read`` returns ``UnknownKeyVersion`` / ``UnknownValueVersion``, both skipped;
- the share coordinator (4.0 on) loads through the same runtime as the new group coordinator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from codegen.slotted import FrozenSlotted

__all__ = [
    "EMPTY",
    "FAIL",
    "NOT_LOADED",
    "PREFIX",
    "READ",
    "READ_AS_NEWEST",
    "SKIP",
    "Loader",
    "Outcome",
    "RecordTypeReads",
]

READ: Final = "read"
SKIP: Final = "skip"
FAIL: Final = "fail"
READ_AS_NEWEST: Final = "read as newest"

EMPTY: Final = "empty"
"""The partition is served as if it held nothing (the Scala group coordinator)."""
NOT_LOADED: Final = "not loaded"
"""The load fails and the partition is not served (the coordinator runtime)."""
PREFIX: Final = "prefix"
"""What was read before the record is kept, the rest is not (the Scala transaction
coordinator)."""


@dataclass(frozen=True, slots=True)
class RecordTypeReads:
    """What a release reads of one record type."""

    name: str
    highest_value_version: int
    flexible_from: int | None
    """First flexible value version, or None when no version the release knows is flexible."""
    source: str
    """Where this fact comes from: the jar it was derived from, or the Kafka change."""
    layout_differs: frozenset[int] = frozenset()
    """Value versions whose layout differs from the newest release's at the same version (an
    early-access record changed before its release): the release's class misreads them."""
    layout: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    """The release's own spec of the value (what reaches the wire) when a layout differs: the
    bytes a newer release wrote are read by it (:mod:`codegen.forensics.release_layouts`)."""

    @property
    def highest_is_flexible(self) -> bool:
        return self.flexible_from is not None and self.highest_value_version >= self.flexible_from


class Outcome(FrozenSlotted):
    """What a loader does with one record."""

    action: str
    """``read``, ``skip``, ``fail`` or ``read as newest``."""
    error: str = ""
    """For ``fail``: the exception Kafka throws, as it logs it."""


class Loader(FrozenSlotted):
    """How one coordinator of one release loads a partition of its topic."""

    coordinator: str
    """``group``, ``transaction`` or ``share``."""
    name: str
    """Names the code, e.g. ``the old (Scala) group coordinator``."""
    types: Mapping[int, RecordTypeReads]
    """The record types it reads, with their value versions."""
    unknown_types: str
    """``skip`` or ``fail``."""
    newer_values: str
    """``fail``, ``read as newest`` or ``skip``: a value version outside the known ones."""
    on_failure: str
    """``empty``, ``not loaded`` or ``prefix``."""
    source: str
    """Where the behaviour is in Kafka's code."""
    control_batches_fail: bool = False
    """3.6's coordinator runtime: "Control batches are not supported yet"."""

    def read(self, record_type: int, value_version: int | None) -> Outcome:
        """What the loader does with a record (``value_version`` None: a tombstone)."""
        reads = self.types.get(record_type)
        if reads is None:
            if self.unknown_types == SKIP:
                return Outcome(SKIP)
            return Outcome(FAIL, self._unknown_type_error(record_type))
        if value_version in reads.layout_differs:
            return Outcome(
                FAIL,
                f"its {reads.name}Value v{value_version} has another layout than the one written "
                "at that version (an early-access record changed before its release), so the "
                "value misreads (java.lang.RuntimeException: Could not read record with version "
                f"{value_version} from value's buffer)",
            )
        if value_version is None or 0 <= value_version <= reads.highest_value_version:
            return Outcome(READ)
        if self.newer_values == READ_AS_NEWEST and value_version > reads.highest_value_version:
            return Outcome(READ_AS_NEWEST)
        if self.newer_values == SKIP:
            return Outcome(SKIP)
        return Outcome(FAIL, self._value_error(record_type, reads, value_version))

    def _unknown_type_error(self, record_type: int) -> str:
        if self.coordinator == "transaction":
            return (
                "java.lang.IllegalStateException: Unknown version "
                f"{record_type} from the transaction log message"
            )
        return (
            "java.lang.IllegalStateException: Unknown group metadata message version: "
            f"{record_type}"
        )

    def _value_error(self, record_type: int, reads: RecordTypeReads, version: int) -> str:
        if self.on_failure == NOT_LOADED:
            return (
                "org.apache.kafka.coordinator.common.runtime.Deserializer$"
                "UnknownRecordVersionException: Found an unknown record version "
                f"{version} for {record_type} type"
            )
        if self.coordinator == "transaction":
            return (
                f"java.lang.IllegalStateException: Unknown version {version} from the "
                "transaction log message value"
            )
        what = "offset" if reads.name.endswith("OffsetCommit") else "group metadata"
        return f"java.lang.IllegalStateException: Unknown {what} message version: {version}"

    def consequence(self, where: str) -> str:
        """What one unreadable record costs, for partition ``where`` (``__consumer_offsets-3``)."""
        if self.on_failure == EMPTY:
            return (
                f'the whole of {where} is lost: the coordinator logs "Error loading offsets '
                f'from {where}" and serves the partition as empty (every group and committed '
                "offset of it), with no retry until its leader changes"
            )
        if self.on_failure == PREFIX:
            return (
                f"loading {where} stops there: the transactional ids read before it are kept, "
                "every state written after it is lost"
            )
        return (
            f"the load of {where} fails: the coordinator marks it failed and does not serve it "
            "(its groups get COORDINATOR_NOT_AVAILABLE) until a new leader epoch loads it again"
        )
