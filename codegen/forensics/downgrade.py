"""Downgrade readiness: can the brokers of a given Kafka release run this cluster's disks?

A verdict is made of checks, each ``passed``, ``blocked`` (what blocks and what to do),
``not checked`` or ``partly checked`` (why: what the input lacks). The verdict is ``SAFE`` only
when every check was made and passed, ``BLOCKED`` when any blocked, else ``SAFE AS FAR AS
CHECKED``. The checks:

``group coordinator`` (``__consumer_offsets``)
    Only records still live after compaction matter (the last value per key, not tombstoned;
    transactional commits count once committed, see :mod:`codegen.dumps.compacted`): a broker
    of the target release reads exactly those when it loads the partition. Each is judged
    against what that release reads (:mod:`codegen.forensics.releases`):

    ``unknown-type``
        the release does not know the record type and predates KIP-915, so loading fails;
    ``value-version``
        the value version is above the highest the release reads, and the release cannot read
        it with that highest version (it predates KIP-915, or that version is not flexible);
    ``group-conversion``
        a consumer, share or streams group record of a type the release does not know: even a
        KIP-915 coordinator, which skips it, would lose the group. Consumer groups are
        converted to classic groups by downgrading their consumers first (KIP-848's downgrade
        path); share groups can only be deleted; streams groups are deleted and their
        applications restarted with the classic protocol.

    Record types the release does not know that are not group state (skipped by a KIP-915
    coordinator) are listed as ``ignored``.
``transaction coordinator`` (``__transaction_state``)
    Live records of a type, or with a value version, the release's transaction coordinator
    does not read (``TransactionLogValue`` v1, flexible, is written from
    ``transaction.version`` 1 on, KIP-890; the transaction coordinator has no KIP-915 reading).
``share coordinator`` (``__share_group_state``)
    Live share-partition state on a release without a share coordinator (before 4.0), or of
    types and versions the release does not read (judged as the group coordinator's).
``cluster features`` (``__cluster_metadata``)
    The finalized ``metadata.version`` and feature levels (``FeatureLevelRecord``; the latest
    snapshot, then the log after it; ``kraft.version`` from ``KRaftVersionRecord``) against the
    latest production levels of the release (its ``MetadataVersion`` and feature enums). A
    KRaft cluster cannot run a release before 3.3 (KIP-833).
``dynamic configs`` (``__cluster_metadata``)
    Live ``ConfigRecord`` of a resource type the release does not know, such as the ``GROUP``
    configs of KIP-848 (``group.consumer.session.timeout.ms``...), which must be deleted before
    brokers are downgraded.

Whether a coordinator topic is absent from the cluster (a pass) or only from the input (not
checked) is told by the ``TopicRecord`` of ``__cluster_metadata``; without it, an absent topic
is not checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

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
from codegen.forensics.cluster import ClusterMetadata, cluster_metadata
from codegen.forensics.inputs import InputError, LogDirs, discover
from codegen.forensics.releases import (
    KRaftSupport,
    RecordTypeReads,
    Release,
    release,
    release_lines,
)
from codegen.text import plural
from codegen.views.live import LiveKeys

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "BLOCKED",
    "GROUP_RECORD_PREFIXES",
    "NOT_CHECKED",
    "PARTLY_CHECKED",
    "PASSED",
    "Blocker",
    "Check",
    "DowngradeReport",
    "DumpInputError",
    "LiveRecord",
    "LiveRecords",
    "check_downgrade",
    "dump_partitions",
    "finding_reason",
    "is_paths",
    "judge",
    "live_records",
]

GROUP_RECORD_PREFIXES: Final = ("ConsumerGroup", "ShareGroup", "StreamsGroup")

PASSED: Final = "passed"
BLOCKED: Final = "blocked"
NOT_CHECKED: Final = "not checked"
PARTLY_CHECKED: Final = "partly checked"

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
            _group_of(rec.key),
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
            group = _group_of(key_obj)
            self.live[key] = LiveRecord(
                self.partition, offset, rtype, name or "unknown", version, group
            )


def _group_of(key: Any) -> str | None:
    """The group (or transactional id) a record's key names."""
    if key is None:
        return None
    for name in ("group", "group_id", "transactional_id"):
        value = getattr(key, name, None)
        if value is not None:
            return str(value)
    return None


