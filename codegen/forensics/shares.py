"""Share groups' partition state from ``__share_group_state`` (KIP-932).

The share coordinator keeps, per (group, topic id, partition), a ``ShareSnapshot`` record (the
whole state) followed by ``ShareUpdate`` records (changes). The state at the end of the log is
the last snapshot with the later updates applied, as the coordinator replays them: an update's
start offset replaces the state's unless it is -1, and its in-flight batches replace the
ranges they cover; batches below the start offset are gone. What remains is what the broker's
``listShareGroupOffsets`` / ``describeShareGroupOffsets`` report: the start offset (the first
offset not yet acknowledged by the group), the state and leader epochs, and the in-flight
batches (offset ranges with their delivery state and count).

Share lag is what the broker's ``listShareGroupOffsets`` reports (KIP-1226): the log end offset
minus the start offset minus the records at or after the start offset whose delivery is complete
(acknowledged or archived): the state's ``DeliveryCompleteCount`` (4.2 on), else counted from
the in-flight batches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from codegen.dumps.coordinator_types import SHARE_GROUP_STATE
from codegen.dumps.model import SegmentError
from codegen.dumps.views.cut import AsOf
from codegen.forensics.inputs import LogDirs
from codegen.slotted import FrozenSlotted, Slotted, field

if TYPE_CHECKING:
    from codegen.dumps.decoded import DecodedRecord

__all__ = [
    "DELIVERY_STATES",
    "InFlightBatch",
    "SharePartitionState",
    "in_flight_text",
    "share_lag",
    "share_states",
]

DELIVERY_STATES: Final = {0: "Available", 1: "Acquired", 2: "Acknowledged", 4: "Archived"}
"""Kafka's ``RecordState`` ids as the share coordinator persists them."""
_DONE: Final = (2, 4)


class InFlightBatch(FrozenSlotted):
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    def to_json(self) -> dict[str, Any]:
        return {
            "firstOffset": self.first_offset,
            "lastOffset": self.last_offset,
            "deliveryState": DELIVERY_STATES.get(self.delivery_state, str(self.delivery_state)),
            "deliveryCount": self.delivery_count,
        }


def in_flight_text(batches: list[InFlightBatch]) -> str:
    """A share partition's in-flight batches as the tables of ``groups`` and ``lag`` say them."""
    if not batches:
        return "no in-flight record"
    parts = [
        f"{b.first_offset}-{b.last_offset} "
        f"{DELIVERY_STATES.get(b.delivery_state, b.delivery_state)} x{b.delivery_count}"
        for b in batches
    ]
    return "in flight: " + ", ".join(parts)


class SharePartitionState(Slotted):
    """One share partition of a group at the end of ``__share_group_state``."""

    group: str
    topic_id: str
    topic: str | None
    """From ``__cluster_metadata`` when the input holds it."""
    partition: int
    start_offset: int
    state_epoch: int
    leader_epoch: int
    snapshot_epoch: int
    in_flight: list[InFlightBatch] = field(default_factory=list)
    record_offset: int = -1
    delivery_complete_count: int = -1
    """Records at or after the start offset done with (KIP-1226), -1 when not recorded."""

    @property
    def delivered(self) -> int:
        """Records at or after the start offset whose delivery is complete."""
        if self.delivery_complete_count >= 0:
            return self.delivery_complete_count
        return sum(
            b.last_offset - b.first_offset + 1 for b in self.in_flight if b.delivery_state in _DONE
        )

    def lag(self, log_end: int) -> int:
        return share_lag(log_end, self.start_offset, self.delivered)

    """Offset of the last ``__share_group_state`` record applied."""

    @property
    def topic_label(self) -> str:
        return self.topic if self.topic is not None else self.topic_id

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "topicId": self.topic_id,
            "partition": self.partition,
            "startOffset": self.start_offset,
            "stateEpoch": self.state_epoch,
            "leaderEpoch": self.leader_epoch,
            "snapshotEpoch": self.snapshot_epoch,
            "deliveryCompleteCount": self.delivery_complete_count,
            "inFlight": [b.to_json() for b in self.in_flight],
        }


def _batches(value: Any) -> list[InFlightBatch]:
    return [
        InFlightBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in value.state_batches
    ]


