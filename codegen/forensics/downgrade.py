"""Downgrade readiness: can the brokers of a given Kafka release run this cluster's disks?

A verdict (:mod:`codegen.forensics.verdict`) is made of checks, each ``passed``, ``blocked``
(what blocks and what to do), ``not checked`` or ``partly checked`` (why: what the input
lacks). The verdict is ``SAFE`` only when every check was made and passed, ``BLOCKED`` when any
blocked, else ``SAFE AS FAR AS CHECKED``. The checks, in the order an operator acts on them
(KIP-848: consumers first, then configs, features and the brokers); a broker starting meets
the metadata checks first (:attr:`~codegen.forensics.verdict.DowngradeReport.first_failure`):

``metadata records``, ``cluster features``, ``dynamic configs`` (``__cluster_metadata``)
    See :mod:`codegen.forensics.cluster_checks`.
``group coordinator`` (``__consumer_offsets``), ``transaction coordinator``
(``__transaction_state``), ``share coordinator`` (``__share_group_state``)
    A coordinator loads a partition by reading every record of it in log order: tombstoned,
    overwritten and aborted ones too, until the log cleaner has removed them
    (:mod:`codegen.forensics.loaders` says how each release's coordinators treat what they do
    not know). Per partition:

    ``unknown-type``, ``value-version``, ``record-layout``, ``control-batch``, ``no-key``,
    ``known-bug``, ``replay-order``
        the first record the release's loader fails on (the last two: a record the new group
        coordinator's shard refuses in its order, :mod:`codegen.forensics.known_bugs`), and
        what that costs (the old group coordinator serves the partition as empty, the
        coordinator runtime does not serve it, the transaction coordinator keeps what it read
        before); the other kinds of record it could not read follow;
    ``group-conversion``
        a live consumer, share or streams group record of a type the loader does not read:
        the group would be lost. Consumer groups are converted to classic groups by
        downgrading their consumers first (KIP-848's downgrade path); share groups can only be
        deleted; streams groups are deleted and their applications restarted with the classic
        protocol;
    ``share-group``
        live share-partition state on a release without a share coordinator (before 4.0).

    Live records the loader skips that are not group state are listed as ``ignored``. Which
    group coordinator loads is configuration (3.6-3.9 can run the new one, 4.0 the old one):
    the release's default is judged unless another is named.

Whether a coordinator topic is absent from the cluster (a pass) or only from the input (not
checked) is told by the ``TopicRecord`` of ``__cluster_metadata``; without it, an absent topic
is not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

from codegen.dumps.arrow import record_batches
from codegen.dumps.compacted import CompactedView
from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    CoordinatorDecoder,
    coordinator_decoder,
)
from codegen.dumps.decoded import ERROR, RECORD, TOMBSTONE, UNKNOWN, DecodedRecord
from codegen.dumps.model import SegmentError
from codegen.dumps.storage import RemotePath, StoragePath
from codegen.forensics.cluster import ClusterMetadata, cluster_metadata
from codegen.forensics.cluster_checks import (
    configs_check,
    features_check,
    metadata_records_check,
    shell_word,
)
from codegen.forensics.inputs import InputError, LogDirs, discover
from codegen.forensics.known_bugs import replay_failure
from codegen.forensics.loaded import NO_KEY, LoadedPartition, RecordKind, group_of
from codegen.forensics.loaders import FAIL, NOT_LOADED, PREFIX, SKIP, Loader
from codegen.forensics.release_layouts import read_error
from codegen.forensics.releases import DEFAULT, RecordTypeReads, Release, release, share_loader
from codegen.forensics.verdict import (
    BLOCKED,
    BLOCKED_VERDICT,
    NOT_CHECKED,
    PARTLY_CHECKED,
    PASSED,
    SAFE,
    SAFE_AS_FAR_AS_CHECKED,
    Blocker,
    Check,
    DowngradeReport,
)
from codegen.text import plural
from codegen.views.live import LiveKeys

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "BLOCKED",
    "BLOCKED_VERDICT",
    "GROUP_RECORD_PREFIXES",
    "NOT_CHECKED",
    "PARTLY_CHECKED",
    "PASSED",
    "SAFE",
    "SAFE_AS_FAR_AS_CHECKED",
    "Blocker",
    "Check",
    "DowngradeReport",
    "DumpInputError",
    "LiveRecord",
    "LiveRecords",
    "check_downgrade",
    "dump_partitions",
    "is_paths",
    "live_records",
    "loader_topic",
    "partition_findings",
    "scan_partition",
]

GROUP_RECORD_PREFIXES: Final = ("ConsumerGroup", "ShareGroup", "StreamsGroup")

DumpInputError = InputError
"""The input is not what the command reads (kept under its former name)."""


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
    """The group (or, in ``__transaction_state``, the transactional id) the record is of."""


class LiveRecords(CompactedView):
    """The compacted view, also keeping every live record by (record type, key bytes)."""

    def __init__(self, partition: int) -> None:
        super().__init__()
        self.partition = partition
        self.live: dict[bytes, LiveRecord] = {}
        self.loaded: LoadedPartition | None = None
        """Every record of the partition by kind, when it was read from files or rows."""

    def add(self, rec: DecodedRecord) -> None:
        super().add(rec)
        if rec.kind not in (RECORD, TOMBSTONE, UNKNOWN, ERROR) or rec.key_bytes is None:
            return
        if rec.value_bytes is None:
            self.live.pop(rec.key_bytes, None)
            return
        self.live[rec.key_bytes] = self.live_record(rec)

    def live_record(self, rec: DecodedRecord) -> LiveRecord:
        """What is judged of a live record (not a tombstone)."""
        assert rec.value_bytes is not None
        version = rec.value_version
        if version < 0 and len(rec.value_bytes) >= 2:
            version = int.from_bytes(rec.value_bytes[:2], "big", signed=True)
        return LiveRecord(
            self.partition,
            rec.offset,
            rec.record_type,
            rec.name if rec.kind != UNKNOWN and rec.name else "unknown",
            version,
            group_of(rec.key),
        )

    def take_live(self, live: pa.Table, decoder: CoordinatorDecoder) -> None:
        """The live records from the columnar view (``codegen.views.live`` rows), for a view
        fed no records: only :attr:`live` is filled, and only the keys are decoded (a live
        record is judged by its type, its value's version and its group)."""
        keys = live.column("key").to_pylist()
        values = live.column("value").to_pylist()
        offsets = live.column("recordOffset").to_pylist()
        for key, value, offset in zip(keys, values, offsets, strict=True):
            rtype, name, key_obj = decoder.decode_key(key)
            version = int.from_bytes(value[:2], "big", signed=True) if len(value) >= 2 else -1
            self.live[key] = LiveRecord(
                self.partition, offset, rtype, name or "unknown", version, group_of(key_obj)
            )


def _dirs(path: StoragePath | Sequence[StoragePath | str] | LogDirs) -> LogDirs:
    if isinstance(path, LogDirs):
        return path
    return discover([path] if isinstance(path, str | Path | RemotePath) else list(path))


def dump_partitions(
    path: StoragePath | Sequence[StoragePath | str] | LogDirs, topic: str = CONSUMER_OFFSETS
) -> list[tuple[int, list[StoragePath]]]:
    """(partition, segment files) of ``topic`` to read from broker log dirs, partition folders
    or segment files (see :mod:`codegen.forensics.inputs`); one replica per partition.

    Raises :class:`~codegen.forensics.inputs.InputError` when the paths hold none."""
    dirs = _dirs(path)
    dirs.require(topic, command=f"reading {topic}")
    found = dirs.coordinator_segments(topic)
    if not found:
        raise InputError(
            f"{', '.join(map(str, dirs.given))}: the {topic} partition folders hold no .log segment"
        )
    return found


def live_records(
    path: StoragePath | Sequence[StoragePath | str] | LogDirs,
    errors: list[SegmentError] | None = None,
    topic: str = CONSUMER_OFFSETS,
) -> list[LiveRecords]:
    """The live records of each ``topic`` partition under ``path`` (:attr:`LiveRecords.live`;
    read from columns, so the views hold no group state), each with every record it holds by
    kind (:attr:`LiveRecords.loaded`)."""
    return _scan(dump_partitions(path, topic), topic, errors)


def scan_partition(
    topic: str,
    partition: int,
    source: Callable[[], Iterable[pa.RecordBatch]],
    decoder: CoordinatorDecoder,
) -> LiveRecords:
    """One coordinator partition read from ``kafka-log`` rows in log order (``source`` gives
    them, again when the group records' order must be walked): its live records, and every
    record by kind (what its loader meets)."""
    view = LiveRecords(partition)
    loaded = LoadedPartition(topic, partition, source=source)
    keys = LiveKeys()
    for rb in source():
        keys.add(rb)
        loaded.add(rb, decoder)
    view.take_live(keys.table(), decoder)
    view.loaded = loaded
    return view


def _scan(
    partitions: list[tuple[int, list[StoragePath]]], topic: str, errors: list[SegmentError] | None
) -> list[LiveRecords]:
    decoder = coordinator_decoder(topic)
    views: list[LiveRecords] = []
    for partition, files in partitions:
        found: list[SegmentError] = []

        def batches(
            files: Sequence[StoragePath] = files, found: list[SegmentError] = found
        ) -> Iterator[pa.RecordBatch]:
            for f in files:
                yield from record_batches(f, headers=False, batch_rows=32768, segment_errors=found)

        views.append(scan_partition(topic, partition, batches, decoder))
        if errors is not None:
            errors.extend(found)
            found.clear()
    return views


def _is_group_state(name: str) -> bool:
    # A type newer than our specs is named "unknown": judged as not group state.
    return name.startswith(GROUP_RECORD_PREFIXES)


def loader_topic(loader: Loader) -> str:
    """The topic a coordinator's loader reads."""
    return {
        "group": CONSUMER_OFFSETS,
        "transaction": TRANSACTION_STATE,
        "share": SHARE_GROUP_STATE,
    }[loader.coordinator]


def partition_findings(
    view: LiveRecords, target: Release, loader: Loader, mode: str = "unknown"
) -> list[Blocker]:
    """What release ``target``'s ``loader`` makes of one partition: the first record it fails
    on (then the other kinds it cannot read), the live group records it would lose and the
    live records it skips (``ignored``). The one definition behind ``downgrade-check`` and the
    Spark ``downgrade_findings``."""
    topic = loader_topic(loader)
    where = f"{topic}-{view.partition}"
    live = sorted(view.live.values(), key=lambda r: r.offset)
    live_offsets = {r.offset for r in live}
    found: list[Blocker] = []
    failures = _failures(view, target, loader, live_offsets)
    for n, (kind, rule, error) in enumerate(failures):
        if n == 0:
            head = (
                f"{loader.name} of Kafka {target.label} fails on it ({error}): "
                f"{loader.consequence(where)}"
            )
            if loader.on_failure == PREFIX:
                lost = {r.group or "" for r in live if r.offset >= kind.first_offset}
                head += f" ({plural(len(lost), 'transactional id')} written from there on)"
        else:
            head = f"{loader.name} of Kafka {target.label} cannot read it either ({error})"
        todo = (
            _group_advice(kind.record_type, kind.name, kind.group, target)
            if rule == "group-conversion"
            else _load_advice(kind, rule, target, loader, mode, live_offsets)
        )
        found.append(
            Blocker(
                rule,
                view.partition,
                kind.first_offset,
                kind.record_type,
                kind.name,
                -1 if kind.value_version is None else kind.value_version,
                kind.group,
                f"{head}; {todo}",
                topic,
                kind.count,
                fails_load=True,
            )
        )
    failed_at = {f[0].first_offset for f in failures}
    for rec in live:
        if rec.offset in failed_at:
            continue
        action = loader.read(rec.record_type, rec.value_version).action
        unread = rec.record_type not in loader.types
        if topic == CONSUMER_OFFSETS and unread and _is_group_state(rec.name):
            rule = "group-conversion"
            reason = _group_advice(rec.record_type, rec.name, rec.group, target)
        elif action == SKIP:
            rule = "ignored"
            reason = f"{loader.name} of Kafka {target.label} skips " + (
                f"unknown record type {rec.record_type} (KIP-915)"
                if unread
                else f"{rec.name}Value v{rec.value_version}"
            )
        else:
            continue
        found.append(
            Blocker(
                rule,
                rec.partition,
                rec.offset,
                rec.record_type,
                rec.name,
                rec.value_version,
                rec.group,
                reason,
                topic,
            )
        )
    return found


def _failures(
    view: LiveRecords, target: Release, loader: Loader, live_offsets: set[int]
) -> list[tuple[RecordKind, str, str]]:
    """The kinds of record the loader fails on, by first offset: (kind, rule, exception). A
    live group record of a type it does not read is a group to convert first; a record the
    new group coordinator's shard refuses in its order is a known bug or a replay order."""
    loaded = view.loaded if view.loaded is not None else _from_live(view, loader)
    found: list[tuple[RecordKind, str, str]] = []
    for kind in loaded.kinds.values():
        if kind.record_type == NO_KEY:
            found.append((kind, "no-key", _no_key_error(loader)))
            continue
        outcome = loader.read(kind.record_type, kind.value_version)
        if outcome.action != FAIL:
            continue
        reads = loader.types.get(kind.record_type)
        if reads is not None and kind.value_version in reads.layout_differs:
            misread = _first_misread(loaded, kind, reads)
            if misread is not None:
                found.append((misread[0], "record-layout", misread[1]))
            continue
        if reads is not None:
            rule = "value-version"
        elif (
            _is_group_state(kind.name)
            and kind.first_offset in live_offsets
            and loader_topic(loader) == CONSUMER_OFFSETS
        ):
            rule = "group-conversion"
        else:
            rule = "unknown-type"
        found.append((kind, rule, outcome.error))
    if loader.coordinator == "group" and loader.on_failure == NOT_LOADED:
        refused = _refused_in_order(loaded, target, loader)
        if refused is not None:
            found.append(refused)
    if loader.control_batches_fail and loaded.first_control_offset is not None:
        marker = RecordKind(-1, None, loaded.first_control_offset, 1, "control batch", None)
        error = "java.lang.IllegalStateException: Control batches are not supported yet."
        found.append((marker, "control-batch", error))
    return sorted(found, key=lambda f: f[0].first_offset)


def _first_misread(
    loaded: LoadedPartition, kind: RecordKind, reads: RecordTypeReads
) -> tuple[RecordKind, str] | None:
    """The first record of ``kind`` (a value version whose layout differs in the release) that
    the release's class cannot read, and the exception, or None when it reads them all (as
    its own fields: what the newer layout added is misread, not refused). Without the
    release's layout or the partition's bytes, the first record of the kind."""
    general = (
        f"its {reads.name}Value v{kind.value_version} has another layout than the one written "
        "at that version (an early-access record changed before its release), so the value "
        "misreads"
    )
    if reads.layout is None or loaded.source is None:
        return kind, (
            f"{general} (java.lang.RuntimeException: Could not read record with version "
            f"{kind.value_version} from value's buffer)"
        )
    assert kind.value_version is not None
    decoder = coordinator_decoder(loaded.topic)
    for offset, key, value in loaded.records_of(kind):
        error = read_error(reads.layout, kind.value_version, value[2:])
        if error is None:
            continue
        group = group_of(decoder.decode_key(key)[2])
        first = RecordKind(
            kind.record_type, kind.value_version, offset, kind.count, kind.name, group
        )
        return first, f"{general}: the one at offset {offset} does not read ({error})"
    return None


def _refused_in_order(
    loaded: LoadedPartition, target: Release, loader: Loader
) -> tuple[RecordKind, str, str] | None:
    """The record the shard refuses in its order (:mod:`codegen.forensics.known_bugs`), read
    only where the partition holds group records of the new protocols."""
    if not any(_is_group_state(k.name) for k in loaded.kinds.values()):
        return None
    version = tuple(int(p) for p in target.version.split("."))
    known = frozenset(r.name for r in loader.types.values())
    records = loaded.decoded(coordinator_decoder(CONSUMER_OFFSETS))
    failure = replay_failure(records, version, known)
    if failure is None:
        return None
    kind = RecordKind(
        -1, None if failure.tombstone else 0, failure.offset, 1, failure.name, failure.group
    )
    for k in loaded.kinds.values():
        if k.name == failure.name:
            kind = RecordKind(
                k.record_type,
                None if failure.tombstone else k.value_version,
                failure.offset,
                1,
                failure.name,
                failure.group,
            )
            break
    error = f"java.lang.IllegalStateException: {failure.error}"
    if failure.bug is not None:
        error += f"; this is {failure.bug.describe()}"
    return kind, "known-bug" if failure.bug is not None else "replay-order", error


def _from_live(view: LiveRecords, loader: Loader) -> LoadedPartition:
    """A view made from records rather than files: its live records are all there is."""
    loaded = LoadedPartition(loader_topic(loader), view.partition)
    for rec in sorted(view.live.values(), key=lambda r: r.offset):
        kind = loaded.kinds.get((rec.record_type, rec.value_version))
        if kind is None:
            loaded.kinds[(rec.record_type, rec.value_version)] = RecordKind(
                rec.record_type, rec.value_version, rec.offset, 1, rec.name, rec.group
            )
        else:
            kind.count += 1
        loaded.records += 1
    return loaded


def _no_key_error(loader: Loader) -> str:
    if loader.on_failure == NOT_LOADED:
        return "java.lang.NullPointerException: a record without a key"
    what = (
        "Transaction state log's key"
        if loader.coordinator == "transaction"
        else ("Group metadata/offset entry key")
    )
    return f"java.lang.IllegalArgumentException: requirement failed: {what} should not be null"


def _load_advice(
    kind: RecordKind,
    rule: str,
    target: Release,
    loader: Loader,
    mode: str,
    live_offsets: set[int],
) -> str:
    """What to do about a record the loader fails on."""
    if rule in ("known-bug", "replay-order"):
        return (
            "the record's order is one the writing release made but this one's shard refuses "
            "(log compaction removed what came between): see the issue named above; delete "
            "the group once it is empty, or downgrade to a release whose shard accepts it"
        )
    if rule == "control-batch":
        return (
            "transactional offset commits left markers in the log, which Kafka 3.6's new group "
            "coordinator cannot load: keep the old group coordinator (3.6's default), or "
            "downgrade to 3.7 or later"
        )
    if rule == "no-key":
        return "the partition holds a record without a key, which no coordinator writes"
    gone = ""
    if kind.first_offset not in live_offsets:
        gone = (
            "the record is no longer live (overwritten or tombstoned): the log cleaner removes "
            "it once its segment is rolled and cleaned (a tombstone stays delete.retention.ms "
            "longer), so check again after compaction; or "
        )
    if rule == "record-layout":
        return gone + (
            "the record was written by a release whose layout of it at this version differs "
            "(the feature was in early access in this release): delete the group (or its "
            "share state) before downgrading, or keep a release from the one whose layout it is"
        )
    if rule == "unknown-type":
        return gone + (
            "delete what wrote it (e.g. the group) and let the log cleaner remove its records, "
            "or downgrade to a release that skips unknown record types (3.4.1, 3.5 or later)"
        )
    if loader.coordinator == "transaction":
        return gone + (
            "lower transaction.version to 0 (kafka-features.sh downgrade --feature "
            "transaction.version=0), then let each transactional id write its state again "
            "(its next transaction) or expire (transactional.id.expiration.ms), and the log "
            "cleaner remove the old records"
        )
    return gone + (
        "rewrite the record (e.g. commit the offset again, or let the group rebalance) from "
        f"{_rewrite_advice(target, mode)}, or delete it"
    )


def _rewrite_advice(target: Release, mode: str) -> str:
    if mode == "KRaft":
        how = "brokers whose metadata.version is one Kafka {line} supports"
    elif mode == "ZooKeeper":
        how = "brokers whose inter.broker.protocol.version is at most {line}"
    else:
        how = (
            "brokers whose inter.broker.protocol.version (ZooKeeper) or metadata.version "
            "(KRaft) is at most Kafka {line}'s"
        )
    return how.format(line=target.label)


def _group_kind(name: str) -> str:
    for prefix, kind in (("ConsumerGroup", "consumer"), ("ShareGroup", "share")):
        if name.startswith(prefix):
            return kind
    return "streams"


def _group_advice(record_type: int, name: str, group: str | None, target: Release) -> str:
    kind = _group_kind(name)
    head = (
        f"Kafka {target.label}'s {target.group_loader.name.removeprefix('the ')} does not read "
        f"record type {record_type} ({name}) of {kind} group {_quoted(group)}"
    )
    return f"{head}; {_GROUP_STEPS[kind].format(group=shell_word(group))}"


_GROUP_STEPS: Final = {
    "consumer": (
        "downgrade its consumers first (group.protocol=classic, no group.remote.assignor): "
        "when the last consumer-protocol member leaves, the coordinator converts the group to "
        "a classic group and tombstones these records (KIP-848 downgrade path); or, once it "
        "is empty, delete it: kafka-consumer-groups.sh --bootstrap-server B --delete --group "
        "{group}"
    ),
    "share": (
        "share groups cannot become classic groups: stop its share consumers and delete it: "
        "kafka-share-groups.sh --bootstrap-server B --delete --group {group}"
    ),
    "streams": (
        "stop its Kafka Streams application, delete the group (kafka-streams-groups.sh "
        "--bootstrap-server B --delete --group {group}) and restart the application with "
        "group.protocol=classic"
    ),
}


def _quoted(group: str | None) -> str:
    if group is None:
        return "-"
    return '"" (empty group id)' if group == "" else repr(group)


def _coverage(topic: str, dirs: LogDirs, meta: ClusterMetadata | None) -> tuple[str | None, str]:
    """(status when the topic cannot be checked in full or at all, what was read)."""
    present = sorted(dirs.partitions(topic))
    expected = None if meta is None else meta.partition_counts.get(topic)
    if meta is not None and expected is None and not present:
        return PASSED, f"the cluster has no {topic} topic (per __cluster_metadata)"
    if not present and not (topic == CONSUMER_OFFSETS and dirs.files):
        why = (
            f"{topic} has {expected} partition(s) (per __cluster_metadata) but none is in the "
            "input; give every broker's log dir"
            if expected is not None
            else f"the input holds no {topic} partition (and no __cluster_metadata to tell "
            "whether the cluster has the topic); give every broker's log dir"
        )
        return NOT_CHECKED, why
    if expected is not None and len(present) < expected:
        missing = expected - len(present)
        return (
            PARTLY_CHECKED,
            f"{len(present)} of {expected} {topic} partitions read; {missing} not in the input "
            f"(give every broker's log dir){_replicas(topic, dirs)}",
        )
    return None, f"{len(present) or len(dirs.files)} {topic} partition(s) read" + _replicas(
        topic, dirs
    )


def _replicas(topic: str, dirs: LogDirs) -> str:
    several = sum(len(r) > 1 for r in dirs.partitions(topic).values())
    if not several:
        return ""
    return f" ({several} on several replicas: the one holding the most was read)"


def _record_check(
    name: str,
    topic: str,
    dirs: LogDirs,
    meta: ClusterMetadata | None,
    report: DowngradeReport,
    errors: list[SegmentError],
    judge_partition: Callable[[LiveRecords], list[Blocker]],
    loaded_by: str,
) -> Check:
    partial, read = _coverage(topic, dirs, meta)
    if partial in (PASSED, NOT_CHECKED):
        return Check(name, partial, read)
    views = _scan(dirs.coordinator_segments(topic), topic, errors)
    live = sum(len(v.live) for v in views)
    records = sum(v.loaded.records for v in views if v.loaded is not None)
    blockers: list[Blocker] = []
    for view in views:
        for finding in judge_partition(view):
            (report.ignored if finding.rule == "ignored" else blockers).append(finding)
    report.blockers.extend(blockers)
    if topic == CONSUMER_OFFSETS:
        report.live_records += live
    summary = (
        f"{read}; {plural(records, 'record')} ({live} live) loaded by {loaded_by}; "
        f"{len(blockers)} blocking"
    )
    if blockers:
        return Check(
            name,
            BLOCKED,
            summary,
            [_finding_line(b) for b in blockers],
            _dedupe(b.reason.split("; ", 1)[-1] for b in blockers),
        )
    return Check(name, partial or PASSED, summary)


def _finding_line(b: Blocker) -> str:
    if b.rule == "control-batch":
        what = "control batch"
    else:
        version = "tombstone" if b.value_version < 0 else f"v{b.value_version}"
        what = f"{b.name} ({b.record_type}) {version}"
    more = f" (and {b.count - 1} more like it)" if b.count > 1 else ""
    return f"{b.topic}-{b.partition}@{b.offset} {what} {_quoted(b.group)}: {b.rule}{more}"


def _dedupe(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    for i in items:
        if i not in out:
            out.append(i)
    return out


def _share_findings(target: Release, mode: str) -> Callable[[LiveRecords], list[Blocker]]:
    loader = share_loader(target)

    def findings(view: LiveRecords) -> list[Blocker]:
        if loader is not None:
            return partition_findings(view, target, loader, mode)
        return [
            Blocker(
                "share-group",
                rec.partition,
                rec.offset,
                rec.record_type,
                rec.name,
                rec.value_version,
                rec.group,
                f"Kafka {target.label} has no share coordinator (share groups came with 4.0, "
                f"KIP-932): the state of share group {_quoted(rec.group)} would be lost; "
                + _GROUP_STEPS["share"].format(group=shell_word(rec.group)),
                SHARE_GROUP_STATE,
            )
            for rec in sorted(view.live.values(), key=lambda r: r.offset)
        ]

    return findings


def _loaded_by(target: Release, loader: Loader) -> str:
    """Names the group coordinator judged, and the other one configuration can select."""
    default, other = target.group_loader, target.other_group_loader
    if loader is not default:
        return f"{loader.name} (as asked; Kafka {target.label}'s default is {default.name})"
    if other is None:
        return loader.name
    how = (
        "group.coordinator.new.enable=true, or from 3.7 group.coordinator.rebalance.protocols "
        "with consumer"
        if other.name.startswith("the new ")
        else "group.coordinator.new.enable=false"
    )
    return f"{loader.name}, Kafka {target.label}'s default ({how} selects {other.name})"


def check_downgrade(
    path: StoragePath | Sequence[StoragePath | str] | LogDirs | Iterable[LiveRecords],
    to: str,
    group_coordinator: str = DEFAULT,
) -> DowngradeReport:
    """Judge broker disks (paths, globs, or views made by :func:`live_records`) against
    release ``to``, with its ``default`` group coordinator, or the ``old`` or ``new`` one.

    Raises :class:`~codegen.forensics.releases.UnknownReleaseError` for an unknown release,
    ``ValueError`` for a group coordinator the release does not have, and
    :class:`~codegen.forensics.inputs.InputError` when the paths hold none of the topics read
    (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``,
    ``__cluster_metadata``).
    """
    target = release(to)
    group = target.group_loaders(group_coordinator)
    errors: list[SegmentError] = []
    if not isinstance(path, Path | RemotePath | str | LogDirs) and not _is_paths(path):
        report = DowngradeReport(target.label, group_coordinator=group.name)
        for view in cast("Iterable[LiveRecords]", path):
            report.live_records += len(view.live)
            for finding in partition_findings(view, target, group):
                (report.ignored if finding.rule == "ignored" else report.blockers).append(finding)
        return report
    dirs = _dirs(cast("StoragePath | Sequence[StoragePath | str] | LogDirs", path))
    dirs.require(
        CONSUMER_OFFSETS,
        TRANSACTION_STATE,
        SHARE_GROUP_STATE,
        "__cluster_metadata",
        command="downgrade-check",
    )
    meta = cluster_metadata(dirs, errors)
    mode = meta.mode if meta is not None else _mode(dirs)
    report = DowngradeReport(
        target.label, mode=mode, inputs=[str(p) for p in dirs.given], group_coordinator=group.name
    )
    report.checks.append(
        _record_check(
            "group coordinator",
            CONSUMER_OFFSETS,
            dirs,
            meta,
            report,
            errors,
            lambda view: partition_findings(view, target, group, mode),
            _loaded_by(target, group),
        )
    )
    report.checks.append(
        _record_check(
            "transaction coordinator",
            TRANSACTION_STATE,
            dirs,
            meta,
            report,
            errors,
            lambda view: partition_findings(view, target, target.transaction_loader, mode),
            target.transaction_loader.name,
        )
    )
    share = share_loader(target)
    report.checks.append(
        _record_check(
            "share coordinator",
            SHARE_GROUP_STATE,
            dirs,
            meta,
            report,
            errors,
            _share_findings(target, mode),
            share.name if share is not None else f"no share coordinator in Kafka {target.label}",
        )
    )
    # KIP-848's order for what to do: consumers first, then configs, features, the brokers.
    report.checks.append(configs_check(target, meta))
    report.checks.append(features_check(target, meta, mode))
    report.checks.append(metadata_records_check(target, meta))
    report.first_failure = _first_failure(report)
    report.segment_errors = [str(e) for e in errors]
    return report


_START_UP_ORDER: Final = (
    "metadata records",
    "cluster features",
    "dynamic configs",
    "group coordinator",
    "transaction coordinator",
    "share coordinator",
)
"""The order a broker meets what the checks judge: its metadata log, then the coordinators."""


def _first_failure(report: DowngradeReport) -> str | None:
    """What the release fails on first when it starts."""
    checks = {c.name: c for c in report.checks}
    for name in _START_UP_ORDER:
        check = checks.get(name)
        if check is not None and check.status == BLOCKED and check.findings:
            return f"{name}: {check.findings[0]}"
    return None


def is_paths(value: object) -> bool:
    """A list or tuple of paths (rather than of views)."""
    return _is_paths(value)


def _is_paths(value: object) -> bool:
    return isinstance(value, list | tuple) and all(
        isinstance(v, str | Path | RemotePath) for v in value
    )


def _mode(dirs: LogDirs) -> str:
    for image in dirs.images:
        props = image / "meta.properties"
        if props.is_file():
            text = props.read_text(encoding="utf-8", errors="replace")
            if "version=1" in text:
                return "KRaft"
            if "version=0" in text:
                return "ZooKeeper"
    return "unknown"
