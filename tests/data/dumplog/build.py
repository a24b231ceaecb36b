"""Write the small log files of ``tests/data/dumplog/`` (see PROVENANCE.md there).

    PYTHONPATH=. python tests/data/dumplog/build.py

Every file is made by the project's segment writer (``codegen/dumps/writer.py``), with a byte
changed afterwards where a file is meant to be damaged. ``tests/test_dumplog_parity.py`` checks
that running this again gives the same bytes, and compares our ``--format dump-log`` text for
each file with Kafka's DumpLogSegments.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from pathlib import Path

from codegen.dumps import Codec, SegmentWriter, TimestampType
from codegen.dumps.model import ControlType

HERE = Path(__file__).resolve().parent
T0 = 1_700_000_000_000


def _flip(data: bytearray, needle: bytes, replacement: bytes) -> None:
    """Change bytes inside a written batch (after its checksum was computed)."""
    at = data.index(needle)
    data[at : at + len(replacement)] = replacement


def corrupt_batch() -> dict[str, bytes]:
    """An ordinary topic whose second batch has a changed value byte (wrong CRC)."""
    import io

    buf = io.BytesIO()
    with SegmentWriter(buf) as w:
        w.write_batch([(b"k0", b"first value"), (None, b"second value")], timestamp=T0)
        w.write_batch([(b"k2", b"damaged value")], timestamp=T0 + 1)
        w.write_batch([(b"k3", b"after the damage")], timestamp=T0 + 2)
    data = bytearray(buf.getvalue())
    _flip(data, b"damaged", b"DAMAGED")
    return {"corrupt-0/00000000000000000000.log": bytes(data)}


def legacy() -> dict[str, bytes]:
    """Magic 0 and 1 messages, plain and in gzip wrappers; the last one has a wrong CRC."""
    import io

    buf = io.BytesIO()
    with SegmentWriter(buf) as w:
        w.write_legacy([(b"a", b"v0 plain"), (None, b"v0 keyless")], magic=0)
        w.write_legacy([(b"b", b"v1 plain"), (b"c", None)], magic=1, timestamp=T0)
        w.write_legacy(
            [(b"d", b"v1 in gzip"), (b"e", b"v1 in gzip too"), (None, b"third")],
            magic=1,
            timestamp=T0 + 5,
            codec=Codec.GZIP,
        )
        w.write_legacy([(b"f", b"v0 in gzip"), (b"g", b"v0 again")], magic=0, codec=Codec.GZIP)
        w.write_legacy(
            [(b"h", b"v1 log append time")],
            magic=1,
            timestamp=T0 + 9,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
        )
        w.write_legacy([(b"i", b"v1 broken")], magic=1, timestamp=T0 + 10)
    data = bytearray(buf.getvalue())
    _flip(data, b"v1 broken", b"v1 BROKEN")
    return {"legacy-0/00000000000000000000.log": bytes(data)}


def keyless_offsets() -> dict[str, bytes]:
    """A __consumer_offsets segment with a record without a key (Kafka's decoder stops)."""
    import io

    from generated.offset_commit_key import OffsetCommitKey
    from generated.offset_commit_value import OffsetCommitValue

    key = b"\x00\x01" + OffsetCommitKey(group="g", topic="t", partition=0).encode(0)
    value = b"\x00\x03" + OffsetCommitValue(offset=7, metadata="", commit_timestamp=T0).encode(3)
    buf = io.BytesIO()
    with SegmentWriter(buf) as w:
        w.write_batch([(key, value)], timestamp=T0)
        w.write_batch([(None, b"no key here")], timestamp=T0 + 1)
        w.write_batch([(key, value)], timestamp=T0 + 2)
    return {"keyless/__consumer_offsets-0/00000000000000000000.log": buf.getvalue()}


def bad_frames() -> dict[str, bytes]:
    """__cluster_metadata records Kafka's serde rejects: a null value, a frame version above
    32767, an unknown frame version; between good NoOp records and a leader-change batch."""
    import io

    noop = bytes([1, 20, 0, 0])  # frame version 1, NoOpRecord (api key 20) v0, no tags
    big_frame = bytes([0xC0, 0xB8, 0x02, 20, 0, 0])  # frame version 40000
    buf = io.BytesIO()
    with SegmentWriter(buf) as w:
        w.write_batch([(None, noop)], timestamp=T0)
        w.write_batch([(None, None)], timestamp=T0 + 1)
        w.write_batch([(None, big_frame)], timestamp=T0 + 2)
        w.write_batch([(None, bytes([2, 20, 0, 0]))], timestamp=T0 + 3)
        w.write_control(ControlType.ABORT, timestamp=T0 + 4, producer_id=5, producer_epoch=0)
        w.write_batch([(None, noop)], timestamp=T0 + 5)
    return {"frames/__cluster_metadata-0/00000000000000000000.log": buf.getvalue()}


def remote_log_frames() -> dict[str, bytes]:
    """__remote_log_metadata records Kafka's serde or its objects reject, between two good
    ones: a null value, a frame of an unknown type, a copy with no leader epochs, an update to
    state 7, a partition deletion of version 1 (its inline struct refuses it), and a record
    with a key (the parser ignores keys), then an ABORT marker."""
    import io
    import uuid

    from generated import remote_log_segment_metadata_record as segment
    from generated import remote_log_segment_metadata_update_record as update
    from generated import remote_partition_delete_metadata_record as delete

    topic = segment.TopicIdPartitionEntry(name="orders", id=uuid.UUID(int=11), partition=2)
    seg_id = segment.RemoteLogSegmentIdEntry(topic_id_partition=topic, id=uuid.UUID(int=12))
    copy = segment.RemoteLogSegmentMetadataRecord(
        remote_log_segment_id=seg_id,
        start_offset=0,
        end_offset=99,
        broker_id=1,
        max_timestamp_ms=T0,
        event_timestamp_ms=T0 + 1,
        segment_leader_epochs=[segment.SegmentLeaderEpochEntry(leader_epoch=0, offset=0)],
        segment_size_in_bytes=4096,
        remote_log_segment_state=0,
    )
    no_epochs = segment.RemoteLogSegmentMetadataRecord(
        remote_log_segment_id=seg_id, start_offset=0, end_offset=9, remote_log_segment_state=0
    )
    up_topic = update.TopicIdPartitionEntry(name="orders", id=uuid.UUID(int=11), partition=2)
    finished = update.RemoteLogSegmentMetadataUpdateRecord(
        remote_log_segment_id=update.RemoteLogSegmentIdEntry(
            topic_id_partition=up_topic, id=uuid.UUID(int=12)
        ),
        broker_id=1,
        event_timestamp_ms=T0 + 2,
        custom_metadata=b"rsm",
        remote_log_segment_state=1,
    )
    bad_state = update.RemoteLogSegmentMetadataUpdateRecord(
        remote_log_segment_id=finished.remote_log_segment_id, remote_log_segment_state=7
    )
    deleted = delete.RemotePartitionDeleteMetadataRecord(
        topic_id_partition=delete.TopicIdPartitionEntry(
            name="orders", id=uuid.UUID(int=11), partition=2
        ),
        remote_partition_delete_state=0,
    )

    def frame(api_key: int, body: bytes, version: int = 0) -> bytes:
        return bytes([1, api_key, version]) + body

    buf = io.BytesIO()
    with SegmentWriter(buf) as w:
        w.write_batch([(None, frame(0, copy.encode(0)))], timestamp=T0)
        w.write_batch([(None, None)], timestamp=T0 + 1)
        w.write_batch([(None, frame(9, b""))], timestamp=T0 + 2)
        w.write_batch([(None, frame(0, no_epochs.encode(0)))], timestamp=T0 + 3)
        w.write_batch([(None, frame(1, bad_state.encode(0)))], timestamp=T0 + 4)
        w.write_batch([(None, frame(2, deleted.encode(0), 1))], timestamp=T0 + 5)
        w.write_batch([(b"key", frame(1, finished.encode(0)))], timestamp=T0 + 6)
        w.write_control(ControlType.ABORT, timestamp=T0 + 7, producer_id=5, producer_epoch=0)
    return {"frames/__remote_log_metadata-0/00000000000000000000.log": buf.getvalue()}


def index_files() -> dict[str, bytes]:
    """A partition folder with every kind of file: a segment (from offset 100, with a
    transaction aborted by producer 7 and a gap), its offset index (an entry pointing at the
    wrong batch, then a zero entry as in a preallocated index), time index (a wrong
    timestamp, one out of order, an offset that is not a batch's last), transaction index and
    a producer-state snapshot; and a snapshot with a wrong CRC."""
    import io

    import crc32c

    base = 100
    buf = io.BytesIO()
    with SegmentWriter(buf, base_offset=base) as w:
        p0 = w.write_batch([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], timestamp=T0)
        p1 = w.write_batch([(b"d", b"4"), (b"e", b"5")], timestamp=T0 + 3)
        w.write_batch(
            [(b"f", b"6"), (b"g", b"7")],
            timestamp=T0 + 5,
            producer_id=7,
            producer_epoch=1,
            base_sequence=0,
            transactional=True,
        )
        w.write_control(ControlType.ABORT, timestamp=T0 + 7, producer_id=7, producer_epoch=1)
        w.write_batch([(b"h", b"8"), (b"i", b"9")], base_offset=110, timestamp=T0 + 10)
    index = b"".join(
        struct.pack(">ii", off - base, pos) for off, pos in ((102, p0), (104, p1), (106, p0))
    ) + struct.pack(">ii", 0, 0)
    timeindex = b"".join(
        struct.pack(">qi", ts, off - base)
        for ts, off in (
            (T0 + 2, 102),
            (T0 + 4, 104),
            (T0 + 5, 106),
            (T0 + 4, 111),
            (T0 + 12, 108),
        )
    ) + struct.pack(">qi", 0, 0)
    txnindex = struct.pack(">hqqqq", 0, 7, 105, 107, 105)

    def snapshot(entries: Sequence[tuple[int, ...]], *, good_crc: bool = True) -> bytes:
        body = struct.pack(">i", len(entries)) + b"".join(
            struct.pack(">qhiqiqiq", *e) for e in entries
        )
        crc = crc32c.crc32c(body) ^ (0 if good_crc else 1)
        return struct.pack(">hI", 1, crc) + body

    producers = [
        (7, 1, 1, 106, 1, T0 + 5, 0, -1),
        (9, 0, 4, 111, 1, T0 + 11, -1, 110),
        (11, 2, -1, -1, 0, T0 + 1, 3, -1),
    ]
    folder = "orders-0/00000000000000000100"
    return {
        f"{folder}.log": buf.getvalue(),
        f"{folder}.index": index,
        f"{folder}.timeindex": timeindex,
        f"{folder}.txnindex": txnindex,
        "orders-0/00000000000000000112.snapshot": snapshot(producers),
        "orders-0/00000000000000000050.snapshot": snapshot(producers[:1], good_crc=False),
    }


def transaction_indexes() -> dict[str, bytes]:
    """Aborted-transaction indexes: three entries then the first 10 bytes of a fourth (a torn
    append); entries of versions 0, 1 and -1 (Kafka 4.3's tool reads the first byte of the
    version: 0, 0 and -1); versions 0, 256 and 0 (that byte is 1: the tool stops there)."""
    entries = [(0, 3, 0, 4, 0), (0, 5, 2, 9, 5), (0, 3, 10, 12, 10)]
    three = b"".join(struct.pack(">hqqqq", *e) for e in entries)

    def versions(*numbers: int) -> bytes:
        return b"".join(
            struct.pack(">hqqqq", v, 4, 5 * i, 5 * i + 3, 5 * i) for i, v in enumerate(numbers)
        )

    return {
        "txns-0/00000000000000000000.txnindex": three + three[:10],
        "txns-1/00000000000000000000.txnindex": versions(0, 1, -1),
        "txns-2/00000000000000000000.txnindex": versions(0, 256, 0),
    }


def producer_snapshots() -> dict[str, bytes]:
    """Producer-state snapshots Kafka refuses, one way each (by base offset): 1 byte; version 2;
    an entry count of -1; a count of 1000 with 8 bytes after it; a count of 2 with one entry
    after it; a valid snapshot cut inside its CRC; and a valid one with 3 bytes after its
    entries, covered by its CRC (read as if they were not there)."""
    import crc32c

    entry = struct.pack(">qhiqiqiq", 5, 0, 2, 40, 2, T0, -1, -1)

    def crc_of(body: bytes, version: int = 1) -> bytes:
        return struct.pack(">hI", version, crc32c.crc32c(body)) + body

    folder = "snapshots-0/"
    return {
        f"{folder}00000000000000000001.snapshot": b"\x00",
        f"{folder}00000000000000000002.snapshot": crc_of(struct.pack(">i", 0), 2),
        f"{folder}00000000000000000003.snapshot": crc_of(struct.pack(">i", -1)),
        f"{folder}00000000000000000004.snapshot": crc_of(struct.pack(">i", 1000) + bytes(8)),
        f"{folder}00000000000000000005.snapshot": crc_of(struct.pack(">i", 2) + entry),
        f"{folder}00000000000000000006.snapshot": crc_of(struct.pack(">i", 1) + entry)[:4],
        f"{folder}00000000000000000007.snapshot": crc_of(struct.pack(">i", 1) + entry + b"end"),
    }


def padded() -> dict[str, bytes]:
    """Two batches, then 100 zero bytes (a preallocated segment after an unclean shutdown);
    and two batches then the first 30 bytes of a third (a torn write)."""
    import io

    buf = io.BytesIO()
    with SegmentWriter(buf) as w:
        w.write_batch([(b"k", b"v")], timestamp=T0)
        w.write_batch([(b"k2", b"v2")], timestamp=T0 + 1)
    data = buf.getvalue()
    return {
        "padded-0/00000000000000000000.log": data + bytes(100),
        "torn-0/00000000000000000000.log": data + data[:30],
    }


BUILDERS = (
    corrupt_batch,
    legacy,
    keyless_offsets,
    bad_frames,
    remote_log_frames,
    index_files,
    transaction_indexes,
    producer_snapshots,
    padded,
)


def build() -> dict[str, bytes]:
    """Relative path -> the bytes of every file."""
    files: dict[str, bytes] = {}
    for builder in BUILDERS:
        files.update(builder())
    return files


def main() -> None:
    for rel, data in build().items():
        path = HERE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"{rel}: {len(data)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