def _dirs(path: Path | Sequence[Path | str] | LogDirs) -> LogDirs:
    if isinstance(path, LogDirs):
        return path
    return discover([path] if isinstance(path, str | Path) else list(path))


def dump_partitions(
    path: Path | Sequence[Path | str] | LogDirs, topic: str = CONSUMER_OFFSETS
) -> list[tuple[int, list[Path]]]:
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
    path: Path | Sequence[Path | str] | LogDirs,
    errors: list[SegmentError] | None = None,
    topic: str = CONSUMER_OFFSETS,
) -> list[LiveRecords]:
    """The live records of each ``topic`` partition under ``path`` (:attr:`LiveRecords.live`;
    read from columns, so the views hold no group state)."""
    return _live(dump_partitions(path, topic), topic, errors)


def _live(
    partitions: list[tuple[int, list[Path]]], topic: str, errors: list[SegmentError] | None
) -> list[LiveRecords]:
    views: list[LiveRecords] = []
    decoder = coordinator_decoder(topic)
    for partition, files in partitions:
        view = LiveRecords(partition)
        keys = LiveKeys()
        for f in files:
            found: list[SegmentError] = []
            for rb in record_batches(f, headers=False, batch_rows=32768, segment_errors=found):
                keys.add(rb)
            if errors is not None:
                errors.extend(found)
        view.take_live(keys.table(), decoder)
        views.append(view)
    return views


@dataclass(frozen=True, slots=True)
class Blocker:
    """A live record the target release cannot load, or skips."""

    rule: str
    """``unknown-type``, ``value-version``, ``group-conversion``, ``share-group`` or
    ``ignored``."""
    partition: int
    offset: int
    record_type: int
    name: str
    value_version: int
    group: str | None
    reason: str
    topic: str = CONSUMER_OFFSETS


@dataclass(slots=True)
class Check:
    """One part of the verdict: what was checked, its result, what blocks and what to do."""

    name: str
    status: str
    """``passed``, ``blocked``, ``not checked`` or ``partly checked``."""
    summary: str
    findings: list[str] = field(default_factory=list)
    """What blocks (a line each)."""
    steps: list[str] = field(default_factory=list)
    """What to do, in order."""

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "status": self.status,
            "summary": self.summary,
            "findings": self.findings,
            "steps": self.steps,
        }


SAFE: Final = "SAFE"
SAFE_AS_FAR_AS_CHECKED: Final = "SAFE AS FAR AS CHECKED"
BLOCKED_VERDICT: Final = "BLOCKED"


@dataclass(slots=True)
class DowngradeReport:
    target: str
    """The release line judged against."""
    live_records: int = 0
    """Live ``__consumer_offsets`` records judged."""
    blockers: list[Blocker] = field(default_factory=list)
    """Records of the coordinator topics that block."""
    ignored: list[Blocker] = field(default_factory=list)
    segment_errors: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    mode: str = "unknown"
    """``KRaft`` (``__cluster_metadata`` or a version 1 ``meta.properties`` in the input),
    ``ZooKeeper`` (a version 0 ``meta.properties``) or ``unknown``."""
    inputs: list[str] = field(default_factory=list)

    @property
    def blocked(self) -> bool:
        return bool(self.blockers) or any(c.status == BLOCKED for c in self.checks)

    @property
    def complete(self) -> bool:
        """Every check was made in full."""
        return all(c.status in (PASSED, BLOCKED) for c in self.checks)

    @property
    def safe(self) -> bool:
        """SAFE: nothing blocks and every check was made."""
        return not self.blocked and self.complete

    @property
    def verdict(self) -> str:
        if self.blocked:
            return BLOCKED_VERDICT
        return SAFE if self.complete else SAFE_AS_FAR_AS_CHECKED

    def steps(self) -> list[str]:
        """What to do, in KIP-848's order (the checks are kept in that order)."""
        return [s for c in self.checks for s in c.steps]

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "verdict": self.verdict,
            "safe": self.safe,
            "mode": self.mode,
            "inputs": self.inputs,
            "checks": [c.to_json() for c in self.checks],
            "steps": self.steps(),
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
    return how.format(line=target.line)


