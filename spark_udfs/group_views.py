"""The group views of the command line, run by Spark: one replay per ``__consumer_offsets``
partition, in ``groupBy("topic", "partition").applyInArrow(...)``.

Each partition's rows are fed, in offset order and a chunk at a time, to the view the command
line uses (:class:`codegen.forensics.groups.GroupsView`,
:class:`codegen.dumps.views.compacted.CompactedView`) by the command line's own step
(:func:`codegen.dumps.views.consumer_offsets.apply_chunk`: the offset commits checked and
applied by the engine's pass, the few other records one by one); its answers come back as
Arrow rows. The semantics are those views', defined once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Final

from codegen.dumps.coordinator import CONSUMER_OFFSETS, coordinator_decoder
from codegen.dumps.decoded import DecodedRecord
from codegen.dumps.views.commit_rows import ascending
from codegen.dumps.views.commits import CHUNK_ROWS
from codegen.dumps.views.committed import CommittedOffsets
from codegen.dumps.views.compacted import CompactedView
from codegen.dumps.views.consumer_offsets import apply_chunk
from codegen.forensics.groups import GroupEvent, GroupsView, group_reports

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

__all__ = [
    "COMPACTED_GROUPS_SCHEMA",
    "EVENT_DETAIL_FIELDS",
    "GROUP_STATES_SCHEMA",
    "GROUP_TIMELINES_SCHEMA",
    "INVENTORY_TYPE",
    "MEMBER_EPOCHS_SCHEMA",
    "MEMBER_TYPE",
    "compacted_groups",
    "group_events",
    "group_rows",
    "member_epoch_rows",
    "replay_rows",
    "replayed",
]

_RECORD_COLUMNS: Final = (
    "offset",
    "timestamp",
    "key",
    "value",
    "producerId",
    "isTransactional",
    "isControl",
)
"""The columns of a partition's rows :func:`codegen.dumps.views.consumer_offsets.apply_chunk`
reads, as ``kafka-log`` gives them (``batchPosition`` too where the rows have it)."""

MEMBER_TYPE: Final = (
    "struct<memberId:string,clientId:string,clientHost:string,instanceId:string,"
    "assignors:array<string>,subscribedTopics:array<string>,"
    "assignment:map<string,array<int>>,memberEpoch:int>"
)
INVENTORY_TYPE: Final = (
    "struct<chosen:string,chosenOverTime:array<string>,advertised:map<string,array<string>>,"
    "common:array<string>,subscriptionVersions:map<string,int>,cooperativeSwitch:string,"
    "why:string>"
)
_ASSIGNED_TYPE: Final = "map<string,struct<partitions:array<int>,assignmentEpochs:array<int>>>"
EVENT_DETAIL_FIELDS: Final = (
    ("type", "string"),
    ("from", "string"),
    ("to", "string"),
    ("generation", "int"),
    ("epoch", "int"),
    ("previous", "int"),
    ("member", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("protocol", "string"),
    ("previousProtocol", "string"),
    ("memberEpoch", "int"),
    ("previousMemberEpoch", "int"),
    ("assigned", _ASSIGNED_TYPE),
)
"""Every field a timeline event's ``detail`` may have, with its Spark type."""

GROUP_STATES_SCHEMA: Final = (
    "partition int, group string, type string, state string, protocolType string, "
    f"protocol string, generation int, epoch int, members array<{MEMBER_TYPE}>, "
    f"committedOffsets bigint, assignors {INVENTORY_TYPE}"
)
GROUP_TIMELINES_SCHEMA: Final = (
    "partition int, group string, applyOffset bigint, offset bigint, eventIndex int, "
    "timestamp bigint, kind string, detail struct<"
    + ",".join(f"`{name}`:{kind}" for name, kind in EVENT_DETAIL_FIELDS)
    + ">"
)
MEMBER_EPOCHS_SCHEMA: Final = (
    "partition int, group string, applyOffset bigint, offset bigint, timestamp bigint, "
    "member string, memberEpoch int, previousMemberEpoch int, topicId string, "
    "topicPartition int, assignmentEpoch int"
)
COMPACTED_GROUPS_SCHEMA: Final = (
    "group string, type string, state string, protocolType string, protocol string, "
    "leader string, generation int, epoch int, members bigint"
)


