"""``python -m codegen dump``: decode internal-topic segments and snapshots."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

import click

from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    ERROR,
    KIND_CONTROL,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    UNKNOWN,
    DecodedBatch,
    DecodedRecord,
    EndTxnMarker,
    decode_batches,
)
from codegen.dumps.metadata import CLUSTER_METADATA, decode_metadata_batches
from codegen.dumps.model import SegmentError
from codegen.dumps.segments import segment_files

__all__ = ["TOPIC_CHOICES", "dump_command", "guess_topic", "record_to_json"]

TOPIC_CHOICES: Final = {
    "offsets": CONSUMER_OFFSETS,
    "transactions": TRANSACTION_STATE,
    "share-state": SHARE_GROUP_STATE,
    "cluster-metadata": CLUSTER_METADATA,
}
PROGRESS_MIN_BYTES: Final = 32 << 20
"""Inputs at least this large get a progress bar (when stderr is a terminal)."""


def guess_topic(path: Path) -> str | None:
    """The internal topic a segment path belongs to, from its folder or file name."""
    if path.name.endswith(".checkpoint"):
        return CLUSTER_METADATA
    for part in reversed(path.resolve().parts):
        for topic in TOPIC_CHOICES.values():
            if part == topic or part.startswith(topic + "-"):
                return topic
    return None


def _internal_partitions(log_dir: Path) -> list[tuple[str, int, Path]]:
    """(topic, partition, folder) of the internal-topic partition folders (``<topic>-<n>``)
    of a broker's log folder, by topic and partition number."""
    found: list[tuple[str, int, Path]] = []
    for sub in log_dir.iterdir():
        name, _, number = sub.name.rpartition("-")
        if sub.is_dir() and number.isdigit() and name in TOPIC_CHOICES.values():
            found.append((name, int(number), sub))
    return sorted(found)


def _files(paths: tuple[Path, ...], topic: str | None) -> list[Path]:
    """The files to read: files as given; a partition folder's segments and snapshots; for a
    broker's log folder, also those of its internal-topic partition folders."""
    out: list[Path] = []
    for p in paths:
        if not p.is_dir():
            out.append(p)
            continue
        found = segment_files(p)
        partitions = _internal_partitions(p)
        if topic is not None and partitions:
            # a log folder's own files (bootstrap.checkpoint): only those of the topic asked for
            found = [f for f in found if guess_topic(f) == topic]
        for name, _, sub in partitions:
            if topic is None or name == topic:
                found.extend(segment_files(sub))
        if not found:
            raise click.UsageError(
                f"{p} holds no .log or .checkpoint files and no internal-topic partition "
                "folders (such as __consumer_offsets-0)"
            )
        out.extend(found)
    return out


def record_to_json(rec: DecodedRecord, topic: str) -> dict[str, Any]:
    """One output line: the record's position, kind, type and Kafka's JSON key/value objects."""
    obj: dict[str, Any] = {
        "offset": rec.offset,
        "timestamp": rec.timestamp,
        "kind": rec.kind,
        "recordType": rec.record_type,
        "name": rec.name,
    }
    if rec.kind == KIND_CONTROL:
        if isinstance(rec.value, EndTxnMarker):
            obj["value"] = {"coordinatorEpoch": rec.value.coordinator_epoch}
        elif rec.value is not None:
            obj["value"] = rec.value.to_json(getattr(rec.value, "version", 0))
        return obj
    if rec.kind in (ERROR, UNKNOWN):
        obj["error"] = rec.error
        obj["keyHex"] = None if rec.key_bytes is None else rec.key_bytes.hex()
        obj["valueHex"] = None if rec.value_bytes is None else rec.value_bytes.hex()
        return obj
    from codegen.dumps.dumplog_json import record_json

    key, value = record_json(rec, topic)
    if key is not None:
        obj["key"] = key
    else:
        obj["frameVersion"] = getattr(rec.key, "frame_version", 1)
    obj["value"] = value
    if rec.newer_than_spec:
        obj["newerThanSpec"] = True
    if rec.note:
        obj["note"] = rec.note
    return obj


