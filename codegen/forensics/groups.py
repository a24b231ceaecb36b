"""Groups over time: each group's state at a point in the log, and its timeline.

The log is replayed in order through the compacted view of :mod:`codegen.dumps.views.compacted`
(last value per key, tombstones remove, transactional records once committed), and every
record that changes a group is turned into timeline events by comparing the group before and
after it:

``created`` / ``group-deleted``
    the group's first record; a tombstone of its group-level record (``GroupMetadata`` for
    classic groups, ``<Type>GroupMetadata`` for the others).
``rebalance``
    a classic group's generation, or a consumer/share/streams group's epoch, changed.
``member-joined`` / ``member-left``
    the member set changed.
``protocol-conversion``
    the group id came back as another type (classic <-> consumer): Kafka deletes the old
    group's records and writes the new type's when it converts a group (KIP-848).
``assignor-changed``
    a classic group's chosen protocol (its assignor) changed.
``offset-deleted``
    a committed offset was tombstoned (expired, deleted by an admin, or the group deleted).
``member-epoch``
    a consumer-protocol member's current assignment record: member epoch, previous epoch and,
    per partition, the assignment epochs newer versions record (KAFKA-19779; null when absent).

Kafka writes no record for a classic group's join or sync phases, only the result of each
rebalance, so states are the ones :mod:`codegen.dumps.views.compacted` derives (``Empty``,
``Stable``, ``Reconciling``).

Assignor inventory (KIP-726): ``__consumer_offsets`` keeps, for each member of a classic group,
the subscription of the *chosen* protocol only, not the list of assignors the member
advertised. What the log does tell: the assignor chosen per generation, and each member's
consumer-protocol subscription version (version 0 means a client older than 2.4, which has no
cooperative rebalancing, KIP-429). The cooperative switch verdict follows from those, for a
classic group of consumers, judged on its current assignor (an empty group's last one):
``done`` (it runs ``cooperative-sticky``), ``not-possible`` (a member cannot run it),
otherwise ``two-step``: the KIP-429 rolling upgrade, first adding ``cooperative-sticky`` to
every member's list after the current assignor, then removing the old one, is needed unless
every member already lists it, which the log cannot show. No verdict (None) where no switch
applies: Kafka Streams applications (assignor ``stream``), other protocol types (Connect),
groups that never chose an assignor, and consumer, share and streams groups, which the
coordinator assigns.

The protocol type is the one Kafka's ``listGroups`` gives: a classic group's own (``consumer``,
``connect``...; None for a group of committed offsets only), else the group's type
(``consumer``, ``share``, ``streams``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from codegen.dumps.batches import DEFAULT_MAX_BATCH_RECORDS
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from codegen.dumps.coordinator import CONSUMER_OFFSETS, CoordinatorDecoder, coordinator_decoder
from codegen.dumps.decoded import RECORD, TOMBSTONE, DecodedBatch, DecodedRecord
from codegen.dumps.model import ReadError, RecordError, SegmentError
from codegen.dumps.storage import RemotePath, StoragePath
from codegen.dumps.views.committed import CommittedOffsets
from codegen.dumps.views.compacted import Apply as _Apply
from codegen.dumps.views.compacted import CompactedView, GroupState, applier
from codegen.dumps.views.consumer_offsets import FileChunk, read_compacted
from codegen.dumps.views.cut import AsOf
from codegen.forensics.coordinator_logs import DumpInputError, dump_partitions, is_paths
from codegen.forensics.group_timelines import OFFSET_DELETED, GroupEvent, Timelines
from codegen.forensics.inputs import LogDirs, as_log_dirs, resolve_cut
from codegen.forensics.shares import SharePartitionState, share_states
from codegen.gc_pause import gc_paused
from codegen.slotted import Slotted, field

__all__ = [
    "AsOf",
    "AssignorInventory",
    "GroupEvent",
    "GroupReport",
    "GroupsView",
    "assignor_inventory",
    "group_reports",
    "group_views",
]

COOPERATIVE: Final = "cooperative-sticky"


_Fields = tuple[str, int | None, int | None, str | None]
"""A group's type, generation, epoch and protocol, as one record found them."""

