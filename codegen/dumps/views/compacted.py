"""The latest state a ``__consumer_offsets`` dump implies, with log-compaction semantics.

The last value per key wins, a tombstone deletes its key, and records of transactional batches
(transactional offset commits) count only once their producer's COMMIT marker is read; an ABORT
marker drops them. Two views come out: the committed offset per (group, topic, partition) and
per group its type (classic, consumer, share, streams), state, protocol, generation or epoch and
members.

Group states are derived from what the log holds: a classic group with no members, or with
only committed offsets and no group record, is ``Empty``,
otherwise ``Stable``; a consumer, share or streams group is ``Empty`` without members,
``Reconciling`` while a member's epoch is behind the group epoch, otherwise ``Stable``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from codegen.dumps.decoded import (
    KIND_CONTROL,
    RECORD,
    TOMBSTONE,
    DecodedBatch,
    DecodedRecord,
    EndTxnMarker,
)
from codegen.dumps.model import SegmentError
from codegen.dumps.views.commit_rows import OFFSET_SCHEMA
from codegen.dumps.views.committed import CommittedOffsets
from codegen.slotted import Slotted, field

__all__ = ["CommittedOffset", "CompactedView", "GroupMember", "GroupState", "compact"]

_GROUP_KINDS = {
    "ConsumerGroup": "consumer",
    "ShareGroup": "share",
    "StreamsGroup": "streams",
}


class CommittedOffset(Slotted):
    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int
    record_offset: int
    """Offset of the log record the commit came from."""

    @classmethod
    def from_table(cls, table: Any) -> list[CommittedOffset]:
        """The rows of a table of the columnar view
        (``codegen.dumps.views.commit_rows.OFFSET_SCHEMA``, whose columns are this class's
        fields in order)."""
        return list(map(cls, *(table.column(name).to_pylist() for name in OFFSET_SCHEMA.names)))


class GroupMember(Slotted):
    member_id: str
    client_id: str = ""
    client_host: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    assignors: list[str] = field(default_factory=list)
    subscribed_topics: list[str] = field(default_factory=list)
    assignment: dict[str, list[int]] = field(default_factory=dict)
    """Topic (name for classic groups, topic id for the others) -> partitions; for streams
    groups subtopology -> active task partitions."""
    member_epoch: int | None = None


class GroupState(Slotted):
    group: str
    type: str
    """``classic``, ``consumer``, ``share`` or ``streams``."""
    state: str = "Empty"
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    generation: int | None = None
    """Generation of a classic group."""
    epoch: int | None = None
    """Group epoch of a consumer, share or streams group."""
    members: dict[str, GroupMember] = field(default_factory=dict)
    record_offset: int = -1


def _kind_of(name: str) -> tuple[str, str] | None:
    """('consumer'|'share'|'streams', rest of the record name) for group sub-records."""
    try:
        return _KINDS[name]
    except KeyError:
        pass
    found = None
    for prefix, kind in _GROUP_KINDS.items():
        if name.startswith(prefix):
            found = kind, name[len(prefix) :]
            break
    _KINDS[name] = found
    return found


_KINDS: dict[str, tuple[str, str] | None] = {}
""":func:`_kind_of` of the record names met (a few dozen)."""


def _topic_partitions(items: Iterable[Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in items:
        topic = getattr(tp, "topic_id", None)
        key = str(topic) if topic is not None else str(getattr(tp, "topic", ""))
        out[key] = list(getattr(tp, "partitions", ()))
    return out


class CompactedView:
    """Feed records or batches in log order; read :attr:`offsets` and :attr:`groups`."""

    def __init__(self) -> None:
        self._offsets: dict[tuple[str, str, int], CommittedOffset] | None = {}
        self._offset_table: Any = None
        """The columnar view's committed offsets (:meth:`take_offsets`), until read as
        :attr:`offsets`."""
        self.groups: dict[str, GroupState] = {}
        self.pending: dict[int, list[DecodedRecord]] = {}
        """Records of open transactions, by producer id."""
        self.records = 0
        self.errors = 0
        self.unknown = 0

    @property
    def offsets(self) -> dict[tuple[str, str, int], CommittedOffset]:
        """The committed offsets by (group, topic, partition)."""
        if self._offsets is None:
            self._offsets = {
                (o.group, o.topic, o.partition): o
                for o in CommittedOffset.from_table(self._offset_table)
            }
            self._offset_table = None
        return self._offsets

    def offset_counts(self) -> dict[str, int]:
        """The committed offsets per group (counted on the columnar view's table, when the
        offsets came from it and were not read as :attr:`offsets`)."""
        if self._offsets is None:
            import pyarrow.compute as pc

            counts = pc.value_counts(self._offset_table.column("group"))
            return dict(
                zip(
                    counts.field("values").to_pylist(),
                    counts.field("counts").to_pylist(),
                    strict=True,
                )
            )
        out: dict[str, int] = {}
        for group, _, _ in self._offsets:
            out[group] = out.get(group, 0) + 1
        return out

    # -- feeding -------------------------------------------------------------------------

    def add_batches(self, items: Iterable[DecodedBatch | SegmentError]) -> CompactedView:
        for item in items:
            if isinstance(item, SegmentError):
                continue
            self.add_batch(item)
        return self

    def add_batch(self, item: DecodedBatch) -> None:
        batch = item.batch
        self.add_records(item.records, batch.producer_id, batch.is_transactional, batch.is_control)

    def add_records(
        self, records: list[DecodedRecord], producer_id: int, transactional: bool, control: bool
    ) -> None:
        """The records of one log batch, with its producer id and flags."""
        if control:
            for rec in records:
                if rec.kind == KIND_CONTROL and isinstance(rec.value, EndTxnMarker):
                    self.end_transaction(producer_id, rec.value.committed)
            return
        if transactional:
            self.pending.setdefault(producer_id, []).extend(records)
            return
        for rec in records:
            self.add(rec)

    def take_offsets(self, offsets: CommittedOffsets) -> None:
        """The committed offsets from the columnar view (:mod:`codegen.dumps.views.committed`),
        for a view fed every record but the offset commits."""
        self._offset_table = offsets.table()
        self._offsets = None  # made when read: a group report counts them only

    def end_transaction(self, producer_id: int, committed: bool) -> None:
        records = self.pending.pop(producer_id, [])
        if committed:
            for rec in records:
                self.add(rec)

    def add(self, rec: DecodedRecord) -> None:
        """Apply one (committed) record."""
        kind = rec.kind
        if kind != RECORD and kind != TOMBSTONE:
            self.records += 1
            if kind == "unknown":
                self.unknown += 1
            elif kind == "error":
                self.errors += 1
            return
        try:
            apply = _APPLY[rec.name]
        except KeyError:
            apply = applier(rec.name)
        self.add_known(rec, apply)

    def add_known(self, rec: DecodedRecord, apply: Apply | None) -> None:
        """Apply one (committed) record or tombstone whose name the caller looked up:
        ``apply`` is :func:`applier` of it (None: the view keeps nothing of it)."""
        self.records += 1
        if apply is not None:
            apply[0](self, rec, apply[1])

    def _offset_commit(self, rec: DecodedRecord, _: str) -> None:
        key: Any = rec.key
        value: Any = rec.value
        k = (key.group, key.topic, key.partition)
        if value is None:
            self.offsets.pop(k, None)
        else:
            self.offsets[k] = CommittedOffset(
                key.group,
                key.topic,
                key.partition,
                value.offset,
                getattr(value, "leader_epoch", -1),
                value.metadata,
                value.commit_timestamp,
                getattr(value, "expire_timestamp", -1),
                rec.offset,
            )

    def _group_metadata(self, rec: DecodedRecord, group_type: str) -> None:
        """A consumer, share or streams group's metadata record."""
        key: Any = rec.key
        group_id = key.group_id
        value: Any = rec.value
        if value is None:
            self.groups.pop(group_id, None)
            return
        g = self._group(group_id, group_type)
        g.epoch = value.epoch
        g.record_offset = rec.offset
        g.state = self._derived_state(g)

    def _member_metadata(self, rec: DecodedRecord, group_type: str) -> None:
        key: Any = rec.key
        value: Any = rec.value
        g = self._group(key.group_id, group_type)
        if value is None:
            g.members.pop(key.member_id, None)
        else:
            m = self._member(g, key.member_id)
            m.client_id = value.client_id
            m.client_host = value.client_host
            m.instance_id = getattr(value, "instance_id", None)
            m.rack_id = value.rack_id
            m.subscribed_topics = list(getattr(value, "subscribed_topic_names", ()) or ())
            assignor = getattr(value, "server_assignor", None)
            m.assignors = [assignor] if assignor else []
        g.state = self._derived_state(g)

    def _member_assignment(self, rec: DecodedRecord, group_type: str) -> None:
        key: Any = rec.key
        value: Any = rec.value
        g = self._group(key.group_id, group_type)
        if value is None:
            member = g.members.get(key.member_id)
            if member is not None:
                member.assignment = {}
                member.member_epoch = None
        else:
            m = self._member(g, key.member_id)
            m.member_epoch = value.member_epoch
            if group_type == "streams":
                m.assignment = {t.subtopology_id: list(t.partitions) for t in value.active_tasks}
            else:
                m.assignment = _topic_partitions(value.assigned_partitions)
        g.state = self._derived_state(g)

    def _group(self, group_id: str, group_type: str) -> GroupState:
        g = self.groups.get(group_id)
        if g is None or g.type != group_type:
            g = GroupState(group_id, group_type)
            self.groups[group_id] = g
        return g

    @staticmethod
    def _member(g: GroupState, member_id: str) -> GroupMember:
        """The group's member, added when new (made only then: a member costs three fields'
        default factories)."""
        m = g.members.get(member_id)
        if m is None:
            m = g.members[member_id] = GroupMember(member_id)
        return m

    @staticmethod
    def _derived_state(g: GroupState) -> str:
        if not g.members:
            return "Empty"
        epoch = g.epoch
        if epoch is not None:
            for m in g.members.values():
                if m.member_epoch is not None and m.member_epoch < epoch:
                    return "Reconciling"
        return "Stable"

    def _classic(self, rec: DecodedRecord, _: str) -> None:
        """A classic group's metadata record: the group and its members as it lists them."""
        key: Any = rec.key
        group = key.group
        value: Any = rec.value
        if value is None:
            self.groups.pop(group, None)
            return
        g = GroupState(
            group,
            "classic",
            "Empty" if not value.members else "Stable",
            value.protocol_type,
            value.protocol,
            value.leader,
            value.generation,
            None,
            {},
            rec.offset,
        )
        protocol = value.protocol
        members = g.members
        decoded = rec.members  # None, or the members' payloads in the same order
        for i, m in enumerate(value.members):
            rack_id = None
            topics: list[str] = []
            assignment: dict[str, list[int]] = {}
            if decoded is not None:
                payloads = decoded[i]
                subscription = payloads.subscription.message
                if subscription is not None:
                    rack_id = subscription.rack_id
                    topics = list(subscription.topics)
                assigned = payloads.assignment.message
                if assigned is not None:
                    assignment = {
                        tp.topic: list(tp.partitions) for tp in assigned.assigned_partitions
                    }
            members[m.member_id] = GroupMember(
                m.member_id,
                m.client_id,
                m.client_host,
                m.group_instance_id,
                rack_id,
                [protocol] if protocol else [],
                topics,
                assignment,
            )
        self.groups[group] = g

    # -- reading -------------------------------------------------------------------------

    def offset_rows(self) -> list[CommittedOffset]:
        return [self.offsets[k] for k in sorted(self.offsets)]

    def group_rows(self, offset_groups: Iterable[str] | None = None) -> list[GroupState]:
        """Every group, by name; a group that only committed offsets (a consumer that assigns
        its partitions itself) is a classic group in state ``Empty``, as the broker lists it.
        ``offset_groups``: the groups with committed offsets, when they were not fed here."""
        groups = dict(self.groups)
        if offset_groups is None:
            offset_groups = (group for group, _, _ in self.offsets)
        for group in offset_groups:
            if group not in groups:
                groups[group] = GroupState(group, "classic")
        return [groups[k] for k in sorted(groups)]


