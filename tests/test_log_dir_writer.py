"""A broker's log folder as ``codegen.dumps.log_dir_writer`` writes it, against Kafka's rules
and what a real 4.4.0 broker wrote (``tests/data/kafka-data``, ``/work/brokerrun`` on the
machine this was made on: the files' shapes are quoted here).

Indexes and time indexes are checked the way kafka-dump-log checks them (``dump --format
dump-log --verify-index-only``); aborted-transaction index entries and producer snapshots
are read back with the project's readers.
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

from click.testing import CliRunner

from codegen.cli import cli
from codegen.dumps.log_dir_writer import LogDir, PartitionLog, kafka_uuid
from codegen.dumps.log_files import read_producer_snapshot, read_transaction_index
from codegen.dumps.model import ControlType
from codegen.dumps.writer import encode_record_batch, frame_v2_batch

T = 1_796_000_000_000


def _log(tmp_path: Path, **options: int) -> PartitionLog:
    return PartitionLog(tmp_path / "orders-0", uuid.UUID(int=7), **options)


def test_segments_roll_and_their_indexes_check_as_kafka_checks_them(tmp_path: Path) -> None:
    log = _log(tmp_path, segment_bytes=20_000)
    for i in range(300):
        log.write_batch(
            [(b"k%d" % i, b"v" * 50)] * 5,
            timestamp=T + i,
            producer_id=3,
            producer_epoch=0,
            base_sequence=5 * i,
        )
    log.close()
    segments = sorted(log.folder.glob("*.log"))
    assert len(segments) == 6 and all(s.stat().st_size <= 20_000 for s in segments)
    assert [int(s.stem) for s in segments] == log.segments
    # a snapshot at each roll (named by the new segment's base offset) and at the end
    snapshots = sorted(int(p.stem) for p in log.folder.glob("*.snapshot"))
    assert snapshots == [*log.segments[1:], log.next_offset]
    index = (log.folder / f"{log.segments[0]:020d}.index").read_bytes()
    assert len(index) == 8 * 4  # an entry past every 4096 bytes of the 20,000
    result = CliRunner().invoke(
        cli, ["dump", str(log.folder), "--format", "dump-log", "--verify-index-only"]
    )
    assert result.exit_code == 0, result.output
    assert "Mismatches" not in result.stdout and "not found" not in result.stdout
    # The time index closes with the segment's largest timestamp (the shape a real broker's
    # closed segment has: the last entry is (max timestamp, its batch's last offset)).
    last = (log.folder / f"{log.segments[-1]:020d}.timeindex").read_bytes()[-12:]
    ts, relative = struct.unpack(">qi", last)
    assert (ts, log.segments[-1] + relative) == (T + 299, log.next_offset - 1)


def test_aborted_transactions_are_indexed_with_their_last_stable_offset(tmp_path: Path) -> None:
    """An ABORT marker indexes (producer, first offset, marker offset, LSO): the LSO is the
    first offset of another open transaction, else one past the marker."""
    log = _log(tmp_path)
    txn = {"transactional": True, "base_sequence": 0}
    log.write_batch([(None, b"a")] * 2, timestamp=T, producer_id=10, producer_epoch=0, **txn)  # 0-1
    log.write_batch(
        [(None, b"b")] * 3, timestamp=T + 1, producer_id=11, producer_epoch=4, **txn
    )  # 2-4
    log.write_marker(
        ControlType.ABORT, timestamp=T + 2, producer_id=10, producer_epoch=1, coordinator_epoch=0
    )  # 5
    log.write_marker(
        ControlType.ABORT, timestamp=T + 3, producer_id=11, producer_epoch=5, coordinator_epoch=2
    )  # 6
    log.close()
    entries = read_transaction_index(log.folder / "00000000000000000000.txnindex")
    assert [
        (e.txn.producer_id, e.txn.first_offset, e.txn.last_offset, e.txn.last_stable_offset)
        for e in entries
    ] == [
        (10, 0, 5, 2),  # producer 11's transaction is still open from offset 2
        (11, 2, 6, 7),
    ]
    (snapshot,) = log.folder.glob("*.snapshot")
    producers = {p.producer_id: p for p in read_producer_snapshot(snapshot)}
    # The markers' new epochs forget the batches (as a real broker's snapshot shows them).
    assert (
        producers[11].epoch,
        producers[11].last_sequence,
        producers[11].last_offset,
    ) == (5, -1, -1)
    assert producers[11].coordinator_epoch == 2 and producers[11].current_txn_first_offset == -1


def test_an_open_transaction_stays_open_in_the_snapshot(tmp_path: Path) -> None:
    log = _log(tmp_path)
    log.write_batch([(None, b"x")], timestamp=T, producer_id=1, producer_epoch=0, base_sequence=0)
    log.write_batch(
        [(None, b"h")] * 4,
        timestamp=T + 1,
        producer_id=9,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )
    log.close()
    (snapshot,) = log.folder.glob("*.snapshot")
    assert snapshot.name == "00000000000000000005.snapshot"
    producers = {p.producer_id: p for p in read_producer_snapshot(snapshot)}
    assert producers[9].current_txn_first_offset == 1 and producers[9].last_sequence == 3
    assert (producers[1].last_offset, producers[1].last_sequence) == (0, 0)


def test_a_framed_payload_is_the_batch_encode_makes(tmp_path: Path) -> None:
    """frame_v2_batch puts one payload at any offset: the same bytes encode_record_batch makes
    there."""
    records = [(b"k", b"v" * 30)] * 4
    made = encode_record_batch(
        records, base_offset=1234, timestamp=T, producer_id=5, producer_epoch=1, base_sequence=9
    )
    template = encode_record_batch(records, base_offset=0, timestamp=T)
    framed = frame_v2_batch(
        template[61:],
        attributes=0,
        record_count=4,
        last_offset_delta=3,
        base_offset=1234,
        base_timestamp=T,
        max_timestamp=T,
        producer_id=5,
        producer_epoch=1,
        base_sequence=9,
    )
    assert framed == made


def test_the_log_folder_has_a_brokers_files(tmp_path: Path) -> None:
    folder = tmp_path / "kafka-logs"
    log_dir = LogDir(
        folder, node_id=1, cluster_id=uuid.UUID(int=1 << 64), directory_id=uuid.UUID(int=2)
    )
    topic_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    orders = log_dir.partition("orders", 0, topic_id)
    orders.write_batch([(None, b"x")] * 3, timestamp=T)
    log_dir.partition("orders", 1, topic_id)
    log_dir.close(broker_epoch=13, now_ms=T)
    # The shapes of a real 4.4.0 broker's files (its meta.properties and checkpoints).
    meta = (folder / "meta.properties").read_text().splitlines()
    assert meta[0] == "#" and meta[1].startswith("#") and meta[1].endswith(" UTC 2026")
    assert meta[2:] == [
        "node.id=1",
        "directory.id=AAAAAAAAAAAAAAAAAAAAAg",
        "version=1",
        "cluster.id=AAAAAAAAAAEAAAAAAAAAAA",
    ]
    assert (
        folder / "replication-offset-checkpoint"
    ).read_text() == "0\n2\norders 0 3\norders 1 0\n"
    assert (folder / "log-start-offset-checkpoint").read_text() == "0\n0\n"
    assert (folder / "cleaner-offset-checkpoint").read_bytes() == b""
    assert (folder / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":13}'
    assert (folder / "orders-0" / "partition.metadata").read_text() == (
        f"version: 0\ntopic_id: {kafka_uuid(topic_id)}"
    )
    assert (folder / "orders-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    assert kafka_uuid(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"  # the metadata topic's id
    empty = (folder / "orders-1" / "00000000000000000000.snapshot").read_bytes()
    assert len(empty) == 10  # header only, as a real broker's snapshot of no producer
