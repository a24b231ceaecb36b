"""A replay's answer: how each partition loaded in the release's own code, what the release ends
up with beside what the cluster has now, and whether the model's verdict agrees."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Final

from codegen.forensics.verdict import DowngradeReport
from codegen.naming import camel_keys

__all__ = [
    "Agreement",
    "ClusterState",
    "Group",
    "PartitionReplay",
    "ReplayReport",
    "Transaction",
    "agreements",
]

_TOPICS: Final = {
    "group": "__consumer_offsets",
    "transaction": "__transaction_state",
    "share": "__share_group_state",
}
_CHECKS: Final = {
    "__consumer_offsets": "group coordinator",
    "__transaction_state": "transaction coordinator",
    "__share_group_state": "share coordinator",
    "__cluster_metadata": "metadata records",
}


@dataclass(frozen=True, slots=True)
class PartitionReplay:
    """How one partition loaded in the release's code."""

    topic: str
    partition: int
    status: str
    """``loaded``; ``failed`` (the group coordinators, the share coordinator, the metadata
    log); ``partial`` (the transaction coordinator kept what it read before)."""
    offset: int | None = None
    """The record it failed on."""
    exception: str | None = None
    """Kafka's exception, as it logged it."""
    served: str | None = None
    """After a failure: ``empty`` (the old group coordinator serves it as empty), ``no``."""
    file: str | None = None
    """The metadata file of the record (``__cluster_metadata``)."""
    kafka_log: tuple[str, ...] = ()
    """Kafka's own WARN and ERROR lines while it loaded the partition."""
    known_bug: str | None = None
    """The known Kafka issue the failure is (:mod:`codegen.forensics.known_bugs`), described."""


@dataclass(frozen=True, slots=True)
class Group:
    group_id: str
    partition: int
    type: str
    state: str
    members: int = 0


@dataclass(frozen=True, slots=True)
class Transaction:
    transactional_id: str
    partition: int
    producer_id: int
    producer_epoch: int
    state: str


@dataclass(slots=True)
class ClusterState:
    """Groups, committed offsets, transactional ids and share-partition states."""

    groups: dict[str, Group] = field(default_factory=dict)
    offsets: dict[tuple[str, str, int], int] = field(default_factory=dict)
    transactions: dict[str, Transaction] = field(default_factory=dict)
    share_states: set[tuple[str, str, int]] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {
            "groups": [camel_keys(asdict(g)) for g in sorted(self.groups.values(), key=_by_id)],
            "offsets": [
                {"group": g, "topic": t, "partition": p, "offset": o}
                for (g, t, p), o in sorted(self.offsets.items())
            ],
            "transactions": [
                camel_keys(asdict(t)) for t in sorted(self.transactions.values(), key=_by_tid)
            ],
            "shareStates": [
                {"group": g, "topicId": t, "partition": p} for g, t, p in sorted(self.share_states)
            ],
        }


def _by_id(g: Group) -> str:
    return g.group_id


def _by_tid(t: Transaction) -> str:
    return t.transactional_id


@dataclass(frozen=True, slots=True)
class Agreement:
    """The model's answer and the replay's for one check."""

    check: str
    model: str
    replay: str
    agree: bool