Apply = tuple[Callable[[CompactedView, DecodedRecord, str], None], str]
"""How the view applies a record of one name: the method and the group type it passes."""

_PARTS: dict[str, Callable[[CompactedView, DecodedRecord, str], None]] = {
    "Metadata": CompactedView._group_metadata,
    "MemberMetadata": CompactedView._member_metadata,
    "CurrentMemberAssignment": CompactedView._member_assignment,
}
"""What a consumer, share or streams group's record of each kind (its name after the group
type) changes; the other kinds (target assignments, topologies) change nothing here."""


def _apply_of(name: str) -> Apply | None:
    """What :meth:`CompactedView.add` does with a record named ``name`` (and the group type it
    passes), or None where the view keeps nothing of it."""
    if name in ("OffsetCommit", "LegacyOffsetCommit"):
        return CompactedView._offset_commit, ""
    if name == "GroupMetadata":
        return CompactedView._classic, "classic"
    kind = _kind_of(name)
    if kind is None or kind[1] not in _PARTS:
        return None
    return _PARTS[kind[1]], kind[0]


_APPLY: dict[str, Apply | None] = {}
""":func:`_apply_of` of the record names met (a few dozen)."""


def applier(name: str) -> Apply | None:
    """:func:`_apply_of` ``name``, found once per name."""
    if name not in _APPLY:
        _APPLY[name] = _apply_of(name)
    return _APPLY[name]


def compact(items: Iterable[DecodedBatch | SegmentError]) -> CompactedView:
    """The compacted view of decoded ``__consumer_offsets`` batches, in log order."""
    return CompactedView().add_batches(items)
