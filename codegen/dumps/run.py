"""The loops of ``dump``: read each file, decode its records, feed a view or print them.

:func:`decode_files` is the loop of ``--format jsonl`` and ``table`` and of the ``--compacted``
views, :func:`dump_log_run` that of ``--format dump-log``; :class:`Counts` keeps what they read
and the errors they found (echoed on stderr as they come, summed up at the end).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Final, TextIO

import click

from codegen.dumps import jsonl, table
from codegen.dumps.batches import DEFAULT_MAX_BATCH_RECORDS
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from codegen.dumps.coordinator import CONSUMER_OFFSETS, coordinator_decoder, decode_batches
from codegen.dumps.decoded import (
    ERROR,
    RECORD,
    UNKNOWN,
    DecodedBatch,
    DecodedRecord,
    control_record,
)
from codegen.dumps.entry_format import DEFAULT_MAX_MESSAGE_SIZE
from codegen.dumps.log_dirs import LOG_FOLDER_SUFFIXES, TXN_INDEX, RowSource
from codegen.dumps.metadata import METADATA_TOPICS, decode_metadata_batches
from codegen.dumps.model import ErrorKind, RecordBatch, RecordError, SegmentError, error_line
from codegen.dumps.packages import SHIPPED_PACKAGE
from codegen.dumps.record_json import BatchPlace, Damage, compact_json
from codegen.dumps.segments import SegmentReader
from codegen.dumps.storage import StoragePath
from codegen.dumps.text_table import table_text
from codegen.gc_pause import gc_paused
from codegen.slotted import Slotted
from codegen.text import plural

if TYPE_CHECKING:
    import pyarrow as pa

    from codegen.dumps.dumplog_json import NonConsecutive
    from codegen.dumps.user_topics import UserTopicDecoder
    from codegen.dumps.views.committed import CommittedOffsets
    from codegen.dumps.views.compacted import CompactedView
    from codegen.dumps.views.latest import LatestByKey

# Imported where they are used, as start-up costs every command: the .txnindex and index
# readers (codegen.dumps.log_files, which loads a generated module), the dump-log text
# (codegen.dumps.dumplog_json) and, for --compacted only, the views (codegen.dumps.views,
# whose package loads pyarrow and numpy).

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "PROGRESS_MIN_BYTES",
    "WRITE_SIZE",
    "ByteOutput",
    "Counts",
    "decode_files",
    "dump_log_run",
    "progress",
    "remote_log_compacted",
]

PROGRESS_MIN_BYTES: Final = 32 << 20
"""Inputs at least this large get a progress bar (when stderr is a terminal)."""
STDERR_ERROR_LINES: Final = 100
"""Errors echoed one per line on stderr before the rest are only counted (all are in the
output)."""
WRITE_SIZE: Final = 1 << 20
"""Bytes :class:`ByteOutput` gathers before it writes."""


class Counts(Slotted):
    """What was read, and the errors echoed on stderr as they are found."""

    quiet: bool
    files: int = 0
    batches: int = 0
    records: int = 0
    errors: int = 0
    unknown: int = 0
    newer: int = 0
    segment_errors: int = 0
    overlapped: int = 0
    """Batches of a remote segment at or past the next segment's base offset: the next
    segment (or the local log) holds those offsets, and is read for them."""
    batch: RecordBatch | BatchPlace | None = None
    """The batch the records being counted belong to (for their error lines)."""

    @property
    def damaged(self) -> bool:
        return bool(self.errors or self.segment_errors)

    def echo(self, line: str) -> None:
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
                place = self.batch
                file, position = (None, 0) if place is None else (place.file, place.position)
                self.echo(error_line(RecordError(file, position, item.offset, str(item.error))))
            elif item.kind == UNKNOWN:
                self.unknown += 1
            if item.newer_than_spec:
                self.newer += 1
        elif isinstance(item, SegmentError):
            self.segment_errors += 1
            self.echo(error_line(item))
        else:
            self.batches += 1
            self.records += item.record_count  # the records read (the list may be emptied)
            self.batch = item
            if not item.crc_valid:  # only --format dump-log reads such batches
                self.segment_errors += 1
                self.echo(
                    f"segment error: {item.file}@{item.position}: {ErrorKind.CRC_MISMATCH} "
                    f"(base offset {item.base_offset}): batch printed with isvalid: false"
                )

    def add_newer(self, n: int) -> None:
        """Count ``n`` records newer than our specs (printed without their objects)."""
        self.newer += n

    def add_records(self, records: list[DecodedRecord]) -> None:
        """:meth:`add` for the records that count (errors, unknown, newer than our specs)."""
        for rec in records:
            if rec.kind in jsonl.NOTED_KINDS or rec.newer_than_spec:
                self.add(rec)

    def summary(self) -> str:
        """``3 files, 9 batches, 120 records, 2 errors (1 segment error, 1 record not
        decoded), 0 unknown records, 0 newer than our specs``: every error counted in one
        total, then by kind."""
        errors = plural(self.errors + self.segment_errors, "error")
        if self.damaged:
            errors += (
                f" ({plural(self.segment_errors, 'segment error')}, "
                f"{plural(self.errors, 'record')} not decoded)"
            )
        return (
            f"{plural(self.files, 'file')}, {plural(self.batches, 'batch')}, "
            f"{plural(self.records, 'record')}, {errors}, "
            f"{plural(self.unknown, 'unknown record')}, {self.newer} newer than our specs"
            + (
                f", {plural(self.overlapped, 'batch')} of remote segments read from the next "
                "segment instead"
                if self.overlapped
                else ""
            )
        )


def progress(total: int) -> tuple[AbstractContextManager[Any], Callable[[int], None]]:
    """A progress bar on stderr for ``total`` bytes, and the function that advances it (no bar
    for small inputs or where stderr is not a terminal)."""
    if total < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        return nullcontext(), lambda n: None
    from rich.console import Console  # only for a bar: rich costs start-up time
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    )
    task = bar.add_task("decoding", total=total)
    # The bar moves by a 500th of the work at least: a call per log batch (tens of thousands
    # a second) cost a fifth of a command's time in a terminal.
    step = max(total // 500, 1)
    pending = 0

    def advance(n: int) -> None:
        nonlocal pending
        pending += n
        if pending >= step:
            bar.advance(task, pending)
            pending = 0

    return bar, advance


class ByteOutput:
    """UTF-8 bytes to ``out``: to its binary buffer when it has one (a file, a pipe), else as
    text. Gathered into writes of about :data:`WRITE_SIZE` (a batch's lines, some 10 kB,
    pass the buffer's 8 kB and would each be a system call), except to a terminal, where
    lines show as they come. A ``with`` block writes what is gathered as it ends, error or
    not."""

    def __init__(self, out: TextIO) -> None:
        buffer = getattr(out, "buffer", None)
        if buffer is None:
            self._write: Callable[[bytes], Any] = lambda data: out.write(data.decode())
        else:
            out.flush()
            self._write = buffer.write
        self._gather = buffer is not None and not out.isatty()
        self._parts: list[bytes] = []
        self._size = 0

    def write(self, data: bytes) -> None:
        if not self._gather:
            self._write(data)
            return
        self._parts.append(data)
        self._size += len(data)
        if self._size >= WRITE_SIZE:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            data = b"".join(self._parts)
            self._parts, self._size = [], 0
            self._write(data)

    def __enter__(self) -> ByteOutput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()


# ------------------------------------------------------------------------ the records of a file


def _batches(
    path: StoragePath,
    topic: str,
    max_batch_size: int,
    max_batch_records: int,
    package: str,
    user: dict[str, UserTopicDecoder] | None = None,
    *,
    as_bytes: bool = False,
) -> Iterator[DecodedBatch | SegmentError]:
    """The decoded batches of a file of ``topic``: by the topic map's decoder, the metadata
    decoder (``__cluster_metadata``, ``__remote_log_metadata``) or the coordinator topic's.
    ``as_bytes``: a user topic's v2 data batches as their bytes (``BatchBytes``), for the
    jsonl printer of record bytes."""
    if user and topic in user:
        if as_bytes:
            return user[topic].byte_batches(
                path, max_batch_size=max_batch_size, max_batch_records=max_batch_records
            )
        return user[topic].batches(
            path, max_batch_size=max_batch_size, max_batch_records=max_batch_records
        )
    if topic in METADATA_TOPICS:
        return decode_metadata_batches(
            path,
            package=package,
            max_batch_size=max_batch_size,
            max_batch_records=max_batch_records,
            topic=topic,
        )
    return decode_batches(
        path,
        topic,
        package=package,
        max_batch_size=max_batch_size,
        max_batch_records=max_batch_records,
    )


def _plain_batches(
    path: StoragePath, max_batch_size: int, max_batch_records: int
) -> Iterator[DecodedBatch | SegmentError]:
    """The batches of an ordinary topic's segment: data records kept as raw rows (in a
    DecodedRecord's byte fields), control records decoded."""
    reader = SegmentReader(path, max_batch_size=max_batch_size, max_batch_records=max_batch_records)
    for item in reader.raw_batches():
        if isinstance(item, SegmentError):
            yield item
            continue
        batch, rows = item
        if batch.is_control:
            records = [control_record(row) for row in rows]
        else:
            records = [
                DecodedRecord(o, ts, RECORD, -1, "", None, None, -1, k, v) for o, ts, k, v in rows
            ]
        yield DecodedBatch(batch, records)


def _transaction_index(
    path: StoragePath,
    source: RowSource,
    fmt: str,
    counts: Counts,
    table_rows: list[table.TableRow],
    write: Callable[[bytes], Any],
) -> None:
    """The entries of a ``.txnindex``: a jsonl line or table row each, decoded by the generated
    ``AbortedTxn``; an entry of an unknown version or a torn tail is an error line (exit 1)."""
    from codegen.dumps.log_files import TxnIndexError, read_transaction_index

    fields = source.json_fields()
    try:
        for entry in read_transaction_index(path):
            counts.records += 1
            if fmt == "table":
                table_rows.append((entry, None, source))
            else:
                write(jsonl.aborted_txn_line(entry, fields))
    except TxnIndexError as exc:
        counts.errors += 1
        counts.echo(f"transaction index error: {path}@{exc.position}: {exc}")
        if fmt == "table":
            table_rows.append((exc, None, source))
        else:
            write(jsonl.transaction_index_error_line(exc, fields))


def _compacted_columns(
    path: StoragePath,
    view: CompactedView,
    offsets: CommittedOffsets,
    package: str,
    counts: Counts,
    damage: Damage,
    advance: Callable[[int], None],
    limits: tuple[int, int],
) -> None:
    """One ``__consumer_offsets`` file into the compacted view, from the engine's columns."""
    from codegen.dumps.views.consumer_offsets import read_compacted

    decoder = coordinator_decoder(CONSUMER_OFFSETS, package)
    name = str(path)
    done = 0
    for chunk in read_compacted(
        path,
        view,
        offsets,
        decoder,
        max_batch_size=limits[0],
        max_batch_records=limits[1],
    ):
        counts.batches += chunk.batches
        counts.records += chunk.records
        counts.unknown += chunk.unknown
        counts.newer += chunk.newer
        found: list[tuple[int, SegmentError | DecodedRecord]] = [
            (err.position, err) for err in chunk.segment_errors
        ]
        found += chunk.errors
        for position, item in sorted(found, key=lambda x: x[0]):  # in file order
            if isinstance(item, SegmentError):
                counts.add(item)
                damage.append(item)
            else:
                counts.batch = BatchPlace(name, position)
                counts.add(item)
                damage.append((item, counts.batch))
        advance(max(chunk.position - done, 0))
        done = max(done, chunk.position)
    advance(max(path.stat().st_size - done, 0))


# --------------------------------------------------------------------------------- the loops


def decode_files(
    topics: list[tuple[StoragePath, str | None]],
    counts: Counts,
    fmt: str,
    compacted: bool,
    max_batch_size: int,
    max_batch_records: int,
    package: str = SHIPPED_PACKAGE,
    user: dict[str, UserTopicDecoder] | None = None,
    bounds: Mapping[StoragePath, int] | None = None,
) -> None:
    """Read each file of ``topics`` (path, its decoder's topic or None: plain) in order and
    print its records (``fmt``: jsonl or table), or feed them to the ``--compacted`` view and
    print that at the end. ``bounds``: the offset below which a file's batches are read (a
    remote segment's, :func:`codegen.dumps.log_dirs.tiered_order`)."""
    bounds = bounds or {}
    out: TextIO = sys.stdout
    view: CompactedView | None = None
    latest: LatestByKey | None = None
    offsets: CommittedOffsets | None = None
    if compacted:
        from codegen.dumps.views.committed import CommittedOffsets
        from codegen.dumps.views.compacted import CompactedView
        from codegen.dumps.views.latest import LatestByKey

        if user and topics[0][1] in user:
            view = latest = LatestByKey()
        else:
            view = CompactedView()
            offsets = CommittedOffsets(package=package)
    partition_folder: StoragePath | None = None
    limits = (max_batch_size, max_batch_records)
    table_rows: list[table.TableRow] = []
    table_more = 0  # the rows of the table's UserCells past one each
    damage: Damage = []  # the errors, for the compacted views
    total = sum(f.stat().st_size for f, _ in topics)
    bar, advance = progress(total)
    output = ByteOutput(out)
    write = output.write
    add = counts.add
    # the GC paused while records are read and kept (a table's rows, a view's live keys): each
    # collection would walk every kept one again (half of a user topic's table time)
    with output, bar, gc_paused():
        for f, t in topics:
            counts.files += 1
            source = RowSource.of(f, t)
            file_fields = source.json_fields()
            if f.suffix == TXN_INDEX:
                _transaction_index(f, source, fmt, counts, table_rows, write)
                advance(f.stat().st_size)
                continue
            if latest is not None:
                latest.where = source
            if offsets is not None and t == CONSUMER_OFFSETS:
                assert view is not None
                if f.parent != partition_folder:
                    offsets.end_partition()
                    partition_folder = f.parent
                _compacted_columns(f, view, offsets, package, counts, damage, advance, limits)
                continue
            bound = bounds.get(f)
            decoder = user.get(t) if user and t is not None else None
            cells = None if decoder is None or fmt != "table" else table.user_cells_printer(decoder)
            lines = jsonl.JsonlLines(
                t, file_fields, user_topic=decoder is not None, decoder=decoder
            )
            batches = (
                _plain_batches(f, max_batch_size, max_batch_records)
                if t is None
                else _batches(
                    f,
                    t,
                    max_batch_size,
                    max_batch_records,
                    package,
                    user,
                    as_bytes=view is None and fmt in ("jsonl", "table"),
                )
            )
            for item in batches:
                if isinstance(item, SegmentError):
                    add(item)
                    advance(item.size)
                    if view is not None:
                        damage.append(item)
                    elif fmt == "table":
                        table_rows.append((item, t, source))
                    else:
                        write(jsonl.damage_line(item, t or "", file_fields).encode())
                    continue
                advance(item.batch.size)
                if bound is not None and item.batch.base_offset >= bound:
                    counts.overlapped += 1
                    continue
                add(item.batch)
                if view is None and fmt == "jsonl":
                    noted: list[DecodedRecord] = []
                    text = lines.batch(item.batch, item.records, noted)
                    if noted:
                        counts.add_records(noted)
                    write(text)
                    continue
                if jsonl.batch_bytes(item.records):  # a user topic's, for the table
                    made = None if cells is None else cells(item.records)
                    if made is not None:
                        counts.add_newer(made[1])
                        counts.add_records(made[0].holes)
                        table_rows.append((made[0], t, source))
                        table_more += len(made[0].rows) - 1
                        if len(table_rows) + table_more >= table.TABLE_ROWS:
                            table.records_table(out, table_rows)
                            table_rows, table_more = [], 0
                        continue
                    item.records = item.records.decoded()
                counts.add_records(item.records)
                if view is not None:
                    view.add_batch(item)
                    damage.extend((rec, item.batch) for rec in item.records if rec.kind == ERROR)
                elif fmt == "table":
                    table_rows.append((item.records, t, source))
                    table_more += len(item.records) - 1
                    if len(table_rows) + table_more >= table.TABLE_ROWS:  # a table at a time
                        table.records_table(out, table_rows)
                        table_rows, table_more = [], 0
                else:
                    write(lines.batch(item.batch, item.records))
            counts.newer += lines.newer_printed
    if latest is not None:
        with gc_paused():
            rows = latest.rows()
            if fmt == "jsonl":
                jsonl.latest_lines(out, rows, damage)
            else:
                table.latest_tables(out, rows, damage)
    elif view is not None:
        assert offsets is not None
        _print_compacted(out, view, offsets.table(), fmt, damage, topics[0][1] or CONSUMER_OFFSETS)
    elif fmt == "table":
        table.records_table(out, table_rows)


def _print_compacted(
    out: TextIO, view: CompactedView, offset_table: pa.Table, fmt: str, damage: Damage, topic: str
) -> None:
    """The committed offsets (``codegen.dumps.views.commit_rows.OFFSET_SCHEMA`` rows) and the
    groups."""
    groups = view.group_rows(offset_table.column("group").unique().to_pylist())
    if fmt == "jsonl":
        jsonl.compacted_lines(out, offset_table, groups, damage, topic)
    else:
        table.compacted_tables(out, offset_table.to_pylist(), groups, damage, topic)


def remote_log_compacted(files: Sequence[StoragePath], counts: Counts, fmt: str) -> None:
    """``--compacted`` of ``__remote_log_metadata`` files: each remote segment's latest state
    (and its states' times), as the tiered-storage view (:mod:`codegen.dumps.views.tiered`) gives
    them from the metadata alone; a jsonl line (``kind`` ``remote-segment``) or table row
    each, by topic, partition and offsets. Records that did not decode are errors."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from codegen.dumps.views.tiered import DEFAULT_STUCK_AFTER_MS, report
    from codegen.dumps.views.tiered_facts import metadata_facts, read_metadata_rows

    tables = []
    for f in files:
        counts.files += 1
        rows = read_metadata_rows(f, RowSource.of(f, None).partition or 0)
        if rows is None:
            continue
        counts.records += rows.num_rows
        counts.batches += len(set(rows.column("batchPosition").to_pylist()))
        for offset, error in zip(
            rows.column("offset").to_pylist(),
            pc.coalesce(rows.column("_error"), rows.column("_decode_error")).to_pylist(),
            strict=True,
        ):
            if error is not None:
                counts.errors += 1
                counts.echo(f"record error: {f}: offset {offset}: {error}")
        tables.append(rows)
    facts = metadata_facts(pa.concat_tables(tables)) if tables else None
    if facts is None or facts.num_rows == 0:
        return
    times = [t for t in facts.column("timeMs").to_pylist() if t is not None]
    sections = report(
        facts, max(times, default=0), DEFAULT_STUCK_AFTER_MS, has_metadata=True, has_listing=False
    )
    segments = sections.segments.drop_columns(["files", "filesBytes", "missingFiles"])
    out = sys.stdout
    if fmt == "jsonl":
        for row in segments.to_pylist():
            out.write(compact_json({"kind": "remote-segment", **row}).decode() + "\n")
        return

    def cell(v: Any) -> str:
        return "-" if v is None else str(v)

    out.write(
        table_text(
            ["partition", "segment", "offsets", "state", "status", "broker", "bytes", "epochs"],
            [
                [
                    f"{r['topic']}-{r['partition']}",
                    r["segmentId"],
                    f"{cell(r['startOffset'])}..{cell(r['endOffset'])}",
                    cell(r["state"]),
                    r["status"],
                    cell(r["brokerId"]),
                    cell(r["sizeBytes"]),
                    " ".join(f"{e['epoch']}@{e['offset']}" for e in r["leaderEpochs"] or []),
                ]
                for r in segments.to_pylist()
            ],
            title="remote segments: latest state",
        )
    )


def dump_log_run(
    files: Sequence[StoragePath],
    topics: Sequence[str | None],
    *,
    skip_record_metadata: bool = False,
    max_bytes: int | None = None,
    verify_index_only: bool = False,
    index_sanity_check: bool = False,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    counts: Counts | None = None,
    package: str = SHIPPED_PACKAGE,
    user: dict[str, UserTopicDecoder] | None = None,
) -> bool:
    """Print what ``kafka-dump-log --files F1,F2,.. --deep-iteration --print-data-log`` (with
    the decoder of each file's topic, None for none) prints: stdout to stdout, its notes and
    the closing blocks (non-consecutive offsets, index mismatches) to stderr.

    ``package`` is the generated package whose classes decode the records; ``user`` the
    decoders of the user topics among ``topics`` (their payloads are the decoded JSON). Returns
    True when Kafka's tool would have stopped with an error (a record its decoder cannot take);
    the message is then on stderr and the rest is not printed, as in Kafka.
    """
    from codegen.dumps.dumplog_json import (
        DumpLogAborted,
        dump_log_line_groups,
        non_consecutive_lines,
    )
    from codegen.dumps.log_files import IndexReport, LogFileError, dump_index_file

    out, err = sys.stdout.write, sys.stderr.write
    gaps: NonConsecutive = {}
    report = IndexReport()
    observe = None if counts is None else counts.add
    for f, t in zip(files, topics, strict=True):
        if counts is not None:
            counts.files += 1
        if f.suffix not in (".log", ".checkpoint"):
            out(f"Dumping {f}\n")
            if f.suffix in LOG_FOLDER_SUFFIXES:
                try:
                    for line in dump_index_file(
                        f,
                        report,
                        verify_only=verify_index_only,
                        sanity_only=index_sanity_check,
                        max_message_size=max_message_size,
                    ):
                        out(line + "\n")
                except LogFileError as exc:
                    err(f"{exc}\n")
                    if counts is not None:
                        counts.errors += 1
                    if exc.fatal:
                        return True
            else:
                err(f"Ignoring unknown file {f}\n")
            continue
        groups = dump_log_line_groups(
            f,
            t,
            skip_record_metadata=skip_record_metadata,
            max_bytes=max_bytes,
            max_batch_size=max_batch_size,
            max_batch_records=max_batch_records,
            observe=observe,
            non_consecutive=gaps,
            package=package,
            user=None if not user or t not in user else user[t],
            count_newer=None if counts is None else counts.add_newer,
        )
        # One write per log batch; the last lines wait, as Kafka may stop in the middle of one.
        pending: list[str] = []
        try:
            for group in groups:
                if pending:
                    out("\n".join(pending) + "\n")
                pending = group
        except DumpLogAborted as exc:
            if pending:
                out("\n".join(pending) + ("" if exc.unfinished else "\n"))
            sys.stdout.flush()
            err(f"{exc}\n")
            return True
        if pending:
            out("\n".join(pending) + "\n")
    if counts is not None:
        counts.errors += report.problems
    for line in report.lines():
        err(line + "\n")
    for line in non_consecutive_lines(gaps):
        err(line + "\n")
    return False
