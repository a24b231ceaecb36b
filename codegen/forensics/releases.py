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

How each coordinator loads its partitions (what it skips, what fails the load and what a failure
costs) is :mod:`codegen.forensics.loaders`; :func:`release` gives each release its loaders. A
version such as ``3.4`` is the line's first release (``3.4.0``); a patch release whose loading
differs has its own table (``3.4.1``: KIP-915's backport, whose jar reads the flexible value
versions and whose coordinators skip unknown keys), and later patches of its line are judged by
it. The other backports KIP-915 planned (3.0.3, 3.1.3, 3.2.4, 3.3.3) were never released.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Final

from codegen.errors import BadInputError
from codegen.forensics.loaders import (
    EMPTY,
    FAIL,
    NOT_LOADED,
    PREFIX,
    READ_AS_NEWEST,
    SKIP,
    Loader,
    RecordTypeReads,
)
from codegen.slotted import FrozenSlotted, field

__all__ = [
    "DEFAULT",
    "HARD_CODED",
    "NEW",
    "OLD",
    "KRaftSupport",
    "MetadataRecordReads",
    "RecordTypeReads",
    "Release",
    "UnknownReleaseError",
    "patch_releases",
    "release",
    "release_lines",
    "share_loader",
]


class KRaftSupport(FrozenSlotted):
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


DEFAULT: Final = "default"
OLD: Final = "old"
NEW: Final = "new"


class Release(FrozenSlotted):
    """A Kafka release and what its coordinators read and its controllers support."""

    line: str
    record_types: dict[int, RecordTypeReads]
    group_loader: Loader
    """The group coordinator that loads ``__consumer_offsets`` with the release's defaults."""
    transaction_loader: Loader
    """How its transaction coordinator loads ``__transaction_state``."""
    share_types: dict[int, RecordTypeReads] | None = None
    """What its share coordinator reads of ``__share_group_state``; None: it has none."""
    kraft: KRaftSupport | None = None
    """None before 3.3: no production KRaft (KIP-833), no metadata.version."""
    version: str = ""
    """The release judged: ``3.4.0`` for ``3.4``, ``3.4.1`` for ``3.4.1``."""
    other_group_loader: Loader | None = None
    """The group coordinator a configuration switches to, if any: the new one in 3.6-3.9
    (``group.coordinator.new.enable``, or from 3.7 ``group.coordinator.rebalance.protocols``
    including ``consumer``), the old one in 4.0 (``group.coordinator.new.enable=false``)."""
    metadata_types: dict[int, MetadataRecordReads] = field(default_factory=dict)
    """What its ``MetadataRecordSerde`` reads of ``__cluster_metadata`` (KRaft lines)."""

    @property
    def label(self) -> str:
        """How messages name the release: its line, or the patch release asked for."""
        return self.version if self.version and not self.version.endswith(".0") else self.line

    @property
    def transaction_types(self) -> Mapping[int, RecordTypeReads]:
        return self.transaction_loader.types

    @property
    def ignores_unknown(self) -> bool:
        """Unknown ``__consumer_offsets`` record types are skipped (KIP-915), by the default
        group coordinator."""
        return self.group_loader.unknown_types == SKIP

    def reads(self, record_type: int) -> RecordTypeReads | None:
        return self.record_types.get(record_type)

    def group_loaders(self, coordinator: str = DEFAULT) -> Loader:
        """The group coordinator ``default``, ``old`` or ``new`` (raises
        :class:`NoSuchCoordinatorError` when the release has no such one)."""
        if coordinator == DEFAULT:
            return self.group_loader
        for loader in (self.group_loader, self.other_group_loader):
            if loader is not None and loader.name.startswith(f"the {coordinator} "):
                return loader
        raise NoSuchCoordinatorError(f"Kafka {self.label} has no {coordinator} group coordinator")


class MetadataRecordReads(FrozenSlotted):
    """What a KRaft release reads of one ``__cluster_metadata`` record type."""

    name: str
    highest_version: int
    unreadable: dict[int, str]
    """Newer versions (up to the newest release's) it cannot read, with the exception it
    throws; a newer version not listed is read as ``highest_version`` (its new fields are
    tagged)."""


class _Step(FrozenSlotted):
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