_OFFSET_COMMITS: Final = ("OffsetCommit", "LegacyOffsetCommit")


def _fields(g: GroupState) -> _Fields:
    return g.type, g.generation, g.epoch, g.protocol


class GroupsView(CompactedView):
    """The compacted view of one partition, also recording each group's timeline."""

    def __init__(self, partition: int, as_of: AsOf | None = None) -> None:
        super().__init__()
        self.partition = partition
        self.as_of = as_of
        self.timelines = Timelines(partition)
        self._rows = self.timelines.rows
        """The events of the records, as they take effect (rows of :class:`Timelines`)."""
        self.last_type: dict[str, str] = {}
        self.last_protocol: dict[str, str] = {}
        self.subscription_versions: dict[str, dict[str, int]] = {}
        """Classic group -> member -> consumer-protocol subscription version (latest)."""
        self.chosen_assignors: dict[str, list[str]] = {}
        """Classic group -> assignors chosen, in order of first use."""

    def add_batch(self, item: DecodedBatch) -> None:
        batch = item.batch
        if self.as_of is not None and self.as_of.excludes(batch.base_offset, batch.max_timestamp):
            return
        super().add_batch(item)

    @property
    def events(self) -> list[GroupEvent]:
        """Every event of the partition's groups (:meth:`Timelines.events`)."""
        return self.timelines.events()

    def take_offsets(self, offsets: CommittedOffsets) -> None:
        """The committed offsets and their deletions from the columnar view, for a view fed
        every record but the offset commits (:func:`codegen.dumps.views.consumer_offsets
        .read_compacted`)."""
        super().take_offsets(offsets)
        self.timelines.add_deleted(offsets.deleted())

    def _event(self, rec: DecodedRecord, group: str, kind: str, detail: dict[str, Any]) -> None:
        self._rows.append((rec.offset, rec.timestamp, group, kind, detail))

    def add(self, rec: DecodedRecord) -> None:
        key: Any = rec.key
        kind = rec.kind
        if key is None or (kind != RECORD and kind != TOMBSTONE):
            CompactedView.add(self, rec)
            return
        name = rec.name
        try:
            role, then, apply = _ROLES[name]
        except KeyError:
            role, then, apply = _ROLES[name] = _role_of(name)
        if role is _OFFSETS:  # the pure backend's (the engine's stay columns)
            group = str(key.group)
            existed = (key.group, key.topic, key.partition) in self.offsets
            self.add_known(rec, apply)
            if rec.value is None and existed:
                self._event(
                    rec, group, OFFSET_DELETED, {"topic": key.topic, "partition": key.partition}
                )
            return
        member: str | None = None
        if role is _CLASSIC:
            group = str(key.group)
        else:
            gid = getattr(key, "group_id", None)
            if gid is None:
                self.add_known(rec, apply)
                return
            group = str(gid)
            member = getattr(key, "member_id", None)
        groups = self.groups
        g = groups.get(group)
        if g is None:
            self.add_known(rec, apply)
            after = groups.get(group)
            if after is not None:
                self._diff(rec, group, None, after, sorted(after.members), [])
        elif member is None:
            self._changed(rec, group, g, apply)
        else:
            self._member_changed(rec, group, g, member, apply)
        if then is not None and rec.value is not None:
            then(self, rec, group)

    def _member_changed(
        self, rec: DecodedRecord, group: str, g: GroupState, member: str, apply: _Apply | None
    ) -> None:
        """Apply ``rec``, a record of ``member`` that finds ``group`` as ``g``, and record what
        it changed: the member joined or left, or the group was made anew (another type)."""
        had = member in g.members
        self.add_known(rec, apply)
        after = self.groups.get(group)
        if after is g:  # a member record changes the members alone (no field of the group)
            if (member in g.members) != had:
                joined, left = ([], [member]) if had else ([member], [])
                self._diff(rec, group, _fields(g), g, joined, left)
        else:
            self._replaced(rec, group, g, _fields(g), after)

    def _changed(self, rec: DecodedRecord, group: str, g: GroupState, apply: _Apply | None) -> None:
        """Apply ``rec``, a group-level record that finds ``group`` as ``g``, and record what
        it changed."""
        before = _fields(g)
        self.add_known(rec, apply)
        after = self.groups.get(group)
        if after is g:
            if before != _fields(g):
                self._diff(rec, group, before, g, [], [])
        else:
            self._replaced(rec, group, g, before, after)

    def _replaced(
        self,
        rec: DecodedRecord,
        group: str,
        g: GroupState,
        before: _Fields,
        after: GroupState | None,
    ) -> None:
        """The events of a record that deleted ``g`` (``after`` None) or made ``group`` anew
        as ``after``, compared member by member where it kept the type."""
        if after is None:
            self._event(rec, group, "group-deleted", {"type": g.type})
        elif before[0] != after.type:
            self._diff(rec, group, None, after, sorted(after.members), [], before[0])
        else:
            old, new = g.members.keys(), after.members.keys()
            joined = left = []
            if old != new:  # most records keep the members: no set arithmetic
                joined = sorted(new - old)
                left = sorted(old - new)
            if joined or left or before != _fields(after):
                self._diff(rec, group, before, after, joined, left)

    def _diff(
        self,
        rec: DecodedRecord,
        group: str,
        before: _Fields | None,
        after: GroupState,
        joined: list[str],
        left: list[str],
        replaced: str | None = None,
    ) -> None:
        """The events of a record that changed the group: ``before`` its fields as the record
        found it, None where the record made the group, or made it anew as another type than
        ``replaced`` (the type it had)."""
        if before is None:
            previous = self.last_type.get(group) if replaced is None else replaced
            self._event(rec, group, "created", {"type": after.type})
            if previous is not None and previous != after.type:
                self._event(rec, group, "protocol-conversion", {"from": previous, "to": after.type})
            self.last_type[group] = after.type
        elif after.type == "classic":
            if before[1] != after.generation:
                self._event(
                    rec,
                    group,
                    "rebalance",
                    {"generation": after.generation, "previous": before[1]},
                )
        elif before[2] != after.epoch:
            self._event(rec, group, "rebalance", {"epoch": after.epoch, "previous": before[2]})
        for m in joined:
            self._event(rec, group, "member-joined", {"member": m})
        for m in left:
            self._event(rec, group, "member-left", {"member": m})
        # An empty classic group has no protocol: compare with the last one it had.
        if after.protocol:
            last = self.last_protocol.get(group)
            if last is not None and last != after.protocol:
                self._event(
                    rec,
                    group,
                    "assignor-changed",
                    {"previous": last, "protocol": after.protocol},
                )
            self.last_protocol[group] = after.protocol

    def _classic_inventory(self, rec: DecodedRecord, group: str) -> None:
        value: Any = rec.value
        if value.protocol_type != "consumer":
            return
        if value.protocol:
            chosen = self.chosen_assignors.setdefault(group, [])
            if value.protocol not in chosen:
                chosen.append(value.protocol)
        versions = self.subscription_versions.setdefault(group, {})
        versions.clear()
        for m in rec.members or ():
            versions[m.member_id] = m.subscription.version

    def _member_epoch(self, rec: DecodedRecord, group: str) -> None:
        key: Any = rec.key
        value: Any = rec.value
        partitions = {
            str(tp.topic_id): {
                "partitions": list(tp.partitions),
                "assignmentEpochs": (
                    list(tp.assignment_epochs)
                    if getattr(tp, "assignment_epochs", None) is not None
                    else None
                ),
            }
            for tp in getattr(value, "assigned_partitions", ())
        }
        self._event(
            rec,
            group,
            "member-epoch",
            {
                "member": key.member_id,
                "memberEpoch": value.member_epoch,
                "previousMemberEpoch": getattr(value, "previous_member_epoch", None),
                "assigned": partitions,
            },
        )


