"""``--as-of`` checked against its definition: the disks as they were at the cut.

:func:`prefix_copy` writes, from a log dir, the files a broker would have held at a cut, by
the rules docs/forensics.md gives (written here apart from the code under test, from raw
bytes): of every partition, the log entries the cut keeps, copied byte for byte (a time: the
entries whose header's newest timestamp is at most it; a ``__consumer_offsets`` offset: that
topic's entries whose base offset is at most it, and every other partition as of the moment of
the cut, the newest timestamp those entries hold); a segment none of whose entries is kept is
left out unless it is the partition's first (kept empty) or held no entry at all while every
entry before it is kept; a partition's ``.snapshot`` files below its log end then (all when
nothing was cut), its ``.txnindex`` entries whose ABORT marker is below it; the brokers'
``replication-offset-checkpoint`` files left out; ``__cluster_metadata`` whole (topic names).

:func:`answers` is what the Python API says of a path at a cut, as JSON; the tests compare it
on the whole log dir with ``--as-of`` against the prefix copy (and against the command line
and Spark).
"""

from __future__ import annotations

import random
import shutil
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegen.dumps.model import BatchHeader
from codegen.dumps.segments import SegmentReader
from codegen.forensics.groups import AsOf

CONSUMER_OFFSETS = "__consumer_offsets"
CLUSTER_METADATA = "__cluster_metadata"
_TXN_ENTRY = struct.Struct(">hqqqq")


def _headers(segment: Path) -> list[BatchHeader]:
    return [h for h in SegmentReader(segment).batch_headers() if isinstance(h, BatchHeader)]


def _partition_folders(log_dir: Path) -> list[Path]:
    return sorted(
        d for d in log_dir.iterdir() if d.is_dir() and d.name.rpartition("-")[2].isdigit()
    )


def _topic(folder: Path) -> str:
    return folder.name.rpartition("-")[0]


@dataclass(frozen=True)
class Cut:
    """A cut as the copy applies it: ``__consumer_offsets`` by ``offsets``, the rest by
    ``others`` (a time); ``now`` is its moment."""

    offsets: AsOf
    others: AsOf
    now: int


def resolve(log_dir: Path, as_of: AsOf) -> Cut:
    if as_of.offset is None:
        return Cut(as_of, as_of, as_of.timestamp_ms if as_of.timestamp_ms is not None else -1)
    moment = -1
    for folder in _partition_folders(log_dir):
        if _topic(folder) != CONSUMER_OFFSETS:
            continue
        for segment in sorted(folder.glob("*.log")):
            for h in _headers(segment):
                if h.record_count and not as_of.excludes(h.base_offset, h.max_timestamp):
                    moment = max(moment, h.max_timestamp)
    return Cut(as_of, AsOf(timestamp_ms=moment), moment)


def prefix_copy(log_dir: Path, as_of: AsOf, dest: Path) -> Path:
    """The log dir as it was at ``as_of`` (see the module doc), written to ``dest``."""
    cut = resolve(log_dir, as_of)
    dest.mkdir(parents=True)
    for item in sorted(log_dir.iterdir()):
        if item.is_file() and item.name != "replication-offset-checkpoint":
            shutil.copy2(item, dest / item.name)
    for folder in _partition_folders(log_dir):
        target = dest / folder.name
        if _topic(folder) == CLUSTER_METADATA:
            shutil.copytree(folder, target)
            continue
        target.mkdir()
        keep = cut.offsets if _topic(folder) == CONSUMER_OFFSETS else cut.others
        segments = sorted(folder.glob("*.log"))
        end = 0
        whole = True
        for n, segment in enumerate(segments):
            data = segment.read_bytes()
            headers = _headers(segment)
            kept = [h for h in headers if not keep.excludes(h.base_offset, h.max_timestamp)]
            if kept or n == 0 or (not headers and whole):
                (target / segment.name).write_bytes(
                    b"".join(data[h.position : h.position + h.size] for h in kept)
                )
                base = int(segment.name.split(".")[0])
                end = max([end, base, *(h.last_offset + 1 for h in kept)])
            whole = whole and len(kept) == len(headers)
        whole = whole and all((target / s.name).exists() for s in segments)
        for other in sorted(folder.iterdir()):
            if other.suffix == ".snapshot":
                if whole or int(other.name.split(".")[0]) < end:
                    shutil.copy2(other, target / other.name)
            elif other.suffix == ".txnindex":
                data = other.read_bytes()
                entries = [
                    data[i : i + _TXN_ENTRY.size]
                    for i in range(0, len(data) - _TXN_ENTRY.size + 1, _TXN_ENTRY.size)
                ]
                if not whole:
                    entries = [e for e in entries if _TXN_ENTRY.unpack(e)[3] < end]
                (target / other.name).write_bytes(b"".join(entries))
            elif other.suffix not in (".log", ".index", ".timeindex"):
                shutil.copy2(other, target / other.name)
    return dest