SKIPS_UNKNOWN_KEYS_FROM: Final = (3, 4, 1)
"""KIP-915 (KAFKA-14869): the first release whose coordinators skip record types they do not
know (3.5 on, and the 3.4.1 backport)."""
NEW_GROUP_COORDINATOR_FROM: Final = (3, 6)
"""The new group coordinator exists, behind ``group.coordinator.new.enable``."""
NEW_GROUP_COORDINATOR_DEFAULT_FROM: Final = (4, 0)
"""The new group coordinator is the default; 4.1 removed the old one."""
OLD_GROUP_COORDINATOR_UNTIL: Final = (4, 1)
STRICT_VALUE_VERSIONS_FROM: Final = (4, 0)
"""KAFKA-18672: ``CoordinatorRecordSerde`` throws ``UnknownRecordVersionException``."""
SKIPPING_TRANSACTION_LOG_FROM: Final = (4, 3)
"""``TransactionLog.read`` skips unknown key and value versions."""


def _line_key(line: str) -> tuple[int, ...]:
    return tuple(int(p) for p in line.split("."))


@cache
def _vendored() -> dict[str, dict[str, Any]]:
    # beside this module (importlib.resources would load zipfile for it: 13 M instructions)
    text = Path(__file__).with_name("release_specs.json").read_text(encoding="utf-8")
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
    entry: Mapping[str, Any], which: str = "recordTypes", source_key: str = "source"
) -> dict[int, RecordTypeReads]:
    source = f"specs in {entry.get(source_key)}"
    types = entry.get(which, {})
    assert isinstance(types, dict)
    return {
        int(type_id): RecordTypeReads(
            t["name"],
            int(t["highestValueVersion"]),
            t["flexibleFrom"],
            source,
            frozenset(t.get("layoutDiffers", ())),
            t.get("layout"),
        )
        for type_id, t in types.items()
    }


TRANSACTION_LOG_V0: Final = (
    "TransactionLogValue v0: the transaction coordinator's only value version from KIP-98 "
    "(Kafka 0.11, TransactionLog.scala) until flexible v1 (KIP-890)"
)


def _transaction_types(entry: Mapping[str, Any] | None) -> dict[int, RecordTypeReads]:
    if entry is not None:
        derived = _derived(entry, "transactionRecordTypes", "transactionSource")
        if derived:
            return derived
    return {0: RecordTypeReads("TransactionLog", 0, None, TRANSACTION_LOG_V0)}


def _kraft(entry: Mapping[str, Any] | None) -> KRaftSupport | None:
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


def _metadata_types(entry: Mapping[str, Any] | None) -> dict[int, MetadataRecordReads]:
    types: Any = {} if entry is None else entry.get("metadataRecordTypes", {})
    return {
        int(api_key): MetadataRecordReads(
            t["name"],
            int(t["highestVersion"]),
            {int(v): why for v, why in t.get("unreadable", {}).items()},
        )
        for api_key, t in types.items()
    }


@cache
def release_lines() -> tuple[str, ...]:
    """Every release line covered, oldest first."""
    lines = {k for k in _vendored() if k.count(".") == 1}
    return tuple(sorted({*HARD_CODED, *lines}, key=_line_key))


def patch_releases() -> tuple[str, ...]:
    """The patch releases with a table of their own (their loading differs from their line's
    first release), oldest first."""
    return tuple(sorted((k for k in _vendored() if k.count(".") == 2), key=_line_key))


class NoSuchCoordinatorError(BadInputError, ValueError):
    """A ``--group-coordinator`` the release does not have."""


class UnknownReleaseError(BadInputError, ValueError):
    """A ``--to`` value that is not a Kafka release we know."""


def _version_numbers(version: str) -> list[int]:
    try:
        return [int(p) for p in version.strip().split(".")]
    except ValueError:
        return []