_OFFSETS: Final = "offsets"
_CLASSIC: Final = "classic"
_KEYED: Final = "keyed"
_Role = tuple[str, Callable[[GroupsView, DecodedRecord, str], None] | None, _Apply | None]


def _role_of(name: str) -> _Role:
    """How :meth:`GroupsView.add` reads a record named ``name``: an offset commit's key, a
    classic group's, or a key with ``group_id`` (and ``member_id``); what it reads of the
    record's value after applying it; and how the compacted view applies it."""
    apply = applier(name)
    if name in _OFFSET_COMMITS:
        return _OFFSETS, None, apply
    if name == "GroupMetadata":
        return _CLASSIC, GroupsView._classic_inventory, apply
    if name.endswith("CurrentMemberAssignment"):
        return _KEYED, GroupsView._member_epoch, apply
    return _KEYED, None, apply


_ROLES: dict[str, _Role] = {}
""":func:`_role_of` of the record names met."""


@dataclass(slots=True)
class AssignorInventory:
    """KIP-726 inventory of a group."""

    chosen: str | None
    """Classic: the assignor of the current generation; others: the members' server assignor."""
    chosen_over_time: list[str]
    advertised: dict[str, list[str] | None]
    """Member -> assignors it advertised; None where the log does not hold them (classic)."""
    common: list[str] | None
    subscription_versions: dict[str, int]
    cooperative_switch: str | None
    """``done``, ``two-step`` or ``not-possible`` (classic groups of consumers); None where no
    switch applies (consumer, share and streams groups, Kafka Streams and Connect groups,
    groups that never chose an assignor)."""
    why: str

    def to_json(self) -> dict[str, Any]:
        """The inventory under its JSON names, as ``camel_keys(asdict(self))`` has it (a
        report's thousand groups each print one: ``asdict`` walks every value)."""
        return {
            "chosen": self.chosen,
            "chosenOverTime": list(self.chosen_over_time),
            "advertised": {m: None if a is None else list(a) for m, a in self.advertised.items()},
            "common": None if self.common is None else list(self.common),
            "subscriptionVersions": dict(self.subscription_versions),
            "cooperativeSwitch": self.cooperative_switch,
            "why": self.why,
        }