@dataclass(slots=True)
class _Counts:
    files: int = 0
    batches: int = 0
    records: int = 0
    errors: int = 0
    unknown: int = 0
    newer: int = 0
    segment_errors: int = 0


def _batches(path: Path, topic: str) -> Iterator[DecodedBatch | SegmentError]:
    if topic == CLUSTER_METADATA:
        return decode_metadata_batches(str(path))
    return decode_batches(str(path), topic)


def _progress(total: int) -> tuple[AbstractContextManager[Any], Callable[[int], None]]:
    if total < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        return nullcontext(), lambda n: None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    )
    task = progress.add_task("decoding", total=total)
    return progress, lambda n: progress.advance(task, n)


def _table_records(out: TextIO, rows: list[DecodedRecord], topic: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("offset", "timestamp", "type", "key", "value", box=None)
    for rec in rows:
        obj = record_to_json(rec, topic)
        key = obj.get("key", {}).get("data") if isinstance(obj.get("key"), dict) else ""
        value = obj.get("value")
        if rec.kind in (ERROR, UNKNOWN):
            value = f"{rec.kind}: {rec.error}"
        elif isinstance(value, dict) and "data" in value:
            value = value["data"]
        table.add_row(
            str(rec.offset),
            str(rec.timestamp),
            rec.name or str(rec.record_type),
            json.dumps(key, separators=(",", ":")) if key else "",
            "<tombstone>"
            if value is None
            else str(value)
            if isinstance(value, str)
            else json.dumps(value, separators=(",", ":")),
        )
    Console(file=out, width=200).print(table)


def _print_compacted(out: TextIO, view: Any, fmt: str) -> None:
    offsets = view.offset_rows()
    groups = view.group_rows()
    if fmt == "jsonl":
        for o in offsets:
            out.write(json.dumps({"view": "offset", **_asdict(o)}, separators=(",", ":")) + "\n")
        for g in groups:
            row = _asdict(g)
            row["members"] = [_asdict(m) for m in g.members.values()]
            out.write(json.dumps({"view": "group", **row}, separators=(",", ":")) + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, width=200)
    t = Table(
        "group",
        "topic",
        "partition",
        "offset",
        "leaderEpoch",
        "metadata",
        "commitTimestamp",
        title="committed offsets",
        box=None,
    )
    for o in offsets:
        t.add_row(
            o.group,
            o.topic,
            str(o.partition),
            str(o.offset),
            str(o.leader_epoch),
            o.metadata,
            str(o.commit_timestamp),
        )
    console.print(t)
    t = Table(
        "group",
        "type",
        "state",
        "protocol",
        "generation/epoch",
        "member",
        "client id",
        "host",
        "assignors",
        "assignment",
        title="groups",
        box=None,
    )
    for g in groups:
        gen = g.generation if g.generation is not None else g.epoch
        protocol = "/".join(p for p in (g.protocol_type, g.protocol) if p)
        members = list(g.members.values()) or [None]
        for i, m in enumerate(members):
            head = (g.group, g.type, g.state, protocol, str(gen)) if i == 0 else ("",) * 5
            if m is None:
                t.add_row(*head, "", "", "", "", "")
            else:
                assignment = ", ".join(
                    f"{tp}:{','.join(map(str, ps))}" for tp, ps in sorted(m.assignment.items())
                )
                t.add_row(
                    *head,
                    m.member_id,
                    m.client_id,
                    m.client_host,
                    ",".join(m.assignors),
                    assignment,
                )
    console.print(t)


def _asdict(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in obj.__slots__ if name != "members"}


@click.command(name="dump")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--topic",
    type=click.Choice([*TOPIC_CHOICES, "auto"]),
    default="auto",
    show_default=True,
    help="Internal topic the files belong to; auto guesses from the folder or file name.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "table", "dump-log"]),
    default="jsonl",
    show_default=True,
    help="One JSON object per line, a table, or kafka-dump-log's own text.",
)
@click.option(
    "--compacted",
    is_flag=True,
    help="Print the latest state instead of every record: committed offsets and groups "
    "(__consumer_offsets only).",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not print the summary on stderr.")
def dump_command(
    paths: tuple[Path, ...], topic: str, fmt: str, compacted: bool, quiet: bool
) -> None:
    """Decode __consumer_offsets, __transaction_state, __share_group_state and
    __cluster_metadata segments (.log) and KRaft snapshots (.checkpoint).

    PATH is a segment file, a snapshot, a partition folder (its .log and .checkpoint files
    are read in name order), or a broker's log folder (its internal-topic partition folders,
    of --topic only when given). Each record becomes one JSON line holding the same key and value
    JSON kafka-dump-log prints with its --offsets-decoder, --transaction-log-decoder,
    --share-group-state-decoder and --cluster-metadata-decoder. A summary (records, errors,
    unknown records) goes to stderr.

    \b
    Examples:
      python -m codegen dump /var/kafka/__consumer_offsets-0
      python -m codegen dump /var/kafka --topic transactions
      python -m codegen dump 00000000000000000000.log --topic offsets --format table
      python -m codegen dump /var/kafka/__consumer_offsets-* --compacted
      python -m codegen dump __cluster_metadata-0/00000000000000007259-0000000001.checkpoint
      python -m codegen dump /var/kafka/__consumer_offsets-0 --format dump-log
    """
    files = _files(paths, TOPIC_CHOICES[topic] if topic != "auto" else None)
    topics: list[tuple[Path, str]] = []
    for f in files:
        t = TOPIC_CHOICES.get(topic) if topic != "auto" else guess_topic(f)
        if t is None:
            raise click.UsageError(f"cannot tell which internal topic {f} holds; pass --topic")
        topics.append((f, t))
    if compacted and any(t != CONSUMER_OFFSETS for _, t in topics):
        raise click.UsageError("--compacted works on __consumer_offsets files only")
    out: TextIO = sys.stdout
    counts = _Counts()

    if fmt == "dump-log":
        from codegen.dumps.dumplog_json import dump_log_lines

        for f, t in topics:
            for line in dump_log_lines(str(f), t):
                out.write(line + "\n")
        return

    from codegen.dumps.compacted import CompactedView

    view = CompactedView() if compacted else None
    table_rows: list[DecodedRecord] = []
    total = sum(os.path.getsize(f) for f, _ in topics)
    bar, advance = _progress(total)
    write = out.write
    with bar:
        for f, t in topics:
            counts.files += 1
            for item in _batches(f, t):
                if isinstance(item, SegmentError):
                    counts.segment_errors += 1
                    click.echo(f"segment error: {item}", err=True)
                    advance(item.size)
                    continue
                advance(item.batch.size)
                counts.batches += 1
                for rec in item.records:
                    counts.records += 1
                    if rec.kind == ERROR:
                        counts.errors += 1
                    elif rec.kind == UNKNOWN:
                        counts.unknown += 1
                    if rec.newer_than_spec:
                        counts.newer += 1
                if view is not None:
                    view.add_batch(item)
                elif fmt == "table":
                    table_rows.extend(item.records)
                else:
                    for rec in item.records:
                        write(json.dumps(record_to_json(rec, t), separators=(",", ":")) + "\n")
    if view is not None:
        _print_compacted(out, view, fmt)
    elif fmt == "table":
        _table_records(out, table_rows, topics[0][1] if topics else CONSUMER_OFFSETS)
    if not quiet:
        click.echo(
            f"{counts.files} file(s), {counts.batches} batches, {counts.records} records, "
            f"{counts.errors} errors, {counts.unknown} unknown records, "
            f"{counts.newer} newer than our specs, {counts.segment_errors} segment errors",
            err=True,
        )