def _merge(old: list[InFlightBatch], new: list[InFlightBatch]) -> list[InFlightBatch]:
    """``old`` with the ranges ``new`` covers replaced by ``new``'s batches."""
    out = list(old)
    for b in new:
        kept: list[InFlightBatch] = []
        for o in out:
            if o.last_offset < b.first_offset or o.first_offset > b.last_offset:
                kept.append(o)
                continue
            if o.first_offset < b.first_offset:
                kept.append(
                    InFlightBatch(
                        o.first_offset, b.first_offset - 1, o.delivery_state, o.delivery_count
                    )
                )
            if o.last_offset > b.last_offset:
                kept.append(
                    InFlightBatch(
                        b.last_offset + 1, o.last_offset, o.delivery_state, o.delivery_count
                    )
                )
        kept.append(b)
        out = sorted(kept, key=lambda x: x.first_offset)
    return out


def _prune(batches: list[InFlightBatch], start: int) -> list[InFlightBatch]:
    out: list[InFlightBatch] = []
    for b in batches:
        if b.last_offset < start:
            continue
        if b.first_offset < start:
            b = InFlightBatch(start, b.last_offset, b.delivery_state, b.delivery_count)
        out.append(b)
    return out


def _apply(
    states: dict[tuple[str, str, int], SharePartitionState],
    rec: DecodedRecord,
    topics: dict[str, str],
) -> None:
    from codegen.dumps.decoded import TOMBSTONE  # imported by share_states

    key: Any = rec.key
    if key is None:
        return
    k = (str(key.group_id), str(key.topic_id), int(key.partition))
    value: Any = rec.value
    if rec.kind == TOMBSTONE or value is None:
        states.pop(k, None)
        return
    if rec.name == "ShareSnapshot":
        states[k] = SharePartitionState(
            k[0],
            k[1],
            topics.get(k[1]),
            k[2],
            value.start_offset,
            value.state_epoch,
            value.leader_epoch,
            value.snapshot_epoch,
            _prune(_batches(value), value.start_offset),
            rec.offset,
            getattr(value, "delivery_complete_count", -1),
        )
        return
    state = states.get(k)
    if rec.name != "ShareUpdate" or state is None:
        return  # an update without a snapshot before it (cleaned away): nothing to apply to
    if value.start_offset != -1:
        state.start_offset = value.start_offset
    if value.leader_epoch != -1:
        state.leader_epoch = value.leader_epoch
    state.in_flight = _prune(_merge(state.in_flight, _batches(value)), state.start_offset)
    state.record_offset = rec.offset
    count = getattr(value, "delivery_complete_count", -1)
    if count != -1:
        state.delivery_complete_count = count
    elif value.start_offset != -1:
        state.delivery_complete_count = -1  # moved without a count: derive it from the batches


def share_lag(log_end: int, start_offset: int, delivered: int) -> int:
    """A share partition's lag as ``listShareGroupOffsets`` gives it (KIP-1226): the log end
    minus the start offset minus the records after it whose delivery is complete, never below
    0. The one definition, for the command line and Spark."""
    return max(log_end - start_offset - delivered, 0)


def share_states(
    dirs: LogDirs,
    errors: list[SegmentError] | None = None,
    cut: AsOf | None = None,
    *,
    named: bool = True,
) -> list[SharePartitionState]:
    """Every share partition's state at the end of the ``__share_group_state`` partitions
    among ``dirs`` (empty when there are none), or at ``cut``, by group, topic and partition.
    Topic names are those of the cluster's metadata among ``dirs`` (a topic id names one topic
    for good; :func:`codegen.forensics.cluster.cluster_metadata`), read (and its reader
    imported) only when there are share partitions to name; none when not ``named``."""
    if not dirs.partitions(SHARE_GROUP_STATE):
        return []
    # The record decoder imported only here: lag calls this on every dump, most have no shares.
    from codegen.dumps.coordinator import decode_batches
    from codegen.dumps.decoded import RECORD, TOMBSTONE

    topics: dict[str, str] = {}
    if named:
        from codegen.forensics.cluster import cluster_metadata

        meta = cluster_metadata(dirs)
        topics = {} if meta is None else dict(meta.topics)
    states: dict[tuple[str, str, int], SharePartitionState] = {}
    for _, files in dirs.coordinator_segments(SHARE_GROUP_STATE):
        for f in files:
            for item in decode_batches(f, SHARE_GROUP_STATE, errors=errors):
                if isinstance(item, SegmentError):
                    continue
                batch = item.batch
                if batch.is_control or batch.is_transactional:
                    continue
                if cut is not None and cut.excludes(batch.base_offset, batch.max_timestamp):
                    continue
                for rec in item.records:
                    if rec.kind in (RECORD, TOMBSTONE):
                        _apply(states, rec, topics)
    return sorted(states.values(), key=lambda s: (s.group, s.topic_label, s.partition))
