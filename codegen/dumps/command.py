"""``python -m codegen dump``: decode internal-topic segments and snapshots."""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

import click

from codegen.dumps.batches import DEFAULT_MAX_BATCH_RECORDS, RECORD_BATCH_OVERHEAD
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    ERROR,
    KIND_CONTROL,
    SHARE_GROUP_STATE,
    SHIPPED_PACKAGE,
    TRANSACTION_STATE,
    UNKNOWN,
    DecodedBatch,
    DecodedRecord,
    EndTxnMarker,
    PackageError,
    decode_batches,
    package_messages,
)
from codegen.dumps.metadata import CLUSTER_METADATA, decode_metadata_batches
from codegen.dumps.model import RecordBatch, SegmentError
from codegen.dumps.segments import segment_files
from codegen.extras import MissingExtraError

__all__ = [
    "EXIT_CLEAN",
    "EXIT_DAMAGE",
    "EXIT_USAGE",
    "TOPIC_CHOICES",
    "dump_command",
    "guess_topic",
    "record_to_json",
    "segment_error_to_json",
]

EXIT_CLEAN: Final = 0
"""Every entry read and every record decoded (unknown record types, skipped by design, too)."""
EXIT_DAMAGE: Final = 1
"""Something was reported as an error: a segment error or a record that did not decode."""
EXIT_USAGE: Final = 2
"""Bad options or paths (click's usage errors)."""

TOPIC_CHOICES: Final = {
    "offsets": CONSUMER_OFFSETS,
    "transactions": TRANSACTION_STATE,
    "share-state": SHARE_GROUP_STATE,
    "cluster-metadata": CLUSTER_METADATA,
}
PROGRESS_MIN_BYTES: Final = 32 << 20
"""Inputs at least this large get a progress bar (when stderr is a terminal)."""
STDERR_ERROR_LINES: Final = 100
"""Errors echoed one per line on stderr before the rest are only counted (all are in the
output)."""
SEGMENT_ERROR: Final = "segment-error"
"""``kind`` of the output line of a stretch of a file that could not be read."""


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


def record_to_json(
    rec: DecodedRecord, topic: str, batch: RecordBatch | None = None
) -> dict[str, Any]:
    """One output line: the record's position, kind, type and Kafka's JSON key/value objects.

    An ``error`` record also says where its batch is (``file``, ``batchPosition``) when
    ``batch`` is given.
    """
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
        if batch is not None and rec.kind == ERROR:
            obj["file"] = batch.file
            obj["batchPosition"] = batch.position
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


def segment_error_to_json(err: SegmentError) -> dict[str, Any]:
    """The output line of a segment error: where (file, byte position and size, the entry's
    base offset when it could be read), what kind of error and why."""
    return {
        "kind": SEGMENT_ERROR,
        "file": err.file,
        "position": err.position,
        "size": err.size,
        "baseOffset": err.base_offset,
        "errorKind": str(err.kind),
        "error": err.reason,
    }


@dataclass(slots=True)
class _Counts:
    """What was read, and the errors echoed on stderr as they are found."""

    quiet: bool
    files: int = 0
    batches: int = 0
    records: int = 0
    errors: int = 0
    unknown: int = 0
    newer: int = 0
    segment_errors: int = 0
    batch: RecordBatch | None = None
    """The batch the records being counted belong to (for their error lines)."""

    @property
    def damaged(self) -> bool:
        return bool(self.errors or self.segment_errors)

    def _echo(self, line: str) -> None:
        shown = self.errors + self.segment_errors
        if self.quiet or shown > STDERR_ERROR_LINES:
            return
        if shown == STDERR_ERROR_LINES:
            line += " (further errors are in the output only, not on stderr)"
        click.echo(line, err=True)

    def add(self, item: RecordBatch | SegmentError | DecodedRecord) -> None:
        if isinstance(item, DecodedRecord):
            if item.kind == ERROR:
                self.errors += 1
                where = "" if self.batch is None else f"{self.batch.file}@{self.batch.position}: "
                self._echo(f"record error: {where}offset {item.offset}: {item.error}")
            elif item.kind == UNKNOWN:
                self.unknown += 1
            if item.newer_than_spec:
                self.newer += 1
        elif isinstance(item, SegmentError):
            self.segment_errors += 1
            self._echo(f"segment error: {item}")
        else:
            self.batches += 1
            self.records += len(item.records)
            self.batch = item

    def summary(self) -> str:
        return (
            f"{self.files} file(s), {self.batches} batches, {self.records} records, "
            f"{self.errors} errors, {self.unknown} unknown records, "
            f"{self.newer} newer than our specs, {self.segment_errors} segment errors"
        )


def _batches(
    path: Path, topic: str, max_batch_size: int, max_batch_records: int, package: str
) -> Iterator[DecodedBatch | SegmentError]:
    if topic == CLUSTER_METADATA:
        return decode_metadata_batches(
            str(path),
            package=package,
            max_batch_size=max_batch_size,
            max_batch_records=max_batch_records,
        )
    return decode_batches(
        str(path),
        topic,
        package=package,
        max_batch_size=max_batch_size,
        max_batch_records=max_batch_records,
    )


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