def batch_cuts(log_dir: Path) -> list[AsOf]:
    """Every batch boundary of ``log_dir`` (but ``__cluster_metadata``'s, read whole): a time
    just before the first batch and at each distinct newest timestamp; with a single ``__consumer_offsets`` partition, before and at
    each of its batches' base offsets too (offsets of several partitions mean different
    points)."""
    times: set[int] = set()
    offsets: set[int] = set()
    folders = _partition_folders(log_dir)
    single = sum(_topic(f) == CONSUMER_OFFSETS for f in folders) == 1
    for folder in folders:
        if _topic(folder) == CLUSTER_METADATA:  # read whole, for topic names
            continue
        for segment in sorted(folder.glob("*.log")):
            for h in _headers(segment):
                times.add(h.max_timestamp)
                if single and _topic(folder) == CONSUMER_OFFSETS:
                    offsets.update((h.base_offset, h.base_offset - 1))
    cuts = [AsOf(timestamp_ms=t) for t in sorted({min(times, default=0) - 1, *times})]
    return cuts + [AsOf(offset=o) for o in sorted(o for o in offsets if o >= 0)]


def offset_cuts(log_dir: Path) -> list[AsOf]:
    """``__consumer_offsets`` offsets before and at each batch of its busiest partition (the
    most batches): with several partitions, each is cut at the offset and the rest of the log
    at its moment (the newest batch kept), as ``--as-of OFFSET`` does."""
    folders = [f for f in _partition_folders(log_dir) if _topic(f) == CONSUMER_OFFSETS]
    heads = [[h for s in sorted(f.glob("*.log")) for h in _headers(s)] for f in folders]
    busiest = max(heads, key=len, default=[])
    offsets = {o for h in busiest for o in (h.base_offset, h.base_offset - 1) if o >= 0}
    return [AsOf(offset=o) for o in sorted(offsets)]


def sample(cuts: Sequence[AsOf], count: int, seed: int) -> list[AsOf]:
    """``count`` of ``cuts`` (seeded), always with the first and the last of each kind."""
    if len(cuts) <= count:
        return list(cuts)
    ends = {cuts[0], cuts[-1]}
    times = [c for c in cuts if c.offset is None]
    if times:
        ends |= {times[0], times[-1]}
    rest = [c for c in cuts if c not in ends]
    chosen = set(random.Random(seed).sample(rest, max(count - len(ends), 0)))
    return [c for c in cuts if c in ends or c in chosen]