STREAMS_ASSIGNOR: Final = "stream"
"""The assignor name of Kafka Streams applications in classic groups."""


def server_assignor_why(group_type: str) -> str:
    return f"{group_type} groups are assigned by the coordinator's server assignor"


def assignor_inventory(view: GroupsView, g: GroupState) -> AssignorInventory:
    if g.type != "classic":
        server = sorted({a for m in g.members.values() for a in m.assignors})
        return AssignorInventory(
            server[0] if len(server) == 1 else None,
            server,
            {m.member_id: list(m.assignors) for m in g.members.values()},
            server or None,
            {},
            None,
            server_assignor_why(g.type),
        )
    versions = dict(view.subscription_versions.get(g.group, {}))
    chosen_over_time = list(view.chosen_assignors.get(g.group, []))
    # An empty group has no protocol: judge the one it ran last.
    current = g.protocol or view.last_protocol.get(g.group)
    verdict: str | None
    if g.protocol_type not in (None, "consumer"):
        verdict = None
        why = f"protocol type {g.protocol_type!r}: not consumers, no consumer assignor to switch"
    elif current == STREAMS_ASSIGNOR or STREAMS_ASSIGNOR in chosen_over_time:
        verdict = None
        why = (
            "a Kafka Streams application (assignor 'stream'): it rebalances cooperatively from "
            "2.4 on (KIP-429), there is no cooperative-sticky switch to make"
        )
    elif not current:
        verdict = None
        why = "no assignor was ever chosen in the log (only offsets committed): nothing to switch"
    elif current == COOPERATIVE:
        verdict, why = "done", "the group already runs cooperative-sticky"
    elif old := sorted(m for m, v in versions.items() if v < 1):
        verdict = "not-possible"
        why = (
            f"member(s) {', '.join(old)} send consumer-protocol subscription v0, without owned "
            "partitions (Java clients before 2.4 or other clients without KIP-429): they cannot "
            "rebalance cooperatively; upgrade those clients first"
        )
    else:
        verdict = "two-step"
        why = (
            "the log holds only the chosen assignor's subscription, not each member's list: "
            f"roll out [{COOPERATIVE}, {current}] to every member, then "
            f"[{COOPERATIVE}] alone (KIP-429)"
        )
    return AssignorInventory(
        g.protocol,
        chosen_over_time,
        {m: None for m in g.members},
        None,
        versions,
        verdict,
        why,
    )