@dataclass(slots=True)
class ReplayReport:
    target: str
    """The release asked for (``3.9``)."""
    release: str
    """The release whose jars ran (``3.9.0``)."""
    jars: str
    """Where the jars came from."""
    group_coordinator: str
    java: str = ""
    partitions: list[PartitionReplay] = field(default_factory=list)
    metadata: PartitionReplay | None = None
    metadata_version: str | None = None
    """The metadata.version of the image the release built."""
    metadata_errors: list[str] = field(default_factory=list)
    """Records the broker's MetadataDelta refused (a broker-only node counts the error and
    goes on; a controller dies)."""
    survives: ClusterState = field(default_factory=ClusterState)
    current: ClusterState = field(default_factory=ClusterState)
    harness_errors: list[str] = field(default_factory=list)
    jvm_startup_ms: int = 0
    replay_ms: int = 0
    wall_ms: int = 0
    records: int = 0
    agreements: list[Agreement] = field(default_factory=list)

    @property
    def failed(self) -> list[PartitionReplay]:
        """The partitions that did not load in full, metadata first."""
        out = [self.metadata] if self.metadata and self.metadata.status != "loaded" else []
        return out + [p for p in self.partitions if p.status != "loaded"]

    def lost(self) -> list[str]:
        """What the cluster has that the release does not end up with."""
        out: list[str] = []
        for gid, g in sorted(self.current.groups.items()):
            kept = self.survives.groups.get(gid)
            if kept is None:
                out.append(f"{g.type} group {gid!r} ({g.state}, {g.members} member(s))")
            elif kept.type != g.type:
                out.append(f"{g.type} group {gid!r} comes back as a {kept.type} group")
        missing = [k for k in self.current.offsets if k not in self.survives.offsets]
        if missing:
            groups = sorted({g for g, _, _ in missing})
            out.append(
                f"{len(missing)} committed offset(s) of {len(groups)} group(s): "
                + ", ".join(repr(g) for g in groups[:10])
                + (" ..." if len(groups) > 10 else "")
            )
        for tid, t in sorted(self.current.transactions.items()):
            kept_t = self.survives.transactions.get(tid)
            if kept_t is None:
                out.append(f"transactional id {tid!r} ({t.state})")
            elif (kept_t.producer_epoch, kept_t.state) != (t.producer_epoch, t.state):
                out.append(
                    f"transactional id {tid!r} comes back as {kept_t.state} at epoch "
                    f"{kept_t.producer_epoch} (the cluster has {t.state} at {t.producer_epoch})"
                )
        gone = self.current.share_states - self.survives.share_states
        if gone:
            out.append(f"{len(gone)} share-partition state(s)")
        return out

    @property
    def loads(self) -> bool:
        """The release starts and loads everything, and nothing is lost."""
        return not self.failed and not self.harness_errors and not self.lost()

    @property
    def verdict(self) -> str:
        if self.harness_errors:
            return "NOT REPLAYED"
        return "LOADS" if self.loads else "LOSES DATA OR FAILS"

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "release": self.release,
            "jars": self.jars,
            "java": self.java,
            "groupCoordinator": self.group_coordinator,
            "verdict": self.verdict,
            "metadata": None if self.metadata is None else camel_keys(asdict(self.metadata)),
            "metadataVersion": self.metadata_version,
            "metadataErrors": self.metadata_errors,
            "partitions": [camel_keys(asdict(p)) for p in self.partitions],
            "survives": self.survives.to_json(),
            "current": self.current.to_json(),
            "lost": self.lost(),
            "agreements": [asdict(a) for a in self.agreements],
            "harnessErrors": self.harness_errors,
            "timing": {
                "jvmStartupMs": self.jvm_startup_ms,
                "replayMs": self.replay_ms,
                "wallMs": self.wall_ms,
                "records": self.records,
            },
        }


def _failures_text(found: dict[tuple[str, int], int | None]) -> str:
    if not found:
        return "loads"
    return "fails at " + ", ".join(
        f"{t}-{p}" + ("" if o is None else f"@{o}") for (t, p), o in sorted(found.items())
    )


def agreements(model: DowngradeReport, replay: ReplayReport) -> list[Agreement]:
    """Per check, the model's answer and the replay's, and whether they agree: the partitions
    that fail to load (and at which record), the groups the release would lose, the metadata
    record the node dies on."""
    out: list[Agreement] = []
    statuses = {c.name: c.status for c in model.checks}
    for topic, check in _CHECKS.items():
        if topic == "__cluster_metadata":
            continue
        model_fail: dict[tuple[str, int], int | None] = {}
        for b in model.blockers:
            if b.topic == topic and b.fails_load:
                key = (topic, b.partition)
                if key not in model_fail or b.offset < (model_fail[key] or 0):
                    model_fail[key] = b.offset
        replay_fail = {
            (p.topic, p.partition): p.offset
            for p in replay.partitions
            if p.topic == topic and p.status != "loaded"
        }
        if check not in statuses or (statuses[check] == "not checked" and not replay_fail):
            continue
        out.append(
            Agreement(
                f"{check}: loading",
                _failures_text(model_fail),
                _failures_text(replay_fail),
                model_fail == replay_fail,
            )
        )
    if replay.current.groups:
        # A group of a partition that fails to load is lost with it (the loading check).
        failed_partitions = {
            p.partition
            for p in replay.partitions
            if p.topic == _TOPICS["group"] and p.status != "loaded"
        }
        lost_model = sorted(
            {
                b.group or ""
                for b in model.blockers
                if b.rule in ("group-conversion", "share-group")
                and b.group in replay.current.groups
                and replay.current.groups[b.group].partition not in failed_partitions
            }
        )
        lost_replay = sorted(
            g
            for g, state in replay.current.groups.items()
            if state.partition not in failed_partitions
            and (g not in replay.survives.groups or replay.survives.groups[g].type != state.type)
        )
        out.append(
            Agreement(
                "group coordinator: groups lost",
                ", ".join(lost_model) or "none",
                ", ".join(lost_replay) or "none",
                lost_model == lost_replay,
            )
        )
    if replay.metadata is not None:
        model_first = next(
            (c.findings[0] for c in model.checks if c.name == "metadata records" and c.findings),
            None,
        )
        replay_first = (
            None
            if replay.metadata.status == "loaded"
            else f"{replay.metadata.file}@{replay.metadata.offset}"
        )
        # "__cluster_metadata-0 <file>@<offset>: ..." and "<path>/<file>@<offset>"
        model_at = None if model_first is None else model_first.split(":", 1)[0].split(" ")[-1]
        replay_at = None if replay_first is None else replay_first.rsplit("/", 1)[-1]
        out.append(
            Agreement(
                "metadata records",
                "loads" if model_at is None else f"dies at {model_at}",
                "loads" if replay_at is None else f"dies at {replay_at}",
                model_at == replay_at,
            )
        )
    return out
