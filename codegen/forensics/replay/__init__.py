"""Replay a cluster's logs through a Kafka release's own loaders, in a JVM.

``downgrade-check`` judges a downgrade from a model (:mod:`codegen.forensics.loaders`); what
decides is what release X's code does when its brokers load the logs. :func:`replay` feeds the
segment files of every coordinator partition in the input (and the metadata log) to release
X's own load path, with X's jars from Maven Central (:mod:`~codegen.forensics.replay.jars`) and
a small harness per API generation (:mod:`~codegen.forensics.replay.harness`):

- ``__consumer_offsets``: the old (Scala) group coordinator's ``loadGroupsAndOffsets`` (2.8 to
  4.0), or the coordinator runtime's ``CoordinatorLoaderImpl`` replaying into
  ``GroupCoordinatorShard`` (3.6 on), whichever the release runs (``group_coordinator``);
- ``__transaction_state``: ``TransactionStateManager.loadTransactionMetadata`` (every release);
- ``__share_group_state``: the runtime replaying into ``ShareCoordinatorShard`` (4.0 on);
- ``__cluster_metadata``: the latest snapshot, then the log after it, read by the release's
  ``MetadataRecordSerde`` and replayed into its ``MetadataDelta`` (3.3 on).

The answer (:class:`~codegen.forensics.replay.report.ReplayReport`) says per partition whether
it loaded, or where it failed with Kafka's own exception text (and what the release does then),
and what the release ends up with (its groups, their types and states, committed offsets,
transactions, share-partition states, read back from the release's own coordinator state)
beside what the cluster has now (this project's views of the same files), and what is lost.

What a replay cannot see: configuration that is not in the log (which group coordinator a 3.x
broker runs, ``group.coordinator.rebalance.protocols``...: named by ``group_coordinator``), and
the release that wrote a record (the files are judged as they are).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from codegen.dumps.coordinator import CONSUMER_OFFSETS, SHARE_GROUP_STATE, TRANSACTION_STATE
from codegen.dumps.metadata import CLUSTER_METADATA
from codegen.forensics.cluster import metadata_files
from codegen.forensics.groups import group_views
from codegen.forensics.inputs import LogDirs, discover
from codegen.forensics.known_bugs import name_bug
from codegen.forensics.releases import DEFAULT, NEW, Release, release
from codegen.forensics.replay.harness import (
    HarnessError,
    JavaMissingError,
    PartSpec,
    harness_classes,
    java_tools,
    run_harness,
)
from codegen.forensics.replay.jars import (
    JarsMissingError,
    ReplayUnavailableError,
    cache_dir,
    jar_set,
    locked_releases,
)
from codegen.forensics.replay.report import (
    Agreement,
    ClusterState,
    Group,
    PartitionReplay,
    ReplayReport,
    Transaction,
    agreements,
)
from codegen.forensics.shares import share_states
from codegen.forensics.transactions import transaction_report

__all__ = [
    "Agreement",
    "HarnessError",
    "JarsMissingError",
    "JavaMissingError",
    "ReplayReport",
    "ReplayUnavailableError",
    "agreements",
    "cache_dir",
    "replay",
    "replay_release",
]


def replay_release(target: Release) -> str:
    """The release whose jars replay ``target``: itself when its jars are listed, else the
    first listed release of its line (3.3's first published is 3.3.1)."""
    listed = locked_releases()
    if target.version in listed:
        return target.version
    same_line = [r for r in listed if r.rsplit(".", 1)[0] == target.line]
    if target.version.endswith(".0") and same_line:
        return same_line[0]
    return target.version


def replay(
    path: Path | str | Sequence[Path | str] | LogDirs,
    to: str,
    *,
    group_coordinator: str = DEFAULT,
    jars: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> ReplayReport:
    """Replay the coordinator partitions and the metadata log under ``path`` through release
    ``to``'s own loaders (see the module's description).

    ``jars``: a folder holding the release's jars (a Kafka distribution's ``libs/``) instead of
    the cache and Maven Central. Raises :class:`JavaMissingError`, :class:`JarsMissingError`
    or :class:`HarnessError` (all :class:`ReplayUnavailableError`) when it cannot run, and the
    errors of :func:`~codegen.forensics.downgrade.check_downgrade` for bad input."""
    target = release(to)
    loader = target.group_loaders(group_coordinator)
    version = replay_release(target)
    dirs = (
        path
        if isinstance(path, LogDirs)
        else discover([path] if isinstance(path, str | Path) else list(path))
    )
    dirs.require(
        CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE, CLUSTER_METADATA,
        command="downgrade-check --replay",
    )  # fmt: skip
    classes = harness_classes(version)
    _require_local(dirs)
    group_key = "group-new" if loader.name.startswith(f"the {NEW} ") else "group-old"
    parts: list[PartSpec] = []
    for coordinator, topic, key in (
        ("group", CONSUMER_OFFSETS, group_key),
        ("transaction", TRANSACTION_STATE, "transaction"),
        ("share", SHARE_GROUP_STATE, "share"),
    ):
        partitions = [
            {"topic": topic, "partition": p, "files": [str(f) for f in files]}
            for p, files in dirs.coordinator_segments(topic)
        ]
        if partitions and key in classes:
            parts.append(PartSpec(coordinator, classes[key], partitions))
    metadata = _metadata_part(dirs)
    if metadata is not None and "metadata" in classes:
        parts.append(PartSpec("metadata", classes["metadata"], [metadata]))
    # Java first: without it the jars (tens of MB fetched) would be of no use.
    java_tools()
    found = jar_set(version, folder=jars, progress=progress)
    if progress is not None:
        progress(f"replaying through Kafka {version}'s own loaders ({found.source})")
    answer = run_harness(version, found, parts)
    report = ReplayReport(target.label, version, found.source, loader.name)
    _read_answer(answer, report, tuple(int(p) for p in version.split(".")))
    report.current = current_state(dirs)
    return report


def _require_local(dirs: LogDirs) -> None:
    """The JVM reads the segment files from the disk: object storage is not read there."""
    for topic in (CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE, CLUSTER_METADATA):
        for _, files in dirs.coordinator_segments(topic):
            for f in files:
                if not isinstance(f, Path):
                    raise ReplayUnavailableError(
                        f"{f}: the replay reads log segments from a local disk; copy the log "
                        "dirs to one (downgrade-check without --replay reads them where they are)"
                    )


def _metadata_part(dirs: LogDirs) -> dict[str, Any] | None:
    found = metadata_files(dirs)
    if found is None:
        return None
    files, start = found
    return {
        "topic": CLUSTER_METADATA,
        "partition": 0,
        "files": [str(f) for f in files],
        "startOffset": start,
    }


def _read_answer(answer: dict[str, Any], report: ReplayReport, version: tuple[int, ...]) -> None:
    report.java = str(answer.get("java", ""))
    report.jvm_startup_ms = int(answer.get("jvmStartupMs", 0))
    report.replay_ms = int(answer.get("replayMs", 0))
    report.wall_ms = int(answer.get("wallMs", 0))
    for part in answer.get("parts", []):
        if "harnessError" in part:
            report.harness_errors.append(f"{part['coordinator']}: {part['harnessError']}")
            continue
        for p in part.get("partitions", []):
            replayed = _partition(p, version)
            report.records += int(p.get("records", 0) or 0)
            if part["coordinator"] == "metadata":
                report.metadata = replayed
                report.metadata_version = p.get("metadataVersion")
                report.metadata_errors = [
                    f"{e['record']} at {Path(e['file']).name}@{e['offset']}: {e['exception']}"
                    for e in p.get("replayErrors", [])
                ]
            else:
                report.partitions.append(replayed)
        state = report.survives
        for g in part.get("groups", []):
            state.groups[g["groupId"]] = Group(
                g["groupId"],
                int(g["partition"]),
                str(g["type"]).replace("generic", "classic"),
                str(g["state"]),
                int(g.get("members") or 0),
            )
        for o in part.get("offsets", []):
            state.offsets[(o["group"], o["topic"], int(o["partition"]))] = int(o["offset"])
        for t in part.get("transactions", []):
            state.transactions[t["transactionalId"]] = Transaction(
                t["transactionalId"],
                int(t["partition"]),
                int(t["producerId"]),
                int(t["producerEpoch"]),
                str(t["state"]),
            )
        for s in part.get("shareStates", []):
            state.share_states.add((s["groupId"], s["topicId"], int(s["partition"])))


def _partition(p: dict[str, Any], version: tuple[int, ...]) -> PartitionReplay:
    failure = p.get("failure") or {}
    bug = None if not failure.get("exception") else name_bug(failure["exception"], version)
    lines = tuple(
        f"{line['level']} {line['message']}"
        + (f": {line['exception']}" if line.get("exception") else "")
        for line in p.get("log", [])
    )
    return PartitionReplay(
        str(p["topic"]),
        int(p["partition"]),
        str(p.get("status", "loaded")),
        None if "offset" not in failure else int(failure["offset"]),
        failure.get("exception"),
        p.get("served"),
        failure.get("file"),
        lines,
        None if bug is None else bug.describe(),
    )


def kafka_uuid(value: object) -> str:
    """A topic id as Kafka prints it (URL-safe base64, no padding)."""
    import base64
    import uuid

    raw = uuid.UUID(str(value)).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def current_state(dirs: LogDirs) -> ClusterState:
    """What the cluster has now, by this project's views of the same files: its groups (not
    the deleted ones) and committed offsets, transactional ids, share-partition states."""
    state = ClusterState()
    if dirs.coordinator_segments(CONSUMER_OFFSETS):
        for view in group_views(dirs):
            for g in view.group_rows():
                if g.state == "Dead" or g.type is None:
                    continue
                state.groups[g.group] = Group(
                    g.group, view.partition, g.type, g.state, len(g.members)
                )
            for o in view.offset_rows():
                state.offsets[(o.group, o.topic, o.partition)] = o.offset
    if dirs.coordinator_segments(TRANSACTION_STATE):
        for t in transaction_report(dirs).transactional_ids:
            if t.deleted_at is not None or not t.changes:
                continue
            last = t.changes[-1]
            state.transactions[t.transactional_id] = Transaction(
                t.transactional_id,
                t.coordinator_partition,
                last.producer_id,
                last.producer_epoch,
                last.state,
            )
    if dirs.coordinator_segments(SHARE_GROUP_STATE):
        for s in share_states(dirs, named=False):  # by topic id: no names needed
            state.share_states.add((s.group, kafka_uuid(s.topic_id), s.partition))
    return state