class GroupReport(Slotted):
    """One group at the as-of point, with its timeline up to there."""

    group: str
    partition: int
    type: str | None
    """None when the group was deleted (its events remain)."""
    state: str
    protocol_type: str | None
    protocol: str | None
    generation: int | None
    epoch: int | None
    members: list[dict[str, Any]]
    inventory: AssignorInventory | None
    committed_offsets: int
    timelines: Timelines | None = None
    """The timelines of the group's partition, the group's among them (:attr:`events`)."""
    share_partitions: list[SharePartitionState] = field(default_factory=list)
    """A share group's partitions from ``__share_group_state`` (start offset, epochs,
    in-flight batches), when the input holds it."""

    @property
    def events(self) -> list[GroupEvent]:
        """The group's timeline: its events, by offset."""
        return [] if self.timelines is None else self.timelines.of(self.group)

    def to_json(self) -> dict[str, Any]:
        return self.json_with([e.to_json() for e in self.events])

    def json_with(self, timeline: Any) -> dict[str, Any]:
        """The report's JSON object, ``timeline`` its timeline (:meth:`to_json`: the events'
        JSON objects)."""
        doc = {
            "group": self.group,
            "partition": self.partition,
            "type": self.type,
            "state": self.state,
            "protocolType": self.protocol_type,
            "protocol": self.protocol,
            "generation": self.generation,
            "epoch": self.epoch,
            "members": self.members,
            "committedOffsets": self.committed_offsets,
            "assignors": None if self.inventory is None else self.inventory.to_json(),
            "timeline": timeline,
        }
        if self.type == "share" or self.share_partitions:
            doc["sharePartitions"] = [s.to_json() for s in self.share_partitions]
        return doc


def _member_json(m: Any, group_type: str) -> dict[str, Any]:
    # A classic member's advertised assignors are not in the log (see the module doc).
    return {
        "memberId": m.member_id,
        "clientId": m.client_id,
        "clientHost": m.client_host,
        "instanceId": m.instance_id,
        "assignors": None if group_type == "classic" else list(m.assignors),
        "subscribedTopics": list(m.subscribed_topics),
        "assignment": {k: list(v) for k, v in m.assignment.items()},
        "memberEpoch": m.member_epoch,
    }


def group_views(
    path: StoragePath | Sequence[StoragePath | str] | LogDirs,
    as_of: AsOf | None = None,
    errors: list[ReadError] | None = None,
) -> list[GroupsView]:
    """Replay each ``__consumer_offsets`` partition under ``path`` (broker log dirs, partition
    folders, segment files, globs: :mod:`codegen.forensics.inputs`) up to ``as_of``.
    ``errors`` receives what could not be read, which the views go without: segment errors
    and records that do not decode (:class:`~codegen.dumps.model.RecordError`), in file
    order, as ``dump --compacted`` reports them."""
    views: list[GroupsView] = []
    decoder = coordinator_decoder(CONSUMER_OFFSETS)
    with gc_paused():  # the views' records, states and events: many objects, no cycles
        for partition, files in dump_partitions(path):
            views.append(_group_view(partition, files, decoder, as_of, errors))
    return views


def _group_view(
    partition: int,
    files: list[StoragePath],
    decoder: CoordinatorDecoder,
    as_of: AsOf | None,
    errors: list[ReadError] | None,
) -> GroupsView:
    view = GroupsView(partition, as_of)
    offsets = CommittedOffsets()
    for f in files:
        for chunk in read_compacted(
            f,
            view,
            offsets,
            decoder,
            max_batch_size=DEFAULT_MAX_DECOMPRESSED_SIZE,
            max_batch_records=DEFAULT_MAX_BATCH_RECORDS,
            up_to=as_of,
        ):
            if errors is not None and (chunk.segment_errors or chunk.errors):
                errors += _chunk_errors(chunk, str(f))
    view.take_offsets(offsets)
    return view