def _table_records(
    out: TextIO, rows: list[DecodedRecord | SegmentError], topic: str, title: str | None = None
) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("offset", "timestamp", "type", "key", "value", title=title, box=None)
    for rec in rows:
        if isinstance(rec, SegmentError):
            table.add_row(
                "" if rec.base_offset is None else str(rec.base_offset),
                "",
                SEGMENT_ERROR,
                "",
                f"{rec.kind} at {rec.file}@{rec.position} ({rec.size} bytes): {rec.reason}",
            )
            continue
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


_Damage = list[tuple[DecodedRecord, RecordBatch] | SegmentError]
"""Segment errors and error records (with their batch), in file order."""


def _damage_json(item: tuple[DecodedRecord, RecordBatch] | SegmentError, topic: str) -> str:
    if isinstance(item, SegmentError):
        obj = segment_error_to_json(item)
    else:
        obj = record_to_json(item[0], topic, item[1])
    return json.dumps(obj, separators=(",", ":")) + "\n"


def _print_compacted(out: TextIO, view: Any, fmt: str, damage: _Damage, topic: str) -> None:
    offsets = view.offset_rows()
    groups = view.group_rows()
    if fmt == "jsonl":
        for item in damage:
            out.write(_damage_json(item, topic))
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
    if damage:
        rows = [i if isinstance(i, SegmentError) else i[0] for i in damage]
        _table_records(out, rows, topic, title="errors")


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
@click.option(
    "--max-batch-bytes",
    type=click.IntRange(min=RECORD_BATCH_OVERHEAD),
    default=DEFAULT_MAX_DECOMPRESSED_SIZE,
    show_default=True,
    help="Largest batch read, as stored and decompressed; a larger one is a too-large error.",
)
@click.option(
    "--max-batch-records",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BATCH_RECORDS,
    show_default=True,
    help="Most records a batch may hold; a batch claiming more is a too-many-records error "
    "(found before it is decompressed).",
)
@click.option(
    "--package",
    "package",
    metavar="NAME",
    help="Decode with this importable generated package (dotted name) instead of the shipped "
    "codecs, e.g. one generated from the specs of the Kafka release that wrote the files.",
)
@click.option(
    "--specs",
    "specs",
    type=click.Path(exists=True, path_type=Path),
    multiple=True,
    help="Spec file or folder (repeatable): generate codecs from these specs into a temporary "
    "folder, removed at the end, and decode with them (needs the generator extra). Keep the "
    "specs in folders named as Kafka's (consumer_offsets, transaction_state, "
    "share_group_state, cluster_metadata): the folder says which topic a record type is of.",
)
@click.option(
    "--quiet", "-q", is_flag=True, help="Print neither the errors nor the summary on stderr."
)
def dump_command(
    paths: tuple[Path, ...],
    topic: str,
    fmt: str,
    compacted: bool,
    max_batch_bytes: int,
    max_batch_records: int,
    package: str | None,
    specs: tuple[Path, ...],
    quiet: bool,
) -> None:
    """Decode __consumer_offsets, __transaction_state, __share_group_state and
    __cluster_metadata segments (.log) and KRaft snapshots (.checkpoint).

    PATH is a segment file, a snapshot, a partition folder (its .log and .checkpoint files
    are read in name order), or a broker's log folder (its internal-topic partition folders,
    of --topic only when given). Each record becomes one JSON line holding the same key and value
    JSON kafka-dump-log prints with its --offsets-decoder, --transaction-log-decoder,
    --share-group-state-decoder and --cluster-metadata-decoder. Each error is in the output
    too: a segment-error line (file, position, size, errorKind, error) for a stretch of a file
    that could not be read, an error line for a record that did not decode (a row of the table;
    kafka-dump-log's own lines with --format dump-log). The errors and a summary (records,
    errors, unknown records) go to stderr.

    \b
    Exit codes:
      0  clean: every entry read and every record decoded (records of unknown types, which
         KIP-915 readers skip by design, are counted but are not errors)
      1  damage: a segment error (corrupt or cut-short batch, zero padding, a batch over
         --max-batch-bytes or --max-batch-records) or a record that did not decode
      2  usage error: bad options, a path that does not exist or cannot be read, a folder
         with nothing to read, a file whose topic cannot be told

    \b
    Examples:
      python -m codegen dump /var/kafka/__consumer_offsets-0
      python -m codegen dump /var/kafka --topic transactions
      python -m codegen dump 00000000000000000000.log --topic offsets --format table
      python -m codegen dump /var/kafka/__consumer_offsets-* --compacted
      python -m codegen dump __cluster_metadata-0/00000000000000007259-0000000001.checkpoint
      python -m codegen dump /var/kafka/__consumer_offsets-0 --format dump-log
      python -m codegen dump /var/kafka/__consumer_offsets-0 --package mycodecs
      python -m codegen dump /var/kafka/__consumer_offsets-0 --specs kafka-4.2/specs
    """
    if package and specs:
        raise click.UsageError("give --package or --specs, not both")
    files = _files(paths, TOPIC_CHOICES[topic] if topic != "auto" else None)
    topics: list[tuple[Path, str]] = []
    for f in files:
        t = TOPIC_CHOICES.get(topic) if topic != "auto" else guess_topic(f)
        if t is None:
            raise click.UsageError(f"cannot tell which internal topic {f} holds; pass --topic")
        topics.append((f, t))
    if compacted and any(t != CONSUMER_OFFSETS for _, t in topics):
        raise click.UsageError("--compacted works on __consumer_offsets files only")
    counts = _Counts(quiet)
    try:
        with _codecs(package, specs) as codecs:
            if fmt == "dump-log":
                _dump_log(topics, counts, max_batch_bytes, max_batch_records, codecs)
            else:
                _decode(topics, counts, fmt, compacted, max_batch_bytes, max_batch_records, codecs)
    except OSError as exc:
        raise click.UsageError(f"cannot read {exc.filename or 'the input'}: {exc}") from None
    if not quiet:
        click.echo(counts.summary(), err=True)
    if counts.damaged:
        raise SystemExit(EXIT_DAMAGE)


