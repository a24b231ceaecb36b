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

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
)
from codegen.dumps.model import SegmentError
from codegen.dumps.storage import RemotePath, StoragePath
from codegen.forensics.cluster import ClusterMetadata, cluster_metadata
from codegen.forensics.cluster_checks import (
    configs_check,
    features_check,
    metadata_records_check,
)
from codegen.forensics.coordinator_logs import is_paths, log_dirs_of
from codegen.forensics.coordinator_partitions import LiveRecords, scan_partitions
from codegen.forensics.inputs import LogDirs
from codegen.forensics.loaders import Loader
from codegen.forensics.partition_findings import (
    partition_findings,
    quoted_group,
    share_findings,
)
from codegen.forensics.releases import DEFAULT, Release, release, share_loader
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
from codegen.gc_pause import freeze_survivors, gc_paused
from codegen.text import plural

if TYPE_CHECKING:
    pass

__all__ = [
    "BLOCKED",
    "BLOCKED_VERDICT",
    "NOT_CHECKED",
    "PARTLY_CHECKED",
    "PASSED",
    "SAFE",
    "SAFE_AS_FAR_AS_CHECKED",
    "Blocker",
    "Check",
    "DowngradeReport",
    "check_downgrade",
]


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
    blockers: list[Blocker] = []
    with gc_paused():  # live records and findings by the ten thousand, and no cycle
        views = scan_partitions(dirs.coordinator_segments(topic), topic, errors)
        for view in views:
            for finding in judge_partition(view):
                (report.ignored if finding.rule == "ignored" else blockers).append(finding)
    freeze_survivors()  # else the next collection walks them all once more
    live = sum(len(v.live) for v in views)
    records = sum(v.loaded.records for v in views if v.loaded is not None)
    report.blockers.extend(blockers)
    if topic == CONSUMER_OFFSETS:
        report.live_records += live
    summary = (
        f"{read}; {plural(records, 'record')} ({live} live) loaded by {loaded_by}; "
        f"{len(blockers)} blocking"
    )
    if blockers:
        # each distinct advice once, in the blockers' order, by a dict (a list's `in` compared
        # the thousands of long, mostly alike texts pair by pair)
        steps = list(dict.fromkeys(b.reason.split("; ", 1)[-1] for b in blockers))
        return Check(name, BLOCKED, summary, [_finding_line(b) for b in blockers], steps)
    return Check(name, partial or PASSED, summary)


def _finding_line(b: Blocker) -> str:
    if b.rule == "control-batch":
        what = "control batch"
    else:
        version = "tombstone" if b.value_version < 0 else f"v{b.value_version}"
        what = f"{b.name} ({b.record_type}) {version}"
    more = f" (and {b.count - 1} more like it)" if b.count > 1 else ""
    return f"{b.topic}-{b.partition}@{b.offset} {what} {quoted_group(b.group)}: {b.rule}{more}"


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
    if not isinstance(path, Path | RemotePath | str | LogDirs) and not is_paths(path):
        report = DowngradeReport(target.label, group_coordinator=group.name)
        for view in cast("Iterable[LiveRecords]", path):
            report.live_records += len(view.live)
            for finding in partition_findings(view, target, group):
                (report.ignored if finding.rule == "ignored" else report.blockers).append(finding)
        return report
    dirs = log_dirs_of(cast("StoragePath | Sequence[StoragePath | str] | LogDirs", path))
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
            share_findings(target, mode),
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
