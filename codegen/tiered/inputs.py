"""The facts of the tiered-storage view
(:data:`codegen.dumps.views.tiered_schemas.FACT_SCHEMA`) read from a cluster's disks and its
remote storage, on disk or in object storage.

PATH... are broker log dirs (their ``__remote_log_metadata-N`` and data partition folders, the
``log-start-offset-checkpoint``), partition folders (the log dir around them gives the metadata),
and remote storages in Kafka's LocalTieredStorage layout (:mod:`codegen.dumps.remote_storage`).
Each reader here makes the facts of one source: :func:`metadata_rows` (the metadata topic's
records with the topic decoder's columns, for
:func:`codegen.dumps.views.tiered_facts.metadata_facts`),
:func:`remote_facts` (the listing, and the records of each complete copy's segment, from its
batch headers), :func:`local_facts` (each data partition's segments, leader epochs and log
start). ``as_of`` leaves out what was written after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa

from codegen.dumps import storage
from codegen.dumps.log_dirs import local_topic_id
from codegen.dumps.metadata import REMOTE_LOG_METADATA
from codegen.dumps.model import BatchHeader
from codegen.dumps.remote_storage import (
    is_remote_storage,
    readable_segments,
    remote_partitions,
    remote_segments,
)
from codegen.dumps.segments import SegmentReader, segment_file_info
from codegen.dumps.storage import StoragePath
from codegen.dumps.views.tiered_facts import read_metadata_rows
from codegen.dumps.views.tiered_schemas import FACT_SCHEMA
from codegen.forensics.inputs import InputError, LogDirs, PartitionFolder, discover

__all__ = [
    "LOG_START_CHECKPOINT",
    "TieredInputs",
    "find_inputs",
    "local_facts",
    "metadata_rows",
    "remote_facts",
    "with_topic_ids",
]

LOG_START_CHECKPOINT: Final = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT: Final = "leader-epoch-checkpoint"


@dataclass(slots=True)
class TieredInputs:
    """What the paths hold: the log dirs' partitions and the remote storages."""

    dirs: LogDirs | None
    remote_roots: list[StoragePath] = field(default_factory=list)

    @property
    def metadata_partitions(self) -> dict[int, PartitionFolder]:
        """The ``__remote_log_metadata`` partitions found (one replica each: the longest)."""
        if self.dirs is None:
            return {}
        found: dict[int, list[PartitionFolder]] = {}
        for table in (self.dirs.replicas, self.dirs.neighbours):
            for (topic, partition), replicas in table.items():
                if topic == REMOTE_LOG_METADATA:
                    found.setdefault(partition, []).extend(replicas)
        return {p: max(rs, key=_rank) for p, rs in sorted(found.items())}

    @property
    def data_partitions(self) -> list[PartitionFolder]:
        """One replica of each data partition given (not an internal topic), the longest."""
        if self.dirs is None:
            return []
        return [
            max(replicas, key=_rank)
            for (topic, _), replicas in sorted(self.dirs.replicas.items())
            if not topic.startswith("__")
        ]


def _rank(r: PartitionFolder) -> tuple[int, int]:
    logs = r.logs()
    if not logs:
        return (-1, 0)
    return (segment_file_info(logs[-1].name).base_offset or 0, sum(f.stat().st_size for f in logs))


def find_inputs(paths: Sequence[str | StoragePath]) -> TieredInputs:
    """The log dirs and remote storages among ``paths`` (globs expanded). Raises
    :class:`~codegen.forensics.inputs.InputError` when they hold neither."""
    if not paths:
        raise InputError("no path given: give broker log dirs and the remote storage")
    local: list[StoragePath] = []
    roots: list[StoragePath] = []
    for given in paths:
        for _, matches in storage.expand([given]):
            for p in matches:
                if not p.exists():
                    raise InputError(f"{p}: no such file or folder")
                (roots if p.is_dir() and is_remote_storage(p) else local).append(p)
    dirs = discover(local) if local else None
    inputs = TieredInputs(dirs, roots)
    if not inputs.metadata_partitions and not inputs.data_partitions and not roots:
        held = dirs.describe() if dirs is not None else "nothing"
        raise InputError(
            "expected broker log dirs (with __remote_log_metadata-N or data partition folders), "
            f"partition folders or a tiered topic's remote storage; the paths hold {held}"
        )
    return inputs


# ------------------------------------------------------------------------------- metadata


def metadata_rows(inputs: TieredInputs, as_of_ms: int | None = None) -> pa.Table:
    """The ``__remote_log_metadata`` records with the topic decoder's columns (what
    ``decode_remote_log_metadata`` adds to ``kafka-log`` rows), up to ``as_of_ms``."""
    tables = [
        t
        for partition, replica in inputs.metadata_partitions.items()
        for log in replica.logs()
        if (t := read_metadata_rows(log, partition, as_of_ms)) is not None
    ]
    return pa.concat_tables(tables) if tables else pa.table({})


# ------------------------------------------------------------------------------- the files


def _fact(**values: Any) -> dict[str, Any]:
    return {name: values.get(name) for name in FACT_SCHEMA.names}


