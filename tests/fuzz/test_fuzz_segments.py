"""Mutated segments into the segment reader, the coordinator and metadata decoders and the dump
command: no hang, bounded memory, only documented errors, every batch either decoded or reported
with its position, and the command exits 0 or 1 (1 exactly when it printed an error)."""

from __future__ import annotations

import io
import json
import signal
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from mutations import mutated
from test_dumps_records import _synth_segment
from test_segment_mutations import CAP, base_segment, check

from codegen.dumps import Codec, ControlType, ErrorKind, SegmentError, SegmentReader, SegmentWriter
from codegen.dumps.batch_rows import batch_rows, batch_table, header_rows
from codegen.dumps.command import EXIT_CLEAN, EXIT_DAMAGE, EXIT_USAGE, dump_command
from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    decode_batches,
)
from codegen.dumps.decoded import ERROR, KIND_CONTROL, RECORD, TOMBSTONE, UNKNOWN, DecodedBatch
from codegen.dumps.metadata import CLUSTER_METADATA, decode_metadata_batches
from codegen.dumps.model import BatchHeader
from codegen.dumps.recognize import not_kafka_reason
from codegen.dumps.segments import header_pass_for, native_headers_enabled
from codegen.dumps.views.cut import newest_batch_time
from codegen.forensics.lag import newest_batches
from generated import MESSAGES

pytestmark = pytest.mark.fuzz

MAX_RECORDS = 5_000
"""Record cap per batch while fuzzing: with ``CAP`` it bounds what one batch may allocate."""
HANG_SECONDS = 30
KINDS = {RECORD, TOMBSTONE, UNKNOWN, ERROR, KIND_CONTROL}


@cache
def offsets_segment() -> bytes:
    """Group metadata, offset commits, tombstones and markers, uncompressed and zstd."""
    buf = io.BytesIO()
    _synth_segment(buf, Codec.NONE)  # type: ignore[arg-type]
    _synth_segment(buf, Codec.ZSTD)  # type: ignore[arg-type]
    return buf.getvalue()


@cache
def metadata_segment() -> bytes:
    """Metadata records in frames (lz4 and not) and KRaft control records."""
    topic = MESSAGES["TopicRecord"](name="t")
    frame = b"\x01" + bytes([topic.API_KEY or 0, 0]) + topic.encode(0)
    unknown = b"\x01\x7f\x00\x00"  # an apiKey no spec has
    header = MESSAGES["SnapshotHeaderRecord"](version=0, last_contained_log_timestamp=5)
    buf = io.BytesIO()
    w = SegmentWriter(buf)
    w.write_control(ControlType.SNAPSHOT_HEADER, value=header.encode(0))
    w.write_batch([(None, frame), (None, unknown)])
    w.write_batch([(None, frame)] * 3, codec=Codec.LZ4)
    w.write_control(ControlType.SNAPSHOT_FOOTER, value=b"\x00\x00\x00")
    return buf.getvalue()


SEEDS = st.sampled_from(["mixed", "offsets", "metadata"]).map(
    {"mixed": base_segment, "offsets": offsets_segment, "metadata": metadata_segment}.__getitem__
)
SEGMENTS = mutated(SEEDS.map(lambda seed: seed()))


class Hang(Exception):
    pass


@contextmanager
def no_hang(seconds: int = HANG_SECONDS) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@cache
def _warm() -> None:
    """Build the decoders' tables (and import the generated modules) outside the measurements."""
    for seed in (base_segment(), offsets_segment(), metadata_segment()):
        for topic in (CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE):
            list(decode_batches(seed, topic))
        list(decode_metadata_batches(seed))


def _check_decoder(data: bytes, topic: str, verify_crc: bool) -> None:
    """Every byte is in a decoded batch or a reported error, in file order; records and errors
    are of the documented kinds; one batch never takes more than the caps allow."""
    if topic == CLUSTER_METADATA:
        items = decode_metadata_batches(
            data, verify_crc=verify_crc, max_batch_size=CAP, max_batch_records=MAX_RECORDS
        )
    else:
        items = decode_batches(
            data, topic, verify_crc=verify_crc, max_batch_size=CAP, max_batch_records=MAX_RECORDS
        )
    pos = 0
    tracemalloc.start()
    try:
        for item in items:
            if isinstance(item, SegmentError):
                assert isinstance(item.kind, ErrorKind)
                assert not item.reason.startswith("unexpected"), item
                start, size = item.position, item.size
            else:
                assert isinstance(item, DecodedBatch)
                batch = item.batch
                start, size = batch.position, batch.size
                if batch.magic == 2:
                    assert len(item.records) == batch.record_count <= MAX_RECORDS
                for rec in item.records:
                    assert rec.kind in KINDS, rec
                    assert (rec.error is not None) == (rec.kind in (ERROR, UNKNOWN)), rec
            assert (start, size > 0) == (pos, True), (topic, item)
            pos += size
            del item
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert pos == len(data)
    assert peak < 8 * CAP + 600 * MAX_RECORDS + 64 * len(data) + (1 << 20), (topic, peak)


