"""What a release's coordinator loader makes of one coordinator partition: the first record it
fails on (then the other kinds it cannot read), the live group records it would lose and the
live records it skips, each with what to do (:func:`partition_findings`, the one definition
behind ``downgrade-check`` and the Spark ``downgrade_findings``; :func:`share_findings` for
share-group state)."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Final

from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    coordinator_decoder,
)
from codegen.forensics.cluster_checks import shell_word
from codegen.forensics.coordinator_partitions import LiveRecords
from codegen.forensics.known_bugs import replay_failure
from codegen.forensics.loaded import NO_KEY, LoadedPartition, RecordKind, group_of
from codegen.forensics.loaders import FAIL, NOT_LOADED, PREFIX, SKIP, Loader
from codegen.forensics.release_layouts import read_error
from codegen.forensics.releases import RecordTypeReads, Release, share_loader
from codegen.forensics.verdict import Blocker
from codegen.text import plural

__all__ = [
    "GROUP_RECORD_PREFIXES",
    "GROUP_STEPS",
    "loader_topic",
    "partition_findings",
    "quoted_group",
    "share_findings",
]

GROUP_RECORD_PREFIXES: Final = ("ConsumerGroup", "ShareGroup", "StreamsGroup")

_BY_OFFSET: Final = attrgetter("offset")
"""A live record's sort key (tens of thousands a partition: no Python call each)."""


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
    live = sorted(view.live.values(), key=_BY_OFFSET)
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
    rules: dict[tuple[int, int, str], str | None] = {}  # by type, version and name: few
    for rec in live:
        of = (rec.record_type, rec.value_version, rec.name)
        live_rule = rules.get(of, _UNSEEN)  # one lookup a record (tens of thousands)
        if live_rule is _UNSEEN:
            live_rule = rules[of] = _live_rule(*of, topic, loader)
        if live_rule is None or rec.offset in failed_at:
            continue
        if live_rule == _GROUP_CONVERSION:
            reason = _group_advice(rec.record_type, rec.name, rec.group, target)
        else:
            reason = f"{loader.name} of Kafka {target.label} skips " + (
                f"unknown record type {rec.record_type} (KIP-915)"
                if rec.record_type not in loader.types
                else f"{rec.name}Value v{rec.value_version}"
            )
        found.append(
            Blocker(
                live_rule,
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


_GROUP_CONVERSION: Final = "group-conversion"
_UNSEEN: Final = "unseen"
"""A kind of live record whose rule is not looked up yet (no rule is named so)."""
_IGNORED: Final = "ignored"


def _live_rule(
    record_type: int, value_version: int, name: str, topic: str, loader: Loader
) -> str | None:
    """The rule a live record of this type, value version and name falls under where the
    loader does not fail on it: :data:`_GROUP_CONVERSION` (group state the loader does not
    read), :data:`_IGNORED` (skipped), or None (read)."""
    unread = record_type not in loader.types
    if topic == CONSUMER_OFFSETS and unread and _is_group_state(name):
        return _GROUP_CONVERSION
    if loader.read(record_type, value_version).action == SKIP:
        return _IGNORED
    return None


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
    for rec in sorted(view.live.values(), key=_BY_OFFSET):
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
        f"record type {record_type} ({name}) of {kind} group {quoted_group(group)}"
    )
    return f"{head}; {GROUP_STEPS[kind].format(group=shell_word(group))}"


GROUP_STEPS: Final = {
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


def quoted_group(group: str | None) -> str:
    if group is None:
        return "-"
    return '"" (empty group id)' if group == "" else repr(group)


def share_findings(target: Release, mode: str) -> Callable[[LiveRecords], list[Blocker]]:
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
                f"KIP-932): the state of share group {quoted_group(rec.group)} would be lost; "
                + GROUP_STEPS["share"].format(group=shell_word(rec.group)),
                SHARE_GROUP_STATE,
            )
            for rec in sorted(view.live.values(), key=_BY_OFFSET)
        ]

    return findings