def _headers(log: StoragePath, as_of_ms: int | None) -> tuple[int, int, int]:
    """(records, last offset or -1, newest batch time or -1) of a segment's batches."""
    records, last, newest = 0, -1, -1
    for item in SegmentReader(log).batch_headers():
        if not isinstance(item, BatchHeader):
            continue
        if as_of_ms is not None and item.max_timestamp > as_of_ms:
            break
        records += item.record_count
        last = max(last, item.last_offset)
        newest = max(newest, item.max_timestamp)
    return records, last, newest


def remote_facts(inputs: TieredInputs) -> pa.Table:
    """A ``remote-file`` fact per file of every remote storage; the ``.log`` of each complete
    copy with its records and last offset (read from its batch headers)."""
    rows: list[dict[str, Any]] = []
    for root in inputs.remote_roots:
        for partition in remote_partitions(root):
            copies = remote_segments(partition)
            counted = {c.segment_id for c in readable_segments(copies)}
            for copy in copies:
                for suffix, path in sorted(copy.files.items()):
                    records = last = None
                    if suffix == ".log" and copy.segment_id in counted:
                        records, last, _ = _headers(path, None)
                    rows.append(
                        _fact(
                            fact="remote-file",
                            topic=partition.topic,
                            topicId=partition.topic_id,
                            partition=partition.partition,
                            segmentId=copy.segment_id,
                            startOffset=copy.base_offset,
                            endOffset=last,
                            sizeBytes=path.stat().st_size,
                            records=records,
                            fileType=suffix,
                            file=str(path),
                        )
                    )
    return pa.Table.from_pylist(rows, schema=FACT_SCHEMA)


def _checkpoint_entries(path: StoragePath) -> list[list[str]]:
    """The entry lines of a Kafka checkpoint file (version, count, then entries)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    if len(lines) < 2 or not lines[1].strip().isdigit():
        return []
    return [line.split() for line in lines[2 : 2 + int(lines[1])]]


def local_facts(inputs: TieredInputs, as_of_ms: int | None = None) -> pa.Table:
    """A ``local-segment`` fact per segment of each data partition, an ``epoch`` fact per entry
    of its ``leader-epoch-checkpoint`` and a ``log-start`` fact from its log dir's
    ``log-start-offset-checkpoint``."""
    rows: list[dict[str, Any]] = []
    starts: dict[tuple[str, int], int] = {}
    images = {r.image for r in inputs.data_partitions if r.image is not None}
    for image in sorted(images, key=str):
        for entry in _checkpoint_entries(image / LOG_START_CHECKPOINT):
            if len(entry) == 3 and entry[1].isdigit() and entry[2].lstrip("-").isdigit():
                k = (entry[0], int(entry[1]))
                starts[k] = max(starts.get(k, -1), int(entry[2]))
    for replica in inputs.data_partitions:
        key = {
            "topic": replica.topic,
            "topicId": local_topic_id(replica.folder),
            "partition": replica.partition,
        }
        for log in replica.logs():
            base = segment_file_info(log.name).base_offset
            records, last, newest = _headers(log, as_of_ms)
            if as_of_ms is not None and records == 0:
                continue  # written after the moment asked for (or empty)
            rows.append(
                _fact(
                    fact="local-segment",
                    **key,
                    startOffset=base,
                    endOffset=last,
                    sizeBytes=log.stat().st_size,
                    records=records,
                    timeMs=newest,
                    file=str(log),
                )
            )
        for entry in _checkpoint_entries(replica.folder / LEADER_EPOCH_CHECKPOINT):
            if len(entry) == 2 and entry[0].lstrip("-").isdigit() and entry[1].isdigit():
                rows.append(
                    _fact(fact="epoch", **key, epoch=int(entry[0]), startOffset=int(entry[1]))
                )
        start = starts.get((replica.topic, replica.partition))
        if start is not None:
            rows.append(_fact(fact="log-start", **key, startOffset=start))
    return pa.Table.from_pylist(rows, schema=FACT_SCHEMA)


def with_topic_ids(facts: pa.Table, known: Iterable[tuple[str, int, str | None]] = ()) -> pa.Table:
    """``facts`` with the topic id of local facts whose folder has no ``partition.metadata``
    taken from the other facts of the partition (and ``known``: (topic, partition, topic id)
    of facts read elsewhere, as Spark's executors read the metadata), when they name one id."""
    keys = list(
        zip(*(facts.column(c).to_pylist() for c in ("topic", "partition", "topicId")), strict=True)
    )
    ids: dict[tuple[str, int], set[str]] = {}
    for topic, partition, topic_id in [*keys, *known]:
        if topic_id is not None:
            ids.setdefault((topic, partition), set()).add(topic_id)
    column = [
        tid
        if tid is not None
        else (next(iter(s)) if len(s := ids.get((t, p), set())) == 1 else None)
        for t, p, tid in keys
    ]
    return facts.set_column(
        FACT_SCHEMA.get_field_index("topicId"), "topicId", pa.array(column, pa.string())
    )


def concat_facts(tables: Iterable[pa.Table]) -> pa.Table:
    parts = [t for t in tables if t.num_rows]
    return pa.concat_tables(parts) if parts else FACT_SCHEMA.empty_table()