@contextmanager
def _codecs(package: str | None, specs: tuple[Path, ...]) -> Iterator[str]:
    """The name of the package to decode with: ``--package``, the shipped one, or a package
    generated from ``--specs`` into a temporary folder (importable while the command runs)."""
    if not specs:
        name = package or SHIPPED_PACKAGE
        try:
            package_messages(name)
        except PackageError as exc:
            raise click.BadParameter(str(exc), param_hint="--package") from None
        yield name
        return
    try:
        from codegen.emit import write_package
        from codegen.errors import NoSpecsError, SpecErrors
    except MissingExtraError as exc:
        raise click.UsageError(exc.text("dump --specs")) from None
    name = f"kafka_specgen_dump_{uuid.uuid4().hex[:12]}"
    with tempfile.TemporaryDirectory(prefix="kafka-specgen-dump-") as tmp:
        try:
            write_package(list(specs), Path(tmp) / name)
        except SpecErrors as exc:
            problems = "\n".join(str(p) for p in exc.problems)
            raise click.UsageError(
                f"--specs: {len(exc.problems)} problem(s):\n{problems}"
            ) from None
        except NoSpecsError as exc:
            raise click.BadParameter(str(exc), param_hint="--specs") from None
        sys.path.insert(0, tmp)
        try:
            importlib.import_module(name)
            yield name
        finally:
            sys.path.remove(tmp)
            for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                del sys.modules[mod]


def _dump_log(
    topics: list[tuple[Path, str]],
    counts: _Counts,
    max_batch_size: int,
    max_batch_records: int,
    package: str = SHIPPED_PACKAGE,
) -> None:
    from codegen.dumps.dumplog_json import dump_log_lines

    write = sys.stdout.write
    for f, t in topics:
        counts.files += 1
        lines = dump_log_lines(
            str(f),
            t,
            max_batch_size=max_batch_size,
            max_batch_records=max_batch_records,
            observe=counts.add,
            package=package,
        )
        for line in lines:
            write(line + "\n")


def _decode(
    topics: list[tuple[Path, str]],
    counts: _Counts,
    fmt: str,
    compacted: bool,
    max_batch_size: int,
    max_batch_records: int,
    package: str = SHIPPED_PACKAGE,
) -> None:
    from codegen.dumps.compacted import CompactedView

    out: TextIO = sys.stdout
    view = CompactedView() if compacted else None
    table_rows: list[DecodedRecord | SegmentError] = []
    damage: _Damage = []  # the errors, for the compacted views
    total = sum(os.path.getsize(f) for f, _ in topics)
    bar, advance = _progress(total)
    write = out.write
    add = counts.add
    with bar:
        for f, t in topics:
            counts.files += 1
            for item in _batches(f, t, max_batch_size, max_batch_records, package):
                if isinstance(item, SegmentError):
                    add(item)
                    advance(item.size)
                    if view is not None:
                        damage.append(item)
                    elif fmt == "table":
                        table_rows.append(item)
                    else:
                        write(_damage_json(item, t))
                    continue
                advance(item.batch.size)
                add(item.batch)
                counts.records += len(item.records)  # the batch's records list is emptied
                for rec in item.records:
                    add(rec)
                if view is not None:
                    view.add_batch(item)
                    damage.extend((rec, item.batch) for rec in item.records if rec.kind == ERROR)
                elif fmt == "table":
                    table_rows.extend(item.records)
                else:
                    batch = item.batch
                    for rec in item.records:
                        obj = record_to_json(rec, t, batch)
                        write(json.dumps(obj, separators=(",", ":")) + "\n")
    if view is not None:
        _print_compacted(out, view, fmt, damage, topics[0][1] if topics else CONSUMER_OFFSETS)
    elif fmt == "table":
        _table_records(out, table_rows, topics[0][1] if topics else CONSUMER_OFFSETS)
