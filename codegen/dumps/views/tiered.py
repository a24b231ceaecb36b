"""Tiered storage from the disk: each partition's remote segments and their states over time,
uploads that never finished, deletions that hang, holes between the remote and the local log,
bytes and records remote versus local, and leader epochs against the partition's checkpoint.
One definition, Arrow in and Arrow out, run by ``python -m codegen tiered`` in process and by
Spark (``spark_udfs.tiered``: ``groupBy(...).applyInArrow``). Its tables are defined in
:mod:`codegen.dumps.views.tiered_schemas`, the metadata events made facts in
:mod:`codegen.dumps.views.tiered_facts`.

The input is one table of *facts* (:data:`FACT_SCHEMA`), each a row with its ``fact`` kind:

- ``event``: a ``__remote_log_metadata`` record (:func:`metadata_facts` makes them from the topic
  decoder's columns): a segment's state (``recordType`` 0, 1, 3) or a partition deletion's
  (``recordType`` 2), with when it happened (``timeMs``, the event's own time), who wrote it,
  and where it is in the metadata topic (``metadataPartition``, ``metadataOffset``);
- ``remote-file``: a file of the remote storage's listing (segment id, ``fileType`` suffix,
  ``sizeBytes``; for the ``.log`` of a complete copy its ``records``);
- ``local-segment``: a ``.log`` of the partition's local folder (base offset as ``startOffset``,
  last offset read as ``endOffset``, ``records``, ``sizeBytes``, newest batch time);
- ``epoch``: an entry of the partition's ``leader-epoch-checkpoint`` (``epoch``, ``startOffset``);
- ``log-start``: the partition's log start offset in the broker's ``log-start-offset-checkpoint``.

:func:`partition_view` reads the facts of one partition (one topic id) and gives every section;
:func:`report` runs it per partition, :func:`topic_totals` rolls the partitions up per topic.
The rules (``docs/forensics.md``, "Tiered storage"):

- a segment's state is the last one its events give (a partition's metadata events are in one
  metadata partition, in offset order); only COPY_SEGMENT_FINISHED segments are served (the
  *live* ones), as the broker's metadata cache serves them;
- an upload that never finished is a COPY_SEGMENT_STARTED without a later state: *abandoned*
  when a copy of the same or later offsets finished after it (the broker never resumes a copy:
  it copies the offsets again under a new id), else *stuck* once older than ``stuck_after_ms``
  (else still *copying*); its objects left are the files the listing has of its id;
- a deletion hangs when DELETE_SEGMENT_STARTED (or a partition's DELETE_PARTITION_MARKED or
  STARTED) is older than ``stuck_after_ms`` without its FINISHED;
- with a listing, a live segment whose files are not all there lost its objects; files of an
  id the metadata never named are orphans (only said when metadata was read);
- a hole is a range of offsets from the log start to the local log start (the log end when there
  is no local log) that no live segment covers, or whose segment's objects are gone;
- the log start is the broker's checkpoint's value, or the first live segment's (or local
  segment's) start, whichever is later; the remote end is the last offset of a live segment,
  -1 when none (the broker's ``latest-tiered`` answer); the local log start is the first local
  segment's base offset; the log end the offset after the last local record (or the last
  local segment's base offset when it is empty);
- each leader epoch of a live segment (epoch, first offset) must be the epoch the partition's
  checkpoint gives at that offset.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from codegen.dumps.views.tiered_schemas import (
    EPOCH_SCHEMA,
    EVENT_SCHEMA,
    HANGING,
    PARTITION_DELETE_STATES,
    PARTITION_KEYS,
    PARTITION_SCHEMA,
    SECTIONS,
    SEGMENT_SCHEMA,
    SEGMENT_STATES,
    TOPIC_SCHEMA,
    UNFINISHED,
    TieredSections,
)

__all__ = [
    "DEFAULT_STUCK_AFTER_MS",
    "partition_view",
    "report",
    "topic_totals",
]

DEFAULT_STUCK_AFTER_MS: Final = 10 * 60 * 1000
"""An upload or deletion unfinished for longer is stuck (the broker's remote log manager runs
every 30 s by default, and copies a segment in seconds)."""
_COPY_STARTED, _COPY_FINISHED, _DELETE_STARTED, _DELETE_FINISHED = range(4)
_REQUIRED_FILES: Final = (".log", ".index", ".timeindex", ".leader_epoch_checkpoint", ".snapshot")
"""The files of a complete copy (LocalTieredStorage's; ``.txnindex`` only with aborted
transactions)."""


@dataclass(slots=True)
class _Segment:
    segment_id: str
    start: int | None = None
    end: int | None = None
    size: int | None = None
    broker: int | None = None
    epochs: list[dict[str, int]] | None = None
    state: int | None = None
    state_ms: int | None = None
    times: dict[int, int] | None = None
    files: dict[str, int] | None = None
    records: int | None = None
    seen_in_metadata: bool = False


def _state_name(states: Sequence[str], state: int | None) -> str | None:
    if state is None:
        return None
    return states[state] if 0 <= state < len(states) else f"UNKNOWN({state})"


def _key_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    first = rows[0] if rows else {}
    return {k: first.get(k) for k in PARTITION_KEYS}


def partition_view(
    facts: pa.Table,
    now_ms: int,
    stuck_after_ms: int,
    *,
    has_metadata: bool,
    has_listing: bool,
    past: bool = False,
) -> dict[str, pa.Table]:
    """Every section (:data:`SECTIONS`) of one partition's facts (one topic id).
    ``has_metadata``: ``__remote_log_metadata`` was read (so a segment it never names is an
    orphan); ``has_listing``: the remote storage was listed (so a live segment without its
    files lost them); ``past``: the facts are cut at a moment before the files were taken
    (``--as-of``), so local segments deleted since are unknown: a local log that starts past
    the remote end is not known at that moment, and no hole is claimed there."""
    rows = facts.to_pylist()
    key = _key_of(rows)
    events = sorted(
        (r for r in rows if r["fact"] == "event" and r["error"] is None),
        key=lambda r: (r["metadataPartition"] or 0, r["metadataOffset"] or 0),
    )
    segments: dict[str, _Segment] = {}
    deletes: list[tuple[int, int]] = []  # (state, time)
    for e in events:
        if e["recordType"] == 2:
            deletes.append((e["state"], e["timeMs"]))
            continue
        seg = segments.setdefault(e["segmentId"], _Segment(e["segmentId"]))
        seg.seen_in_metadata = True
        if e["recordType"] in (0, 3):
            seg.start, seg.end, seg.size = e["startOffset"], e["endOffset"], e["sizeBytes"]
            seg.epochs = e["leaderEpochs"]
        seg.broker = e["brokerId"]
        seg.state, seg.state_ms = e["state"], e["timeMs"]
        seg.times = seg.times or {}
        seg.times.setdefault(e["state"], e["timeMs"])
    for f in rows:
        if f["fact"] != "remote-file" or f["segmentId"] is None:
            continue
        seg = segments.setdefault(f["segmentId"], _Segment(f["segmentId"]))
        seg.files = seg.files or {}
        seg.files[f["fileType"]] = f["sizeBytes"] or 0
        if seg.start is None:
            seg.start = f["startOffset"]
        if f["fileType"] == ".log" and f["records"] is not None:
            seg.records = f["records"]
            if seg.end is None and f["endOffset"] is not None:
                seg.end = f["endOffset"]
            if seg.size is None:
                seg.size = f["sizeBytes"]
    finished = [
        s
        for s in segments.values()
        if s.seen_in_metadata and s.times and _COPY_FINISHED in s.times and s.end is not None
    ]

    seg_rows: list[dict[str, Any]] = []
    live: list[_Segment] = []
    lost: list[_Segment] = []
    for seg in sorted(segments.values(), key=lambda s: (s.start or 0, s.segment_id)):
        files = sorted(seg.files or {})
        missing = [f for f in _REQUIRED_FILES if f not in (seg.files or {})]
        age = None
        note = None
        times = seg.times or {}
        if not seg.seen_in_metadata:
            status = "orphan-objects" if has_metadata else "no-metadata"
            if not has_metadata and not missing:
                live.append(seg)
        elif seg.state == _COPY_FINISHED:
            if has_listing and missing:
                status = "objects-missing"
                lost.append(seg)
            else:
                status = "remote"
            live.append(seg)
        elif seg.state == _COPY_STARTED:
            age = now_ms - (seg.state_ms or now_ms)
            later = [
                s
                for s in finished
                if s is not seg
                and (s.end or 0) >= (seg.end or 0)
                and (s.times or {}).get(_COPY_FINISHED, 0) >= (seg.state_ms or 0)
            ]
            if later:
                status = "upload-abandoned"
                note = f"copied again as {later[0].segment_id}"
            else:
                status = "upload-stuck" if age > stuck_after_ms else "copying"
        elif seg.state == _DELETE_STARTED:
            age = now_ms - (seg.state_ms or now_ms)
            status = "delete-hanging" if age > stuck_after_ms else "deleting"
        elif seg.state == _DELETE_FINISHED:
            status = "deleted"
            if files:
                note = "objects left after the deletion finished"
        else:
            status = f"state {seg.state}"
        seg_rows.append(
            {
                **key,
                "segmentId": seg.segment_id,
                "startOffset": seg.start,
                "endOffset": seg.end,
                "state": _state_name(SEGMENT_STATES, seg.state),
                "status": status,
                "copyStartedMs": times.get(_COPY_STARTED),
                "copyFinishedMs": times.get(_COPY_FINISHED),
                "deleteStartedMs": times.get(_DELETE_STARTED),
                "deleteFinishedMs": times.get(_DELETE_FINISHED),
                "ageMs": age,
                "brokerId": seg.broker,
                "sizeBytes": seg.size,
                "records": seg.records,
                "leaderEpochs": seg.epochs,
                "files": files,
                "filesBytes": sum((seg.files or {}).values()) if seg.files else 0,
                "missingFiles": missing
                if (seg.files or has_listing) and seg.state != _DELETE_FINISHED
                else [],
                "note": note,
            }
        )

    # ------------------------------------------------------------- the partition's offsets
    local = sorted(
        (r for r in rows if r["fact"] == "local-segment"), key=lambda r: r["startOffset"] or 0
    )
    checkpoint_start = max(
        (
            r["startOffset"]
            for r in rows
            if r["fact"] == "log-start" and r["startOffset"] is not None
        ),
        default=None,
    )
    live.sort(key=lambda s: (s.start or 0, s.end or 0))
    remote_start = min((s.start for s in live if s.start is not None), default=None)
    remote_end = max((s.end for s in live if s.end is not None), default=-1)
    local_start = local[0]["startOffset"] if local else None
    log_end = None
    if local:
        last = local[-1]
        ends = [
            (r["endOffset"] + 1)
            for r in local
            if r["endOffset"] is not None and r["endOffset"] >= 0
        ]
        log_end = max([*ends, last["startOffset"] or 0])
    elif live:
        log_end = remote_end + 1
    unknown_local = past and bool(live) and (local_start is None or local_start > remote_end + 1)
    if unknown_local:
        local_start = log_end = None
    starts = [x for x in (remote_start, local_start) if x is not None]
    log_start = min(starts) if starts else None
    if checkpoint_start is not None and log_start is not None:
        log_start = max(log_start, checkpoint_start)

    holes: list[dict[str, Any]] = []
    if log_start is not None:
        cursor = log_start
        lost_ids = {s.segment_id for s in lost}
        stop = local_start if local_start is not None else remote_end + 1
        for s in live:
            if s.start is None or s.end is None or s.end < cursor:
                continue
            if s.start > cursor and s.start <= stop:
                holes.append(
                    {
                        "firstOffset": cursor,
                        "lastOffset": min(s.start, stop) - 1,
                        "reason": "no segment",
                    }
                )
            if s.segment_id in lost_ids:
                holes.append(
                    {
                        "firstOffset": max(cursor, s.start),
                        "lastOffset": min(s.end, stop - 1),
                        "reason": f"objects of {s.segment_id} missing",
                    }
                )
            cursor = max(cursor, s.end + 1)
        if local_start is not None and local_start > cursor and not unknown_local:
            holes.append(
                {"firstOffset": cursor, "lastOffset": local_start - 1, "reason": "no segment"}
            )
        holes = [h for h in holes if h["lastOffset"] >= h["firstOffset"]]

    # ------------------------------------------------------------------- leader epochs
    checkpoint = sorted(
        (r["startOffset"], r["epoch"])
        for r in rows
        if r["fact"] == "epoch" and r["startOffset"] is not None
    )
    cp_offsets = [o for o, _ in checkpoint]
    epoch_rows: list[dict[str, Any]] = []
    for s in live:
        for entry in s.epochs or []:
            offset, epoch = entry["offset"], entry["epoch"]
            i = bisect.bisect_right(cp_offsets, offset) - 1
            if not checkpoint:
                status, cp_epoch, cp_start = "no-checkpoint", None, None
            elif i < 0:
                status, cp_epoch, cp_start = "before-checkpoint", None, None
            else:
                cp_start, cp_epoch = checkpoint[i]
                status = "agrees" if cp_epoch == epoch else "differs"
            epoch_rows.append(
                {
                    **key,
                    "segmentId": s.segment_id,
                    "epoch": epoch,
                    "offset": offset,
                    "checkpointEpoch": cp_epoch,
                    "checkpointStartOffset": cp_start,
                    "status": status,
                }
            )

    # ---------------------------------------------------------------------- the partition
    statuses = [r["status"] for r in seg_rows]
    notes: list[str] = []
    delete_state = _state_name(PARTITION_DELETE_STATES, deletes[-1][0]) if deletes else None
    if deletes and deletes[-1][0] in (0, 1) and now_ms - deletes[-1][1] > stuck_after_ms:
        notes.append(
            f"the partition's deletion is {delete_state} since {now_ms - deletes[-1][1]} ms"
        )
    if unknown_local:
        notes.append("the local log at that moment is unknown: its segments were deleted since")
    if not local and seg_rows:
        notes.append(
            "no local log of this topic id: the topic was deleted, or its log dir not given"
        )
    served = live
    counted = all(s.records is not None for s in served)
    partition_row = {
        **key,
        "logStartOffset": log_start,
        "remoteLogStartOffset": remote_start,
        "remoteEndOffset": remote_end,
        "localLogStartOffset": local_start,
        "logEndOffset": log_end,
        "remoteSegments": len(served),
        "remoteBytes": sum(s.size or 0 for s in served),
        "remoteStoredBytes": sum(sum((s.files or {}).values()) for s in segments.values()),
        "remoteRecords": sum(s.records or 0 for s in served) if counted else None,
        "localSegments": len(local),
        "localBytes": sum(r["sizeBytes"] or 0 for r in local),
        "localRecords": sum(r["records"] or 0 for r in local),
        "holes": holes,
        "offsetsLost": sum(h["lastOffset"] - h["firstOffset"] + 1 for h in holes),
        "unfinishedUploads": sum(st in UNFINISHED for st in statuses),
        "abandonedObjectsBytes": sum(
            r["filesBytes"]
            for r in seg_rows
            if r["status"] in ("upload-abandoned", "upload-stuck", "orphan-objects")
        ),
        "hangingDeletions": sum(st in HANGING for st in statuses)
        + (
            1
            if deletes and deletes[-1][0] in (0, 1) and now_ms - deletes[-1][1] > stuck_after_ms
            else 0
        ),
        "epochMismatches": sum(r["status"] == "differs" for r in epoch_rows),
        "partitionDeleteState": delete_state,
        "localLog": bool(local),
        "notes": notes,
    }
    event_rows = [
        {
            **key,
            "segmentId": e["segmentId"] if e["recordType"] != 2 else None,
            "startOffset": segments[e["segmentId"]].start if e["recordType"] != 2 else None,
            "endOffset": segments[e["segmentId"]].end if e["recordType"] != 2 else None,
            "state": _state_name(
                PARTITION_DELETE_STATES if e["recordType"] == 2 else SEGMENT_STATES, e["state"]
            ),
            "timeMs": e["timeMs"],
            "brokerId": e["brokerId"],
            "metadataPartition": e["metadataPartition"],
            "metadataOffset": e["metadataOffset"],
            "error": None,
        }
        for e in events
    ]
    return {
        "partitions": pa.Table.from_pylist([partition_row], schema=PARTITION_SCHEMA),
        "segments": pa.Table.from_pylist(seg_rows, schema=SEGMENT_SCHEMA),
        "events": pa.Table.from_pylist(event_rows, schema=EVENT_SCHEMA),
        "epochs": pa.Table.from_pylist(epoch_rows, schema=EPOCH_SCHEMA),
    }


def _groups(facts: pa.Table) -> Iterable[pa.Table]:
    """The facts of each partition (:data:`PARTITION_KEYS`), by topic, topic id, partition."""
    keyed = facts.filter(pc.is_valid(facts.column("topic")))
    if keyed.num_rows == 0:
        return
    keyed = keyed.sort_by([(k, "ascending") for k in PARTITION_KEYS])
    keys = list(zip(*(keyed.column(k).to_pylist() for k in PARTITION_KEYS), strict=True))
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            yield keyed.slice(start, i - start)
            start = i


def topic_totals(partitions: pa.Table) -> pa.Table:
    """The partitions' rows summed per topic incarnation (topic, topic id), by topic."""
    rows: dict[tuple[str, str | None], dict[str, Any]] = {}
    sums = [f.name for f in TOPIC_SCHEMA if f.name not in ("topic", "topicId", "partitions")]
    for p in partitions.to_pylist():
        t = rows.setdefault(
            (p["topic"], p["topicId"]),
            {
                "topic": p["topic"],
                "topicId": p["topicId"],
                "partitions": 0,
                **dict.fromkeys(sums, 0),
            },
        )
        t["partitions"] += 1
        for name in sums:
            value = p[name]
            t[name] = None if value is None or t[name] is None else t[name] + value
    ordered = [rows[k] for k in sorted(rows, key=lambda k: (k[0], k[1] or ""))]
    return pa.Table.from_pylist(ordered, schema=TOPIC_SCHEMA)


def report(
    facts: pa.Table,
    now_ms: int,
    stuck_after_ms: int,
    *,
    has_metadata: bool,
    has_listing: bool,
    past: bool = False,
) -> TieredSections:
    """:func:`partition_view` of every partition of ``facts``, then :func:`topic_totals`."""
    parts: dict[str, list[pa.Table]] = {name: [] for name in SECTIONS}
    for group in _groups(facts):
        view = partition_view(
            group,
            now_ms,
            stuck_after_ms,
            has_metadata=has_metadata,
            has_listing=has_listing,
            past=past,
        )
        for name, table in view.items():
            parts[name].append(table)
    tables = {
        name: pa.concat_tables(parts[name]) if parts[name] else schema.empty_table()
        for name, schema in SECTIONS.items()
    }
    return TieredSections(**tables, topics=topic_totals(tables["partitions"]))
