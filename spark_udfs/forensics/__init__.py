"""Group forensics as distributed DataFrame operations: the answers of ``codegen.forensics``.

This package's interface; the work is done by its modules by job: :mod:`.inputs` (reading and
cutting dumps, log ends), :mod:`.downgrade`, :mod:`.groups` and :mod:`.lag`.

Every function takes the decoded ``__consumer_offsets`` records (:func:`read_dump`, or
:func:`spark_udfs.functions.decode_consumer_offsets` over ``kafka-log`` rows) and returns a
DataFrame: nothing is collected to the driver. The group answers run the Python API's own
view on the executors, one replay per ``__consumer_offsets`` partition
(:mod:`spark_udfs.group_views`); the offset answers run the command line's definitions
(:mod:`codegen.dumps.views.offsets` per ``__consumer_offsets`` partition, then
:mod:`codegen.forensics.lag` per data partition with its log ends) in ``applyInArrow``. The
semantics are those of the Python API, row for row (a test compares them):

- :func:`downgrade_findings`: per partition, what a release's group coordinator makes of it
  (every record its loader reads, the live records it would lose or skip), by
  :func:`codegen.forensics.partition_findings.partition_findings`. The release table is the one of
  :mod:`codegen.forensics.releases`.
- :func:`group_states`: each group (classic, consumer, share, streams, and the deleted ones)
  at the end of the (possibly ``as_of``-cut) log, with its members in detail (client id, host,
  instance id, assignors, subscribed topics, assignment, member epoch) and its KIP-726
  assignor inventory, as :func:`codegen.forensics.groups.group_reports` gives them.
- :func:`group_timelines`: every group's events (rebalances, members joining and leaving,
  protocol conversions, assignor changes, offset deletions, deletion, member epochs), and
  :func:`member_epochs`, the member and assignment epochs over time (KAFKA-19779).
- :func:`offset_history`, :func:`partition_lag`, :func:`group_lag`: every commit that took
  effect with the log end offset and lag at its time, and the Burrow-like status per
  partition and group of :mod:`codegen.forensics.lag` at *now* (:func:`lag_now`), against
  the log ends of :func:`read_log_ends` (segments, empty segments and
  ``replication-offset-checkpoint`` files, the highest replica, each partition saying where
  its end came from).
- :func:`read_share_states`, :func:`share_lag`: share groups' partitions from
  ``__share_group_state`` (replayed on the driver by :mod:`codegen.forensics.shares`) and
  their lag (KIP-1226).
"""

from __future__ import annotations

from spark_udfs.forensics.downgrade import downgrade_findings, live_records
from spark_udfs.forensics.groups import group_states, group_timelines, member_epochs
from spark_udfs.forensics.inputs import (
    batch_rows,
    kept_batches,
    log_ends,
    read_dump,
    read_log_ends,
    read_share_states,
    resolve_cut,
)
from spark_udfs.forensics.lag import (
    group_lag,
    lag_now,
    offset_history,
    partition_lag,
    share_lag,
)

__all__ = [
    "batch_rows",
    "downgrade_findings",
    "group_lag",
    "group_states",
    "group_timelines",
    "kept_batches",
    "lag_now",
    "live_records",
    "log_ends",
    "member_epochs",
    "offset_history",
    "partition_lag",
    "read_dump",
    "read_log_ends",
    "read_share_states",
    "resolve_cut",
    "share_lag",
]