def judge(rec: LiveRecord, target: Release, mode: str = "unknown") -> Blocker | None:
    """Why ``target``'s group coordinator cannot load ``rec`` (or skips it), or None."""
    return _judge(rec, target, target.reads(rec.record_type), target.ignores_unknown, mode)


def finding_reason(
    partition: int,
    offset: int,
    record_type: int,
    name: str,
    value_version: int,
    group: str | None,
    to: str,
) -> str | None:
    """The reason :func:`judge` gives for a ``__consumer_offsets`` record (the mode unknown),
    or None when it reads it: one wording for every layer that reports findings."""
    rec = LiveRecord(partition, offset, record_type, name, value_version, group)
    found = judge(rec, release(to))
    return None if found is None else found.reason


def _judge(
    rec: LiveRecord,
    target: Release,
    reads: RecordTypeReads | None,
    lenient: bool,
    mode: str,
    topic: str = CONSUMER_OFFSETS,
) -> Blocker | None:
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
            topic,
        )

    if reads is None:
        if topic == CONSUMER_OFFSETS and _is_group_state(rec):
            return finding("group-conversion", _group_advice(rec, target))
        if lenient:
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
        if lenient and reads.highest_is_flexible:
            return None
        why = (
            "predates KIP-915 (3.5)"
            if not target.ignores_unknown
            else f"its v{reads.highest_value_version} is not flexible"
        )
        if topic == TRANSACTION_STATE:
            why = "its transaction coordinator reads no newer value version"
            todo = (
                "lower transaction.version to 0 (kafka-features.sh downgrade --feature "
                "transaction.version=0), then let each transactional id write its state again "
                "(its next transaction) or expire (transactional.id.expiration.ms), and the log "
                "cleaner remove the old record"
            )
        else:
            todo = (
                "rewrite the record (e.g. commit the offset again, or let the group rebalance) "
                f"from {_rewrite_advice(target, mode)}, or delete it"
            )
        return finding(
            "value-version",
            f"{reads.name}Value v{rec.value_version} is newer than the v"
            f"{reads.highest_value_version} Kafka {target.line} reads, and Kafka {target.line} "
            f"{why}; {todo}",
        )
    return None


def _group_kind(name: str) -> str:
    for prefix, kind in (("ConsumerGroup", "consumer"), ("ShareGroup", "share")):
        if name.startswith(prefix):
            return kind
    return "streams"


def _group_advice(rec: LiveRecord, target: Release) -> str:
    kind = _group_kind(rec.name)
    head = (
        f"Kafka {target.line} does not know record type {rec.record_type} ({rec.name}) of "
        f"{kind} group {_quoted(rec.group)}"
    )
    return f"{head}; {_GROUP_STEPS[kind].format(group=_shell(rec.group))}"


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


def _shell(group: str | None) -> str:
    if not group:
        return "''"
    return (
        group
        if group.replace("-", "").replace("_", "").replace(".", "").isalnum()
        else ("'" + group.replace("'", "'\\''") + "'")
    )


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
    judge_one: Any,
) -> Check:
    partial, read = _coverage(topic, dirs, meta)
    if partial in (PASSED, NOT_CHECKED):
        return Check(name, partial, read)
    views = _live(dirs.coordinator_segments(topic), topic, errors)
    live = 0
    blockers: list[Blocker] = []
    for view in views:
        for rec in sorted(view.live.values(), key=lambda r: r.offset):
            live += 1
            finding = judge_one(rec)
            if finding is None:
                continue
            (report.ignored if finding.rule == "ignored" else blockers).append(finding)
    report.blockers.extend(blockers)
    if topic == CONSUMER_OFFSETS:
        report.live_records += live
    summary = f"{read}; {plural(live, 'live record')}, {len(blockers)} blocking"
    if blockers:
        return Check(
            name,
            BLOCKED,
            summary,
            [
                f"{b.topic}-{b.partition}@{b.offset} {b.name} ({b.record_type}) v{b.value_version}"
                f" {_quoted(b.group)}: {b.rule}"
                for b in blockers
            ],
            _dedupe(b.reason.split("; ", 1)[-1] for b in blockers),
        )
    return Check(name, partial or PASSED, summary)


