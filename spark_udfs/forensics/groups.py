"""Group answers in Spark: the Python API's own group view run on the executors, one replay
per ``__consumer_offsets`` partition (:mod:`spark_udfs.group_views`): group states, timelines
and member epochs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from spark_udfs.forensics.inputs import SHARE_PARTITION_FIELDS
from spark_udfs.group_views import (
    EVENT_DETAIL_FIELDS,
    GROUP_STATES_SCHEMA,
    GROUP_TIMELINES_SCHEMA,
    MEMBER_EPOCHS_SCHEMA,
    group_events,
    group_rows,
    member_epoch_rows,
    replayed,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


__all__ = [
    "group_states",
    "group_timelines",
    "member_epochs",
]


_DETAIL_FIELDS: Final = EVENT_DETAIL_FIELDS


def group_states(decoded: DataFrame, shares: DataFrame | None = None) -> DataFrame:
    """Each group at the end of ``decoded`` (cut it with :func:`read_dump`'s ``as_of``), as
    :func:`codegen.forensics.groups.group_reports` lists them: ``partition, group, type, state,
    protocolType, protocol, generation, epoch, members, committedOffsets, assignors``. Each
    partition's records are replayed on the executors through the command line's
    :class:`codegen.forensics.groups.GroupsView` (:mod:`spark_udfs.group_views`).

    ``type`` is ``classic``, ``consumer``, ``share`` or ``streams``; a deleted group is listed
    with ``type`` null and state ``Dead`` (its timeline is in :func:`group_timelines`), and a
    group that only has committed offsets is an ``Empty`` classic group, as Kafka loads it.
    ``members`` is sorted by member id, each ``memberId, clientId, clientHost, instanceId,
    assignors, subscribedTopics, assignment, memberEpoch`` (a classic member's ``assignors`` is
    null: the log does not hold the list it advertised). ``assignors`` is the KIP-726
    inventory (``chosen, chosenOverTime, advertised, common, subscriptionVersions,
    cooperativeSwitch, why``) of :func:`codegen.forensics.groups.assignor_inventory`; null for
    a dead group. With ``shares`` (:func:`read_share_states`), a share group's
    ``sharePartitions`` are its partitions' states, by topic and partition (null for the other
    groups, and without ``shares``)."""
    from pyspark.sql import functions as F

    full = replayed(decoded, group_rows, GROUP_STATES_SCHEMA)
    share_partitions: Column = F.lit(None).cast(f"array<struct<{SHARE_PARTITION_FIELDS}>>")
    if shares is not None:
        per_group = shares.groupBy("group").agg(
            F.sort_array(
                F.collect_list(F.struct(*(c for c in shares.columns if c != "group")))
            ).alias("_shares")
        )
        full = full.join(F.broadcast(per_group), "group", "left")
        share_partitions = F.when(
            F.col("type") == "share",
            F.coalesce(
                F.col("_shares"), F.array().cast(f"array<struct<{SHARE_PARTITION_FIELDS}>>")
            ),
        )
    return full.select(
        "partition",
        "group",
        "type",
        "state",
        "protocolType",
        "protocol",
        "generation",
        "epoch",
        "members",
        "committedOffsets",
        "assignors",
        share_partitions.alias("sharePartitions"),
    )


def group_timelines(decoded: DataFrame) -> DataFrame:
    """Every group's timeline, as :class:`codegen.forensics.groups.GroupsView` records it (the
    view itself, replayed per partition on the executors): ``partition, group, applyOffset,
    offset, eventIndex, timestamp, kind, detail``, one row per event; a group's timeline is its
    rows ordered by ``applyOffset, offset, eventIndex`` (``applyOffset``: the record's offset,
    or for a transactional record the offset of the marker that committed it).

    Kinds: ``created`` and ``group-deleted`` (``type``), ``protocol-conversion`` (``from``,
    ``to``), ``rebalance`` (``generation`` of a classic group or ``epoch`` of the others, and
    ``previous``), ``member-joined`` and ``member-left`` (``member``), ``assignor-changed``
    (``previousProtocol``, ``protocol``), ``offset-deleted`` (``topic``, ``partition``) and
    ``member-epoch`` (``member, memberEpoch, previousMemberEpoch, assigned``: per topic id the
    partitions and their assignment epochs, KAFKA-19779). ``detail`` has every field; those
    the kind does not give are null."""
    return replayed(decoded, group_events, GROUP_TIMELINES_SCHEMA)


def member_epochs(decoded: DataFrame) -> DataFrame:
    """The member and assignment epochs over time of consumer-protocol groups (KAFKA-19779):
    one row per partition of each current member assignment record (the ``member-epoch``
    events of :func:`group_timelines`), ``partition, group, applyOffset, offset, timestamp,
    member, memberEpoch, previousMemberEpoch, topicId, topicPartition, assignmentEpoch`` (null
    where the record has no assignment epochs). An assignment without partitions gives one row
    with ``topicId`` null."""
    return replayed(decoded, member_epoch_rows, MEMBER_EPOCHS_SCHEMA)
