"""What the group coordinator of each Kafka release line reads from ``__consumer_offsets``.

Two sources, one answer per release line (``0.11`` ... ``4.4``, each judged as its first
release):

- From 2.8 on, the records are JSON specs inside the release's jars. What those specs say is
  vendored in ``release_specs.json`` (see :mod:`codegen.forensics.release_specs`; an oracle test
  re-derives it from the jars).
- Before 2.8 the coordinator (``GroupMetadataManager.scala``) hard-coded its schemas. The table
  :data:`HARD_CODED` below gives the highest value version each of those releases reads per
  record type, each step citing the Kafka change that introduced it. In those releases the key
  version is the record type: 0 and 1 are offset commits, 2 is group metadata.

KIP-915 (KAFKA-14869, Kafka 3.5) changed how a coordinator treats what it does not know: record
types it does not know are skipped, and a value version above the highest it knows is read with
that highest version when that version is flexible (unknown tagged fields are skipped). Before
it, both stop the partition from loading. Backports of KIP-915 to patch releases (the KIP lists
3.4.1 and older lines as candidates) are not modelled: a line is judged as its ``.0`` release.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Final

__all__ = [
    "HARD_CODED",
    "KIP_915_FROM",
    "KRaftSupport",
    "RecordTypeReads",
    "Release",
    "UnknownReleaseError",
    "release",
    "release_lines",
]


@dataclass(frozen=True, slots=True)
class RecordTypeReads:
    """What a release reads of one record type."""

    name: str
    highest_value_version: int
    flexible_from: int | None
    """First flexible value version, or None when no version the release knows is flexible."""
    source: str
    """Where this fact comes from: the jar it was derived from, or the Kafka change."""

    @property
    def highest_is_flexible(self) -> bool:
        return self.flexible_from is not None and self.highest_value_version >= self.flexible_from


@dataclass(frozen=True, slots=True)
class KRaftSupport:
    """What a KRaft release line supports, from its ``kafka-server-common`` and
    ``kafka-clients`` jars (``MetadataVersion``, the feature enums, ``ConfigResource.Type``)."""

    metadata_versions: dict[int, str]
    """metadata.version feature level -> its name (``19`` -> ``3.7-IV4``)."""
    highest_metadata_version: int
    """The feature level of ``MetadataVersion.LATEST_PRODUCTION``."""
    features: dict[str, int]
    """Feature (``group.version``, ``kraft.version``...) -> its latest production level."""
    config_resource_types: dict[int, str]
    """``ConfigResource.Type`` id -> name."""
    source: str

    def metadata_version_name(self, level: int) -> str:
        return self.metadata_versions.get(level, f"level {level}")


@dataclass(frozen=True, slots=True)
class Release:
    """A Kafka release line and what its coordinators read and its controllers support."""

    line: str
    record_types: dict[int, RecordTypeReads]
    ignores_unknown: bool
    """KIP-915: unknown record types are skipped and newer flexible value versions are read."""
    transaction_types: dict[int, RecordTypeReads] = field(default_factory=dict)
    """What its transaction coordinator reads of ``__transaction_state``."""
    share_types: dict[int, RecordTypeReads] | None = None
    """What its share coordinator reads of ``__share_group_state``; None: it has none."""
    kraft: KRaftSupport | None = None
    """None before 3.3: no production KRaft (KIP-833), no metadata.version."""

    def reads(self, record_type: int) -> RecordTypeReads | None:
        return self.record_types.get(record_type)


@dataclass(frozen=True, slots=True)
class _Step:
    offset_commit_value: int
    group_metadata_value: int


# Highest value versions the hard-coded coordinators read, per release line, and why.
_OFFSET_COMMIT_V1: Final = (
    "OffsetCommitValue v1 (expire_timestamp): KAFKA-1634, before 0.11; "
    "v2 only came with 2.1 (KIP-211), see below"
)
_GROUP_METADATA_V1: Final = (
    "GroupMetadataValue v1 (rebalance_timeout): KIP-62 / KAFKA-3888, written from "
    "inter.broker.protocol 0.10.1 (KAFKA_0_10_1_IV0); v2 only came with 2.1 (KIP-211)"
)
_OFFSET_COMMIT_V3: Final = (
    "OffsetCommitValue v2 (no expire_timestamp): KIP-211 / KAFKA-4682, Kafka 2.1 (KAFKA_2_1_IV0); "
    "v3 (leader_epoch): KIP-320 / KAFKA-6880, Kafka 2.1 (KAFKA_2_1_IV1)"
)
_GROUP_METADATA_V2: Final = (
    "GroupMetadataValue v2 (current_state_timestamp): KIP-211 / KAFKA-4682, Kafka 2.1 "
    "(KAFKA_2_1_IV0)"
)
_GROUP_METADATA_V3: Final = (
    "GroupMetadataValue v3 (group_instance_id): KIP-345 / KAFKA-6145, Kafka 2.3 (KAFKA_2_3_IV0)"
)

HARD_CODED: Final[dict[str, tuple[tuple[int, str], tuple[int, str]]]] = {
    # line: ((highest OffsetCommitValue, why), (highest GroupMetadataValue, why))
    "0.11": ((1, _OFFSET_COMMIT_V1), (1, _GROUP_METADATA_V1)),
    "1.0": ((1, _OFFSET_COMMIT_V1), (1, _GROUP_METADATA_V1)),
    "1.1": ((1, _OFFSET_COMMIT_V1), (1, _GROUP_METADATA_V1)),
    "2.0": ((1, _OFFSET_COMMIT_V1), (1, _GROUP_METADATA_V1)),
    "2.1": ((3, _OFFSET_COMMIT_V3), (2, _GROUP_METADATA_V2)),
    "2.2": ((3, _OFFSET_COMMIT_V3), (2, _GROUP_METADATA_V2)),
    "2.3": ((3, _OFFSET_COMMIT_V3), (3, _GROUP_METADATA_V3)),
    "2.4": ((3, _OFFSET_COMMIT_V3), (3, _GROUP_METADATA_V3)),
    "2.5": ((3, _OFFSET_COMMIT_V3), (3, _GROUP_METADATA_V3)),
    "2.6": ((3, _OFFSET_COMMIT_V3), (3, _GROUP_METADATA_V3)),
    "2.7": ((3, _OFFSET_COMMIT_V3), (3, _GROUP_METADATA_V3)),
}
"""Release lines before the coordinator's records became JSON specs (2.8)."""