@given(data=SEGMENTS)
def test_mutated_segments_are_read_or_reported(data: bytes) -> None:
    _warm()
    with no_hang():
        check(data)
        for topic in (CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE, CLUSTER_METADATA):
            for verify_crc in (True, False):
                _check_decoder(data, topic, verify_crc)


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("logs")
    for folder in ("__consumer_offsets-0", "__cluster_metadata-0"):
        (root / folder).mkdir()
    return root


@given(data=SEGMENTS, fmt=st.sampled_from(["jsonl", "dump-log", "table"]))
def test_the_dump_command_exits_0_or_1_on_mutated_files(
    log_dir: Path, data: bytes, fmt: str
) -> None:
    """Exit 0 or 1 (damage) on every file that starts as a Kafka segment; 2 with "not a Kafka
    log segment" on exactly those whose first entry does not (codegen.dumps.recognize)."""
    not_kafka = not_kafka_reason(data)
    for folder in ("__consumer_offsets-0", "__cluster_metadata-0"):
        path = log_dir / folder / "00000000000000000000.log"
        path.write_bytes(data)
        with no_hang():
            res = CliRunner().invoke(
                dump_command, [str(path), "--format", fmt, "--max-batch-bytes", str(CAP)]
            )
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        if not_kafka is not None:
            assert res.exit_code == EXIT_USAGE, res.output
            assert f"dump: not a Kafka log segment: {path}: {not_kafka}; " in res.stderr
            continue
        assert res.exit_code in (EXIT_CLEAN, EXIT_DAMAGE), res.output
        if fmt == "jsonl":
            kinds = {json.loads(line)["kind"] for line in res.stdout.splitlines()}
            damaged = bool(kinds & {ERROR, "segment-error"})
            assert res.exit_code == (EXIT_DAMAGE if damaged else EXIT_CLEAN), kinds


@given(data=SEGMENTS, verify_crc=st.booleans())
def test_the_header_pass_agrees_with_its_reference_on_mutated_segments(
    data: bytes, verify_crc: bool
) -> None:
    """The native header pass (when built) and the reference give the same headers and errors,
    which cover the file in order; the native pass into columns gives the same batch rows."""

    def reader() -> SegmentReader:
        return SegmentReader(
            data, verify_crc=verify_crc, max_batch_size=CAP, max_batch_records=MAX_RECORDS
        )

    with no_hang():
        pure = list(reader().batch_headers(native=False))
        if native_headers_enabled():
            fast = list(reader().batch_headers(native=True))
            assert fast == pure
            assert [type(i) for i in fast] == [type(i) for i in pure]
            runs = list(reader().batch_header_columns(native=True))
            try:
                expected = batch_table(pure).to_pylist()
            except (OverflowError, pa.ArrowException):  # a control offset past int64
                expected = None
            if expected is not None:
                assert header_rows(runs).to_pylist() == expected
            check_header_ends(data, reader().header_pass_checks(), fast)
    pos = 0
    for item in pure:
        if isinstance(item, SegmentError):
            assert not item.reason.startswith("unexpected"), item
        assert (item.position, item.size > 0) == (pos, True), item
        pos += item.size
    assert pos == len(data)


def check_header_ends(
    data: bytes, checks: tuple[object, ...], fast: list[BatchHeader | SegmentError]
) -> None:
    """The pass over many files (header_ends.h), given the segment twice, reads each as far as
    the header pass reads it natively, the fields of the same headers."""
    module = header_pass_for(True)
    assert module is not None
    times, lasts, counts, stops = (
        np.frombuffer(b, np.int64).tolist() for b in module.batch_header_ends([data, data], *checks)
    )
    read, stop = counts[0], stops[0]
    assert counts == [read, read] and stops == [stop, stop]
    heads = [h for h in fast[:read] if isinstance(h, BatchHeader)]
    assert len(heads) == read
    assert times == [h.max_timestamp for h in heads] * 2
    assert lasts == [h.last_offset for h in heads] * 2
    assert stop == sum(h.size for h in heads)
    assert (stop == len(data)) == (read == len(fast))


@given(data=SEGMENTS)
def test_lag_now_from_unchecked_headers_is_that_of_checked_ones(data: bytes) -> None:
    """Lag's *now* of a segment from its headers walked without checksums and its newest
    batches checked (codegen.forensics.lag.newest_batches) is the newest time of its checked
    headers, whatever is broken."""
    with no_hang():
        try:
            expected = newest_batch_time(batch_rows(data))
        except (OverflowError, pa.ArrowException):  # a control offset past int64
            return
        assert newest_batch_time(newest_batches(data)) == expected