def _chunk_errors(chunk: FileChunk, file: str) -> list[ReadError]:
    """A chunk's segment errors and records that did not decode (read from ``file``), in file
    order."""
    found: list[ReadError] = [
        *chunk.segment_errors,
        *(RecordError(file, at, rec.offset, str(rec.error)) for at, rec in chunk.errors),
    ]
    return sorted(found, key=lambda e: e.position)


def group_reports(
    source: StoragePath | Sequence[StoragePath | str] | LogDirs | Iterable[GroupsView],
    group: str | None = None,
    as_of: AsOf | None = None,
    errors: list[ReadError] | None = None,
) -> list[GroupReport]:
    """Every group (or one) of a dump at ``as_of`` (default: the end), by group id.
    ``errors`` receives what could not be read of a dump (not of views given), which the
    reports go without: as :func:`group_views` gives them, partition by partition, then the
    segment errors of ``__share_group_state``."""
    # The collector paused throughout, not in the replay alone: the first collection after it
    # walked every object the replay made (its views, events and records; at 1 M records two
    # collections of about 25 ms each, in the share states' reading and the reports').
    with gc_paused():
        return _group_reports(source, group, as_of, errors)


def _group_reports(
    source: StoragePath | Sequence[StoragePath | str] | LogDirs | Iterable[GroupsView],
    group: str | None,
    as_of: AsOf | None,
    errors: list[ReadError] | None,
) -> list[GroupReport]:
    views: list[GroupsView]
    shares: dict[str, list[SharePartitionState]] = {}
    if isinstance(source, Path | RemotePath | str | LogDirs) or is_paths(source):
        dirs = as_log_dirs(cast("StoragePath | Sequence[StoragePath | str] | LogDirs", source))
        cut = resolve_cut(dirs, as_of)
        views = group_views(dirs, cut.consumer_offsets, errors)
        share_errors: list[SegmentError] = []
        for state in share_states(dirs, share_errors, cut.others):
            shares.setdefault(state.group, []).append(state)
        if errors is not None:
            errors += share_errors
    else:
        views = list(cast("Iterable[GroupsView]", source))
    reports: list[GroupReport] = []
    for view in views:
        timelines = view.timelines
        created = timelines.created()
        offsets_of = view.offset_counts()
        names = timelines.groups() | set(view.groups) | set(offsets_of)
        for name in sorted(names):
            if group is not None and name != group:
                continue
            g = view.groups.get(name)
            offsets = offsets_of.get(name, 0)
            if g is None and offsets and name not in created:
                # Only committed offsets (e.g. a consumer using assign()): Kafka loads such a
                # group as an empty classic group.
                g = GroupState(name, "classic")
            if g is None:
                reports.append(
                    GroupReport(
                        name,
                        view.partition,
                        None,
                        "Dead",
                        None,
                        None,
                        None,
                        None,
                        [],
                        None,
                        offsets,
                        timelines,
                    )
                )
                continue
            reports.append(
                GroupReport(
                    name,
                    view.partition,
                    g.type,
                    g.state,
                    g.protocol_type if g.type == "classic" else g.type,
                    g.protocol,
                    g.generation,
                    g.epoch,
                    [_member_json(g.members[m], g.type) for m in sorted(g.members)],
                    assignor_inventory(view, g),
                    offsets,
                    timelines,
                    shares.get(name, []) if g.type == "share" else [],
                )
            )
    reports.sort(key=lambda r: (r.group, r.partition))
    if group is not None and not reports:
        raise DumpInputError(
            f"group {_label(group)} is not in the dump; run without --group to list them"
        )
    return reports


def _label(group: str) -> str:
    """A group id for messages: quoted, the empty one named."""
    return '"" (empty group id)' if group == "" else repr(group)