def _dedupe(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    for i in items:
        if i not in out:
            out.append(i)
    return out


def _share_judge(target: Release, mode: str) -> Any:
    def judge_one(rec: LiveRecord) -> Blocker | None:
        if target.share_types is None:
            return Blocker(
                "share-group",
                rec.partition,
                rec.offset,
                rec.record_type,
                rec.name,
                rec.value_version,
                rec.group,
                f"Kafka {target.line} has no share coordinator (share groups came with 4.0, "
                f"KIP-932): the state of share group {_quoted(rec.group)} would be lost; "
                + _GROUP_STEPS["share"].format(group=_shell(rec.group)),
                SHARE_GROUP_STATE,
            )
        reads = target.share_types.get(rec.record_type)
        return _judge(rec, target, reads, True, mode, SHARE_GROUP_STATE)

    return judge_one


def _features_check(target: Release, meta: ClusterMetadata | None, mode: str) -> Check:
    name = "cluster features"
    if meta is None:
        why = "the input holds no __cluster_metadata: " + (
            "a ZooKeeper cluster keeps inter.broker.protocol.version in server.properties "
            "and its finalized features in ZooKeeper, not on the brokers' disks"
            if mode != "KRaft"
            else "give a log dir holding __cluster_metadata-0"
        )
        return Check(name, NOT_CHECKED, why)
    kraft = target.kraft
    if kraft is None:
        return Check(
            name,
            BLOCKED,
            f"a KRaft cluster (metadata.version "
            f"{'unknown' if meta.metadata_version is None else meta.metadata_version}); "
            f"Kafka {target.line} has no production KRaft mode",
            [f"Kafka {target.line} predates production KRaft (3.3, KIP-833)"],
            [
                f"a KRaft cluster cannot run Kafka {target.line} (KRaft is production from 3.3, "
                "KIP-833, and there is no migration from KRaft back to ZooKeeper): choose 3.3 "
                "or later"
            ],
        )
    findings: list[str] = []
    steps: list[str] = []
    level = meta.metadata_version
    names = _newest_kraft()
    if level is None:
        summary = "no metadata.version FeatureLevelRecord in __cluster_metadata"
    else:
        have = names.metadata_version_name(level) if names else f"level {level}"
        top = kraft.highest_metadata_version
        summary = (
            f"metadata.version {level} ({have}) against at most "
            f"{top} ({kraft.metadata_version_name(top)}) in Kafka {target.line}"
        )
        if level > kraft.highest_metadata_version:
            first = _first_line_supporting(level)
            findings.append(
                f"metadata.version {level} ({have}) is above the highest Kafka {target.line} "
                f"supports, {kraft.highest_metadata_version} "
                f"({kraft.metadata_version_name(kraft.highest_metadata_version)})"
            )
            steps.append(
                f"metadata.version {level} cannot in general be lowered to "
                f"{kraft.highest_metadata_version} (kafka-features.sh downgrade --metadata "
                "refuses a downgrade that would lose metadata, and --unsafe loses it): this "
                f"cluster cannot be downgraded to Kafka {target.line}"
                + (f"; the oldest release line supporting it is {first}" if first else "")
            )
    for feature, finalized in sorted(meta.features.items()):
        supported = kraft.features.get(feature, 0)
        summary += f"; {feature} {finalized} (at most {supported})"
        if finalized > supported:
            findings.append(
                f"{feature} is finalized at {finalized}, above the {supported} Kafka "
                f"{target.line} supports"
            )
            steps.append(
                f"lower {feature} to {supported}: kafka-features.sh --bootstrap-server B "
                f"downgrade --feature {feature}={supported}"
                + (
                    " (after no consumer, share or streams group is left)"
                    if feature in ("group.version", "share.version", "streams.version")
                    else ""
                )
            )
    status = BLOCKED if findings else (PASSED if level is not None else PARTLY_CHECKED)
    return Check(name, status, summary, findings, steps)


def _newest_kraft() -> KRaftSupport | None:
    """The newest release's table, which names every older metadata.version too."""
    return release(release_lines()[-1]).kraft


def _first_line_supporting(level: int) -> str | None:
    for line in release_lines():
        k = release(line).kraft
        if k is not None and k.highest_metadata_version >= level:
            return line
    return None


def _configs_check(target: Release, meta: ClusterMetadata | None) -> Check:
    name = "dynamic configs"
    if meta is None:
        return Check(name, NOT_CHECKED, "the input holds no __cluster_metadata")
    kraft = target.kraft
    if kraft is None:
        return Check(
            name,
            NOT_CHECKED,
            f"Kafka {target.line} has no KRaft controller to read them (see cluster features)",
        )
    findings: list[str] = []
    steps: list[str] = []
    for (rtype, resource), names in sorted(meta.configs.items()):
        if rtype in kraft.config_resource_types:
            continue
        type_name = meta.config_type_name(rtype)
        findings.append(
            f"{type_name} ({rtype}) config(s) of {resource!r}: {', '.join(sorted(names))}; "
            f"Kafka {target.line} does not know that resource type"
        )
        entity = {"GROUP": "groups", "CLIENT_METRICS": "client-metrics"}.get(type_name)
        if entity is not None:
            steps.append(
                f"delete them before downgrading brokers (KIP-848): kafka-configs.sh "
                f"--bootstrap-server B --alter --entity-type {entity} --entity-name "
                f"{_shell(resource)} --delete-config {','.join(sorted(names))}"
            )
        else:
            steps.append(f"delete the {type_name} configs of {resource!r} before downgrading")
    total = sum(len(n) for n in meta.configs.values())
    summary = f"{total} live dynamic config(s) of {len(meta.configs)} resource(s)"
    return Check(name, BLOCKED if findings else PASSED, summary, findings, steps)


def check_downgrade(
    path: Path | Sequence[Path | str] | LogDirs | Iterable[LiveRecords], to: str
) -> DowngradeReport:
    """Judge broker disks (paths, globs, or views made by :func:`live_records`) against
    release ``to``.

    Raises :class:`~codegen.forensics.releases.UnknownReleaseError` for an unknown release and
    :class:`~codegen.forensics.inputs.InputError` when the paths hold none of the topics read
    (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``,
    ``__cluster_metadata``).
    """
    target = release(to)
    errors: list[SegmentError] = []
    if not isinstance(path, Path | str | LogDirs) and not _is_paths(path):
        views = list(cast("Iterable[LiveRecords]", path))
        report = DowngradeReport(target.line)
        for view in views:
            for rec in sorted(view.live.values(), key=lambda r: r.offset):
                report.live_records += 1
                finding = judge(rec, target)
                if finding is not None:
                    (report.ignored if finding.rule == "ignored" else report.blockers).append(
                        finding
                    )
        return report
    dirs = _dirs(cast("Path | Sequence[Path | str] | LogDirs", path))
    dirs.require(
        CONSUMER_OFFSETS,
        TRANSACTION_STATE,
        SHARE_GROUP_STATE,
        "__cluster_metadata",
        command="downgrade-check",
    )
    meta = cluster_metadata(dirs, errors)
    mode = meta.mode if meta is not None else _mode(dirs)
    report = DowngradeReport(target.line, mode=mode, inputs=[str(p) for p in dirs.given])
    report.checks.append(
        _record_check(
            "group coordinator",
            CONSUMER_OFFSETS,
            dirs,
            meta,
            report,
            errors,
            lambda rec: judge(rec, target, mode),
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
            lambda rec: _judge(
                rec,
                target,
                target.transaction_types.get(rec.record_type),
                False,
                mode,
                TRANSACTION_STATE,
            ),
        )
    )
    report.checks.append(
        _record_check(
            "share coordinator",
            SHARE_GROUP_STATE,
            dirs,
            meta,
            report,
            errors,
            _share_judge(target, mode),
        )
    )
    report.checks.append(_configs_check(target, meta))
    report.checks.append(_features_check(target, meta, mode))
    report.segment_errors = [str(e) for e in errors]
    return report


def is_paths(value: object) -> bool:
    """A list or tuple of paths (rather than of views)."""
    return _is_paths(value)


def _is_paths(value: object) -> bool:
    return isinstance(value, list | tuple) and all(isinstance(v, str | Path) for v in value)


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