@cache
def release(version: str) -> Release:
    """The release a Kafka version names (``3.4`` = ``3.4.0``, ``3.4.1``, ``0.11.0.3``)."""
    numbers = _version_numbers(version)
    line = ".".join(str(n) for n in numbers[:2]) if len(numbers) >= 2 else ""
    lines = release_lines()
    if line not in lines:
        raise UnknownReleaseError(
            f"unknown Kafka release {version!r}: give a release from {lines[0]} to {lines[-1]} "
            f"such as 2.1, 3.4, 3.4.1 or 4.0 (known lines: {', '.join(lines)})"
        )
    # 0.11.0.3: four numbers before 1.0, three after.
    width = 4 if numbers[0] == 0 else 3
    full = tuple((numbers + [0] * width)[:width])
    entry: Mapping[str, Any] | None = None
    if line not in HARD_CODED:
        entry = _vendored()[line]
        for patch in patch_releases():
            key = _line_key(patch)
            if key[:2] == full[:2] and full[:3] >= key:
                entry = {**entry, **_vendored()[patch]}
    types = _hard_coded(line) if entry is None else _derived(entry)
    share = None
    if entry is not None and "shareRecordTypes" in entry:
        share = _derived(entry, "shareRecordTypes", "shareSource")
    at = full[:3]
    transactions = _transaction_types(entry)
    group = _group_loader(at, types, default=True)
    assert group is not None  # every release has a default group coordinator
    return Release(
        line,
        types,
        group,
        _transaction_loader(at, transactions),
        share,
        _kraft(entry),
        ".".join(map(str, full)),
        _group_loader(at, types, default=False),
        _metadata_types(entry),
    )


def _names(at: tuple[int, ...]) -> str:
    return ".".join(map(str, at))


def _group_loader(
    at: tuple[int, ...], types: dict[int, RecordTypeReads], default: bool
) -> Loader | None:
    new_is_default = at >= NEW_GROUP_COORDINATOR_DEFAULT_FROM
    has_new = at >= NEW_GROUP_COORDINATOR_FROM
    has_old = at < OLD_GROUP_COORDINATOR_UNTIL
    new = new_is_default if default else not new_is_default
    if new and has_new:
        strict = at >= STRICT_VALUE_VERSIONS_FROM
        # Before 4.0 the serde's own switch knows the consumer group records (0-8) only, even
        # where the jar holds share group specs (3.9).
        known = types if at >= (4, 0) else {t: r for t, r in types.items() if t <= 8}
        return Loader(
            "group",
            "the new group coordinator (its runtime's CoordinatorLoaderImpl replaying "
            "GroupCoordinatorShard)",
            known,
            SKIP,
            FAIL if strict else READ_AS_NEWEST,
            NOT_LOADED,
            "CoordinatorLoaderImpl skips UnknownRecordTypeException; "
            + (
                "CoordinatorRecordSerde throws UnknownRecordVersionException (KAFKA-18672, 4.0)"
                if strict
                else "the generated read() has no version guard before 4.0"
            ),
            control_batches_fail=at[:2] == (3, 6),
        )
    if not new and has_old:
        skips = at >= SKIPS_UNKNOWN_KEYS_FROM
        return Loader(
            "group",
            "the old (Scala) group coordinator (GroupMetadataManager)",
            {t: r for t, r in types.items() if t <= 2},
            SKIP if skips else FAIL,
            FAIL,
            EMPTY,
            "GroupMetadataManager.readMessageKey "
            + ("returns UnknownKey (KIP-915, 3.4.1 and 3.5 on)" if skips else "throws")
            + "; readOffsetMessageValue / readGroupMessageValue throw on an unknown version",
        )
    return None


def _transaction_loader(at: tuple[int, ...], types: dict[int, RecordTypeReads]) -> Loader:
    if at >= SKIPPING_TRANSACTION_LOG_FROM:
        return Loader(
            "transaction",
            "the transaction coordinator (TransactionStateManager, TransactionLog.read)",
            types,
            SKIP,
            SKIP,
            PREFIX,
            "TransactionLog.read returns UnknownKeyVersion / UnknownValueVersion, skipped",
        )
    skips = at >= SKIPS_UNKNOWN_KEYS_FROM
    return Loader(
        "transaction",
        "the transaction coordinator (TransactionStateManager, TransactionLog.scala)",
        types,
        SKIP if skips else FAIL,
        FAIL,
        PREFIX,
        "TransactionLog.readTxnRecordKey "
        + ("skips an unknown key version" if skips else "throws on an unknown key version")
        + "; readTxnRecordValue throws on an unknown value version; "
        "loadTransactionMetadata catches it and keeps what it read",
    )


def share_loader(target: Release) -> Loader | None:
    """The share coordinator's loader (4.0 on): the coordinator runtime."""
    if target.share_types is None:
        return None
    return Loader(
        "share",
        "the share coordinator (its runtime's CoordinatorLoaderImpl replaying "
        "ShareCoordinatorShard)",
        target.share_types,
        SKIP,
        FAIL,
        NOT_LOADED,
        "CoordinatorRecordSerde throws UnknownRecordVersionException",
    )