# ------------------------------------------------------------------------ on the driver


def replayed(
    decoded: DataFrame,
    answer: Callable[[int, pa.Table], list[dict[str, Any]]],
    schema: str,
) -> DataFrame:
    """``answer(partition, rows)`` of each ``__consumer_offsets`` partition of ``decoded``
    (:func:`spark_udfs.functions.decode_consumer_offsets` over ``kafka-log`` rows, or rows of
    the Kafka source with :func:`spark_udfs.live.as_log_rows`), as a DataFrame of ``schema``.
    Only the raw columns travel: the executors decode the records as the command line does.
    Each partition's rows come sorted by offset: Spark sorts them by partition for the groups
    anyway, and the offset as a second key spares the executors a sort of the whole table."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    columns = set(decoded.columns)
    rows = decoded
    if "_error" in columns:  # a damaged batch: the command line reports it and reads on
        rows = rows.filter(F.col("_error").isNull())
    wanted: list[Column | str] = [
        "topic",
        "partition",
        *_RECORD_COLUMNS,
        *(["batchPosition"] if "batchPosition" in columns else []),
    ]
    arrow_schema = to_arrow_schema(decoded.sparkSession.createDataFrame([], schema).schema)

    def run(key: tuple[pa.Scalar, ...], table: pa.Table) -> pa.Table:
        import pyarrow as pa

        return pa.Table.from_pylist(answer(int(key[1].as_py()), table), schema=arrow_schema)

    by = ("topic", "partition")
    ordered = rows.select(*wanted).repartition(*by).sortWithinPartitions(*by, "offset")
    return ordered.groupBy(*by).applyInArrow(run, schema)


# ------------------------------------------------------------------------ on the executors


class _AppliedView(GroupsView):
    """:class:`GroupsView` noting each event's apply offset as its records come: the record's
    offset, or for a transactional record the offset of the marker that committed it."""

    def __init__(self, partition: int) -> None:
        super().__init__(partition)
        self.applied: dict[int, int] = {}

    def add_records(
        self, records: list[DecodedRecord], producer_id: int, transactional: bool, control: bool
    ) -> None:
        before = len(self.events)
        super().add_records(records, producer_id, transactional, control)
        for event in self.events[before:]:
            self.applied[id(event)] = records[-1].offset if control else event.offset


def replay_rows(view: CompactedView, rows: pa.Table, chunk: int = CHUNK_ROWS) -> None:
    """Feed a partition's rows (any order) to ``view`` as the command line does, ``chunk``
    rows at a time (:func:`codegen.dumps.views.consumer_offsets.apply_chunk`: the offset
    commits by the engine's pass, the other records one by one), then the offset commits
    (``take_offsets``: for a :class:`GroupsView`, the offset-deleted events, by offset)."""
    import pyarrow as pa

    if not ascending(rows.column("offset").to_numpy()):
        rows = rows.sort_by("offset")
    if "batchPosition" not in rows.column_names:  # each record a batch of its own
        rows = rows.append_column("batchPosition", rows.column("offset"))
    if "_error" not in rows.column_names:  # the rows read (Spark leaves out damaged batches)
        rows = rows.append_column("_error", pa.nulls(rows.num_rows, pa.string()))
    decoder = coordinator_decoder(CONSUMER_OFFSETS)
    offsets = CommittedOffsets()
    for part in rows.to_batches(max_chunksize=chunk):
        apply_chunk(part, view, offsets, decoder)
    view.take_offsets(offsets)


def _pairs(mapping: Mapping[str, Any] | None) -> list[tuple[str, Any]] | None:
    """A map column's value for Arrow."""
    return None if mapping is None else list(mapping.items())


def group_rows(partition: int, rows: pa.Table) -> list[dict[str, Any]]:
    """The rows of :func:`spark_udfs.forensics.group_states`: the reports of
    :func:`codegen.forensics.groups.group_reports`."""
    view = GroupsView(partition)
    replay_rows(view, rows)
    out: list[dict[str, Any]] = []
    for r in group_reports([view]):
        inventory = None
        if r.inventory is not None:
            i = asdict(r.inventory)
            inventory = {
                "chosen": i["chosen"],
                "chosenOverTime": i["chosen_over_time"],
                "advertised": _pairs(i["advertised"]),
                "common": i["common"],
                "subscriptionVersions": _pairs(i["subscription_versions"]),
                "cooperativeSwitch": i["cooperative_switch"],
                "why": i["why"],
            }
        out.append(
            {
                "partition": r.partition,
                "group": r.group,
                "type": r.type,
                "state": r.state,
                "protocolType": r.protocol_type,
                "protocol": r.protocol,
                "generation": r.generation,
                "epoch": r.epoch,
                "members": [{**m, "assignment": _pairs(m["assignment"])} for m in r.members],
                "committedOffsets": r.committed_offsets,
                "assignors": inventory,
            }
        )
    return out


def _timeline(partition: int, rows: pa.Table) -> Iterator[tuple[int, int, GroupEvent]]:
    """``(apply offset, index among its record's events, event)`` of the partition's events."""
    view = _AppliedView(partition)
    replay_rows(view, rows)
    applied = [view.applied.get(id(e), e.offset) for e in view.events]
    index = 0
    for n, (event, apply_offset) in enumerate(zip(view.events, applied, strict=True)):
        before = view.events[n - 1] if n else None
        same = (
            before is not None
            and before.group == event.group
            and before.offset == event.offset
            and applied[n - 1] == apply_offset
        )
        index = index + 1 if same else 0
        yield apply_offset, index, event


def _detail(event: GroupEvent) -> dict[str, Any]:
    detail: dict[str, Any] = dict.fromkeys(name for name, _ in EVENT_DETAIL_FIELDS)
    for name, value in event.detail.items():
        if event.kind == "assignor-changed" and name == "previous":
            name = "previousProtocol"  # ``previous`` is an int (generation, epoch)
        detail[name] = value
    assigned = detail["assigned"]
    detail["assigned"] = _pairs(assigned)
    return detail


def group_events(partition: int, rows: pa.Table) -> list[dict[str, Any]]:
    """The rows of :func:`spark_udfs.forensics.group_timelines`: the events of
    :class:`codegen.forensics.groups.GroupsView`."""
    return [
        {
            "partition": e.partition,
            "group": e.group,
            "applyOffset": apply_offset,
            "offset": e.offset,
            "eventIndex": index,
            "timestamp": e.timestamp,
            "kind": e.kind,
            "detail": _detail(e),
        }
        for apply_offset, index, e in _timeline(partition, rows)
    ]


def member_epoch_rows(partition: int, rows: pa.Table) -> list[dict[str, Any]]:
    """The rows of :func:`spark_udfs.forensics.member_epochs`: the ``member-epoch`` events, one
    row per assigned partition (one row without a topic for an empty assignment)."""
    out: list[dict[str, Any]] = []
    for apply_offset, _, e in _timeline(partition, rows):
        if e.kind != "member-epoch":
            continue
        d = e.detail
        head = {
            "partition": e.partition,
            "group": e.group,
            "applyOffset": apply_offset,
            "offset": e.offset,
            "timestamp": e.timestamp,
            "member": d["member"],
            "memberEpoch": d["memberEpoch"],
            "previousMemberEpoch": d["previousMemberEpoch"],
        }
        assigned = [
            (topic, p, None if epochs is None or i >= len(epochs) else epochs[i])
            for topic, parts in d["assigned"].items()
            for epochs in [parts["assignmentEpochs"]]
            for i, p in enumerate(parts["partitions"])
        ]
        for topic, p, epoch in assigned or [(None, None, None)]:
            out.append({**head, "topicId": topic, "topicPartition": p, "assignmentEpoch": epoch})
    return out


def compacted_groups(partition: int, rows: pa.Table) -> list[dict[str, Any]]:
    """The rows of :func:`spark_udfs.compacted.group_states`: the classic and consumer groups
    of :meth:`codegen.dumps.views.compacted.CompactedView.group_rows`."""
    view = CompactedView()
    replay_rows(view, rows)
    return [
        {
            "group": g.group,
            "type": g.type,
            "state": g.state,
            "protocolType": g.protocol_type if g.type == "classic" else g.type,
            "protocol": g.protocol,
            "leader": g.leader,
            "generation": g.generation,
            "epoch": g.epoch,
            "members": len(g.members),
        }
        for g in view.group_rows()
        if g.type in ("classic", "consumer")
    ]