def as_of_text(as_of: AsOf) -> str:
    """The cut as ``--as-of`` takes it."""
    import datetime as dt

    if as_of.offset is not None:
        return str(as_of.offset)
    assert as_of.timestamp_ms is not None
    moment = dt.datetime.fromtimestamp(as_of.timestamp_ms / 1000, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _without_folders(doc: Any, roots: Sequence[Path]) -> Any:
    """``doc`` with the folders named in it written relative to their log dir (a copy and the
    original name different folders)."""
    if isinstance(doc, dict):
        return {k: _without_folders(v, roots) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_without_folders(v, roots) for v in doc]
    if isinstance(doc, str):
        for root in roots:
            doc = doc.replace(str(root), "<log dir>")
    return doc


def answers(path: Path, as_of: AsOf | None, *, transactions: bool = True) -> dict[str, Any]:
    """What the Python API says of ``path`` at ``as_of``: every group (``groups --format
    jsonl``), every group's lag (``lag --format jsonl``: by ``__consumer_offsets`` partition,
    then name) and the transactions (``transactions --format jsonl``), folders written
    relative to ``path``."""
    from codegen.forensics.groups import group_reports
    from codegen.forensics.inputs import InputError
    from codegen.forensics.lag import lag_chunks
    from codegen.forensics.transactions import transaction_report

    def answer(question: Callable[[], Any]) -> Any:
        try:
            return question()
        except InputError as exc:  # the same input is bad at every cut
            return f"bad input: {exc}"

    out: dict[str, Any] = {
        "groups": answer(lambda: [r.to_json() for r in group_reports(path, None, as_of)]),
        "lag": answer(
            lambda: [g.to_json() for chunk in lag_chunks(path, None, as_of) for g in chunk]
        ),
    }
    if transactions:
        out["transactions"] = answer(lambda: transaction_report(path, as_of=as_of).lines())
    found: dict[str, Any] = _without_folders(out, [path])
    return found


# ---------------------------------------------------------------- the same answers, from Spark

_LAG_FIELDS = ("live", "deleted_at", "log_end_offset", "log_end_source", "lag", "status")


def python_rows(path: Path, as_of: AsOf | None) -> dict[str, Any]:
    """The Python API's answers at ``as_of`` in the shape :func:`spark_rows` gives them."""
    from codegen.forensics.groups import group_reports
    from codegen.forensics.lag import lag_reports
    from codegen.forensics.transactions import transaction_report

    reports = group_reports(path, None, as_of)
    lags = lag_reports(path, None, as_of)
    out: dict[str, Any] = {
        "groups": sorted(
            (
                r.partition,
                r.group,
                r.type,
                r.state,
                r.protocol_type,
                r.protocol,
                r.generation,
                r.epoch,
                r.members,
                r.committed_offsets,
                r.to_json()["assignors"],
                [s.to_json() for s in r.share_partitions] if r.type == "share" else None,
            )
            for r in reports
        ),
        "lag": sorted(
            (p.group, p.topic, p.partition, *(getattr(p, f) for f in _LAG_FIELDS))
            for g in lags
            for p in g.partitions
        ),
        "status": {g.group: g.status for g in lags if g.partitions},
        "shares": sorted(
            (s.state.group, s.state.topic, s.state.partition, s.log_end_offset, s.lag)
            for g in lags
            for s in g.share_partitions
        ),
    }
    report = transaction_report(path, as_of=as_of)
    out["partitions"] = sorted(
        (p.topic, p.partition, p.log_end_offset, p.last_stable_offset, len(p.open))
        for p in [*report.partitions, *report.offset_partitions]
    )
    out["open"] = sorted(
        (
            *(t.topic, t.partition, t.producer_id, t.first_offset, t.transactional_id),
            *(t.idle_ms, t.hanging, t.find_hanging, t.reason, t.outlook, t.times_out_at),
            t.pending_groups if t.topic == "__consumer_offsets" else None,
        )
        for t in report.open
    )
    return out


def spark_rows(spark: Any, path: Path, as_of: AsOf | None) -> dict[str, Any]:
    """The Spark functions' answers at ``as_of`` (``spark_udfs.forensics``,
    ``spark_udfs.transactions``)."""
    from spark_udfs import forensics
    from spark_udfs import transactions as txns

    cut = forensics.resolve_cut(spark, path, as_of)
    decoded = forensics.read_dump(spark, path, as_of)
    shares = forensics.read_share_states(spark, path, as_of)
    ends = forensics.read_log_ends(spark, path, as_of)
    states = forensics.group_states(decoded, shares).collect()
    lag = forensics.partition_lag(decoded, ends, now=cut.now).collect()
    shared = forensics.share_lag(shares, ends, cut.now).collect()
    by_group: dict[str, list[str | None]] = {}
    for r in lag:
        by_group.setdefault(r.group, []).append(r.status)
    from codegen.forensics.burrow import group_status

    out: dict[str, Any] = {
        "groups": sorted(
            (
                r.partition,
                r.group,
                r.type,
                r.state,
                r.protocolType,
                r.protocol,
                r.generation,
                r.epoch,
                [m.asDict(recursive=True) for m in r.members],
                r.committedOffsets,
                None if r.assignors is None else r.assignors.asDict(recursive=True),
                None
                if r.sharePartitions is None
                else [_share_json(s.asDict(recursive=True)) for s in r.sharePartitions],
            )
            for r in states
        ),
        "lag": sorted(
            (
                r.group,
                r.topic,
                r.partition,
                r.live,
                r.deletedAt,
                r.logEndOffset,
                r.logEndSource,
                r.lag,
                r.status,
            )
            for r in lag
        ),
        "status": {g: group_status(s) for g, s in by_group.items()},
        "shares": sorted((r.group, r.topic, r.partition, r.logEndOffset, r.lag) for r in shared),
    }
    inputs = txns.read_transactions(spark, path, as_of)
    out["partitions"] = sorted(
        (r.topic, r.partition, r.logEndOffset, r.lastStableOffset, r.open)
        for r in txns.partition_transactions(inputs).collect()
    )
    out["open"] = sorted(
        (
            *(r.topic, r.partition, r.producerId, r.firstOffset, r.transactionalId),
            *(r.idleMs, r.hanging, r.findHanging, r.reason, r.outlook, r.timesOutAt),
            r.pendingGroups,
        )
        for r in txns.open_transactions(inputs, txns.newest_timestamp(inputs)).collect()
    )
    return out


def _share_json(state: dict[str, Any]) -> dict[str, Any]:
    """A share partition of ``group_states`` as ``SharePartitionState.to_json`` writes it."""
    return {k: v for k, v in state.items() if k != "delivered"}