KIP_915_FROM: Final = (3, 5)
"""First release line with KIP-915's lenient loading (KAFKA-14869)."""


def _line_key(line: str) -> tuple[int, ...]:
    return tuple(int(p) for p in line.split("."))


@cache
def _vendored() -> dict[str, dict[str, Any]]:
    text = resources.files("codegen.forensics").joinpath("release_specs.json").read_text()
    doc: dict[str, dict[str, dict[str, object]]] = json.loads(text)
    return doc["releases"]


def _hard_coded(line: str) -> dict[int, RecordTypeReads]:
    (ocv, ocv_why), (gmv, gmv_why) = HARD_CODED[line]
    return {
        0: RecordTypeReads("OffsetCommit", ocv, None, ocv_why),
        1: RecordTypeReads("OffsetCommit", ocv, None, ocv_why),
        2: RecordTypeReads("GroupMetadata", gmv, None, gmv_why),
    }


def _derived(
    line: str, which: str = "recordTypes", source_key: str = "source"
) -> dict[int, RecordTypeReads]:
    entry = _vendored()[line]
    source = f"specs in {entry[source_key]}"
    types = entry.get(which, {})
    assert isinstance(types, dict)
    return {
        int(type_id): RecordTypeReads(
            t["name"], int(t["highestValueVersion"]), t["flexibleFrom"], source
        )
        for type_id, t in types.items()
    }


TRANSACTION_LOG_V0: Final = (
    "TransactionLogValue v0: the transaction coordinator's only value version from KIP-98 "
    "(Kafka 0.11, TransactionLog.scala) until flexible v1 (KIP-890)"
)


def _transaction_types(line: str) -> dict[int, RecordTypeReads]:
    if line not in HARD_CODED:
        derived = _derived(line, "transactionRecordTypes", "transactionSource")
        if derived:
            return derived
    return {0: RecordTypeReads("TransactionLog", 0, None, TRANSACTION_LOG_V0)}


def _kraft(line: str) -> KRaftSupport | None:
    entry = _vendored().get(line)
    doc: Any = None if entry is None else entry.get("kraft")
    if doc is None:
        return None
    levels = {int(v): k for k, v in doc["metadataVersions"].items()}
    features = {name: int(f["production"]) for name, f in doc["features"].items()}
    return KRaftSupport(
        levels,
        int(doc["metadataVersions"][doc["latestProductionMetadataVersion"]]),
        features,
        {int(v): k for k, v in doc["configResourceTypes"].items()},
        doc["source"],
    )


@cache
def release_lines() -> tuple[str, ...]:
    """Every release line covered, oldest first."""
    return tuple(sorted({*HARD_CODED, *_vendored()}, key=_line_key))


class UnknownReleaseError(ValueError):
    """A ``--to`` value that is not a Kafka release line we know."""


@cache
def release(version: str) -> Release:
    """The release line of a Kafka version (``3.4``, ``3.4.0``, ``0.11.0.3``)."""
    parts = version.strip().split(".")
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        numbers = []
    # 0.x lines have three numbers (0.11.0), the others two (3.4).
    width = 2
    line = ".".join(str(n) for n in numbers[:width]) if len(numbers) >= width else ""
    lines = release_lines()
    if line not in lines:
        raise UnknownReleaseError(
            f"unknown Kafka release {version!r}: give a release from {lines[0]} to {lines[-1]} "
            f"such as 2.1, 3.4 or 4.0 (known lines: {', '.join(lines)})"
        )
    types = _hard_coded(line) if line in HARD_CODED else _derived(line)
    share = None
    if line not in HARD_CODED and "shareRecordTypes" in _vendored()[line]:
        share = _derived(line, "shareRecordTypes", "shareSource")
    return Release(
        line,
        types,
        _line_key(line) >= KIP_915_FROM,
        _transaction_types(line),
        share,
        _kraft(line),
    )
