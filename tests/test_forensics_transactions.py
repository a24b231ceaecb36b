"""``python -m codegen transactions`` and its Python API on a synthesized cluster: committed,
aborted, timed-out and fenced transactions, one still open, and a hanging one (a transactional
batch with no coordinator record) that blocks a read_committed group."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import crc32c
import pytest
from click.testing import CliRunner
from v2_batches import entry_frames

from codegen.dumps import Codec, SegmentWriter, compress
from codegen.dumps.model import ControlType
from codegen.dumps.segments import native_headers_enabled
from codegen.forensics.groups import AsOf
from codegen.forensics.transactions import abort_command, transaction_report
from codegen.forensics.transactions_command import transactions_command
from codegen.runtime import backends
from generated import MESSAGES
from generated.transaction_log_value import PartitionsSchema

T0 = 1_700_000_000_000
S = 1000
STATUS = {
    "Empty": 0,
    "Ongoing": 1,
    "PrepareCommit": 2,
    "PrepareAbort": 3,
    "CompleteCommit": 4,
    "CompleteAbort": 5,
}


def txn_record(
    tid: str,
    status: str,
    pid: int,
    epoch: int,
    at: int,
    partitions: list[tuple[str, int]],
    *,
    timeout: int = 60_000,
    start: int = -1,
    tv: int = 0,
) -> tuple[bytes, bytes, int]:
    key = struct.pack(">h", 0) + MESSAGES["TransactionLogKey"](transactional_id=tid).encode(0)
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    value = MESSAGES["TransactionLogValue"](
        producer_id=pid,
        producer_epoch=epoch,
        transaction_timeout_ms=timeout,
        transaction_status=STATUS[status],
        transaction_partitions=[
            PartitionsSchema(topic=t, partition_ids=ps) for t, ps in by_topic.items()
        ],
        transaction_last_update_timestamp_ms=at,
        transaction_start_timestamp_ms=start,
        client_transaction_version=tv,
    )
    return key, struct.pack(">h", 1) + value.encode(1), at


def commit_record(group: str, topic: str, partition: int, offset: int, at: int) -> Any:
    key = struct.pack(">h", 1) + MESSAGES["OffsetCommitKey"](
        group=group, topic=topic, partition=partition
    ).encode(0)
    value = MESSAGES["OffsetCommitValue"](offset=offset, commit_timestamp=at)
    return (key, struct.pack(">h", 3) + value.encode(3))


def producer_snapshot(entries: list[tuple[int, ...]]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


O0, O1 = ("orders", 0), ("orders", 1)


def write_cluster(root: Path) -> Path:
    """A broker log dir: orders-0, orders-1, __transaction_state-0, __consumer_offsets-0.

    tx-commit (pid 10) commits on orders-0 in 2 s; tx-abort (pid 11) aborts on both partitions;
    tx-timeout (pid 13, timeout 10 s) is aborted by the coordinator with an epoch bump after
    11 s; tx-fenced (pid 12) is aborted after 1 s when a new instance bumps the epoch; tx-open
    (pid 14) is Ongoing on orders-0 at the end; pid 99 wrote a transactional batch on orders-1
    that no coordinator record knows (hanging), and group g-rc has read up to it.
    """
    log = root / "kafka-logs"
    o0, o1 = log / "orders-0", log / "orders-1"
    coord, offsets = log / "__transaction_state-0", log / "__consumer_offsets-0"
    for d in (o0, o1, coord, offsets):
        d.mkdir(parents=True)
    with SegmentWriter(o0 / "00000000000000000000.log") as w:
        w.write_batch([(None, b"plain")] * 5, timestamp=T0)  # 0-4
        txn: dict[str, Any] = {"producer_epoch": 0, "transactional": True}
        w.write_batch([(None, b"c")] * 3, timestamp=T0 + 1 * S, producer_id=10, **txn)  # 5-7
        w.write_batch([(None, b"a")] * 2, timestamp=T0 + 2 * S, producer_id=11, **txn)  # 8-9
        w.write_control(ControlType.COMMIT, timestamp=T0 + 3 * S, producer_id=10, producer_epoch=0)
        w.write_control(ControlType.ABORT, timestamp=T0 + 4 * S, producer_id=11, producer_epoch=0)
        w.write_batch([(None, b"t")] * 2, timestamp=T0 + 5 * S, producer_id=13, **txn)  # 12-13
        w.write_control(ControlType.ABORT, timestamp=T0 + 16 * S, producer_id=13, producer_epoch=1)
        w.write_batch([(None, b"o")] * 4, timestamp=T0 + 30 * S, producer_id=14, **txn)  # 15-18
        w.write_batch([(None, b"plain")] * 2, timestamp=T0 + 31 * S)  # 19-20
    # the broker's index of orders-0: pid 11's abort (LSO 12 = one past its marker; pid 10's
    # transaction had ended) and pid 13's (LSO 15: pid 14's transaction not begun yet, so 17)
    (o0 / "00000000000000000000.txnindex").write_bytes(
        struct.pack(">hqqqq", 0, 11, 8, 11, 12) + struct.pack(">hqqqq", 0, 13, 12, 14, 15)
    )
    (o0 / "00000000000000000021.snapshot").write_bytes(
        producer_snapshot([(14, 0, 3, 18, 3, T0 + 30 * S, 0, 15), (10, 0, 2, 7, 2, T0 + S, 0, -1)])
    )
    with SegmentWriter(o1 / "00000000000000000000.log") as w:
        txn = {"producer_epoch": 0, "transactional": True}
        w.write_batch([(None, b"a")] * 2, timestamp=T0 + 2 * S, producer_id=11, **txn)  # 0-1
        w.write_batch([(None, b"h")] * 3, timestamp=T0 + 2 * S, producer_id=99, **txn)  # 2-4
        w.write_batch([(None, b"f")], timestamp=T0 + 3 * S, producer_id=12, **txn)  # 5
        w.write_control(ControlType.ABORT, timestamp=T0 + 4 * S, producer_id=11, producer_epoch=0)
        w.write_control(ControlType.ABORT, timestamp=T0 + 4 * S, producer_id=12, producer_epoch=1)
        w.write_batch([(None, b"plain")] * 3, timestamp=T0 + 31 * S)  # 8-10
    records = [
        txn_record("tx-commit", "Empty", 10, 0, T0, []),
        txn_record("tx-commit", "Ongoing", 10, 0, T0 + S, [O0], start=T0 + S),
        txn_record("tx-commit", "PrepareCommit", 10, 0, T0 + 3 * S, [O0], start=T0 + S),
        txn_record("tx-commit", "CompleteCommit", 10, 0, T0 + 3 * S, [], start=T0 + S),
        txn_record("tx-abort", "Ongoing", 11, 0, T0 + 2 * S, [O0, O1], start=T0 + 2 * S),
        txn_record("tx-abort", "PrepareAbort", 11, 0, T0 + 4 * S, [O0, O1], start=T0 + 2 * S),
        txn_record("tx-abort", "CompleteAbort", 11, 0, T0 + 4 * S, [], start=T0 + 2 * S),
        txn_record("tx-fenced", "Ongoing", 12, 0, T0 + 3 * S, [O1], start=T0 + 3 * S),
        txn_record("tx-fenced", "PrepareAbort", 12, 1, T0 + 4 * S, [O1], start=T0 + 3 * S),
        txn_record("tx-fenced", "CompleteAbort", 12, 1, T0 + 4 * S, [], start=T0 + 3 * S),
        txn_record("tx-fenced", "Empty", 12, 2, T0 + 4 * S, []),
        txn_record(
            "tx-timeout", "Ongoing", 13, 0, T0 + 5 * S, [O0], timeout=10_000, start=T0 + 5 * S
        ),
        txn_record(
            "tx-timeout", "PrepareAbort", 13, 1, T0 + 16 * S, [O0], timeout=10_000, start=T0 + 5 * S
        ),
        txn_record(
            "tx-timeout", "CompleteAbort", 13, 1, T0 + 16 * S, [], timeout=10_000, start=T0 + 5 * S
        ),
        txn_record("tx-open", "Ongoing", 14, 0, T0 + 30 * S, [O0], start=T0 + 30 * S),
    ]
    with SegmentWriter(coord / "00000000000000000000.log") as w:
        for key, value, at in records:
            w.write_batch([(key, value)], timestamp=at)
    with SegmentWriter(offsets / "00000000000000000000.log") as w:
        w.write_batch([commit_record("g-rc", "orders", 1, 2, T0 + 20 * S)], timestamp=T0 + 20 * S)
        w.write_batch([commit_record("g-old", "orders", 1, 1, T0 + 20 * S)], timestamp=T0 + 20 * S)
        w.write_batch([commit_record("g-rc", "orders", 0, 15, T0 + 31 * S)], timestamp=T0 + 31 * S)
    return log


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_cluster(tmp_path_factory.mktemp("txn"))


def _run(*args: object) -> tuple[int, str, str]:
    res = CliRunner().invoke(transactions_command, [str(a) for a in args])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def test_open_transactions_lso_and_gap(cluster: Path) -> None:
    report = transaction_report(cluster)
    parts = {(p.topic, p.partition): p for p in report.partitions}
    p0, p1 = parts[O0], parts[O1]
    assert [(t.producer_id, t.first_offset) for t in p0.open] == [(14, 15)]
    assert (p0.log_end_offset, p0.last_stable_offset, p0.gap, p0.committed) == (21, 15, 6, 1)
    assert [(t.producer_id, t.first_offset) for t in p1.open] == [(99, 2)]
    assert (p1.log_end_offset, p1.last_stable_offset, p1.gap) == (11, 2, 9)
    assert report.now == T0 + 31 * S


def test_the_synthesized_hanging_transaction_is_found(cluster: Path) -> None:
    # find-hanging's rule: pid 99's last write (T0 + 2 s) is 29 s old, past a 20 s maximum
    # timeout, and no transactional id has its producer id
    report = transaction_report(cluster, max_timeout_ms=20 * S)
    (hanging,) = report.hanging
    assert (hanging.topic, hanging.partition, hanging.producer_id) == ("orders", 1, 99)
    assert hanging.transactional_id is None and hanging.find_hanging
    assert hanging.reason == (
        "no transactional id of the coordinator has producer id 99; its producer's last write "
        "was 29000 ms ago, longer than the maximum transaction timeout of 20000 ms"
    )
    assert (hanging.age_ms, hanging.idle_ms) == (29 * S, 29 * S)
    # g-rc committed 2 = the stuck LSO; g-old (at 1) is not held by it
    assert [g.group for g in hanging.blocked_groups] == ["g-rc"]
    assert hanging.abort_command == abort_command("orders", 1, 2)
    assert hanging.abort_command.endswith("abort --topic orders --partition 1 --start-offset 2")
    # tx-open's transaction is as old, but the coordinator lists it: it ends it itself
    (legit,) = [t for t in report.open if not t.hanging]
    assert (legit.producer_id, legit.transactional_id) == (14, "tx-open")
    assert legit.abort_command is None and legit.times_out_at == T0 + 90 * S
    assert legit.outlook.startswith("the coordinator lists it (Ongoing since ")
    assert "aborts it at 2023-11-14T22:14:50.000Z unless the producer ends it first" in (
        legit.outlook
    )


def test_young_unlisted_transactions_are_open_not_hanging(cluster: Path) -> None:
    """By default (the brokers' 15 minutes) nothing hangs yet: pid 99 says from when
    find-hanging would list it."""
    report = transaction_report(cluster)
    assert report.hanging == []
    waiting = {t.producer_id: t for t in report.open}
    assert sorted(waiting) == [14, 99]
    assert waiting[99].times_out_at == T0 + 2 * S + 900 * S
    assert waiting[99].outlook == (
        "unless its markers come, kafka-transactions find-hanging lists it from "
        "2023-11-14T22:28:22.000Z (its producer's last write plus the maximum transaction "
        "timeout, 900000 ms)"
    )
    assert waiting[99].abort_command is None


def test_find_hanging_needs_a_last_write_strictly_older_than_the_timeout(cluster: Path) -> None:
    # pid 99's last write is at T0 + 2 s; Kafka lists it once now - lastTimestamp > max
    at = T0 + 2 * S + 900 * S
    assert transaction_report(cluster, as_of=AsOf(timestamp_ms=at)).hanging == []
    (hanging,) = transaction_report(cluster, as_of=AsOf(timestamp_ms=at + 1)).hanging
    assert hanging.producer_id == 99 and hanging.idle_ms == 900 * S + 1


def test_aborted_ranges_from_markers_and_index(cluster: Path) -> None:
    report = transaction_report(cluster)
    p0 = next(p for p in report.partitions if p.partition == 0)
    ranges = [(a.producer_id, a.first_offset, a.last_offset) for a in p0.aborted_from_markers]
    assert ranges == [(11, 8, 11), (13, 12, 14)]
    assert [a.last_stable_offset for a in p0.aborted_from_markers] == [12, 15]
    assert p0.aborted_from_markers == p0.aborted_from_index
    assert p0.index_problems == []
    p1 = next(p for p in report.partitions if p.partition == 1)
    # pid 99's open transaction at offset 2 holds the LSO of both aborts
    assert [(a.producer_id, a.last_stable_offset) for a in p1.aborted_from_markers] == [
        (11, 2),
        (12, 2),
    ]


def test_index_disagreeing_with_markers_is_reported(tmp_path: Path) -> None:
    log = write_cluster(tmp_path)
    index = log / "orders-0" / "00000000000000000000.txnindex"
    index.write_bytes(
        struct.pack(">hqqqq", 0, 11, 8, 11, 9) + struct.pack(">hqqqq", 0, 42, 1, 3, 4)
    )
    p0 = next(p for p in transaction_report(log).partitions if p.partition == 0)
    assert p0.index_problems == [
        "producer 11 aborted 8..11: the .txnindex says last stable offset 9, the markers 12",
        "producer 13 aborted 12..14 (ABORT marker) is not in the .txnindex",
        "producer 42 aborted 1..3 is in the .txnindex but no ABORT marker closes such a "
        "transaction in the segments",
    ]


def test_producers_from_the_newest_snapshot(cluster: Path) -> None:
    p0 = next(p for p in transaction_report(cluster).partitions if p.partition == 0)
    assert p0.snapshot is not None and p0.snapshot.endswith("00000000000000000021.snapshot")
    assert [(e["producerId"], e["currentTxnFirstOffset"]) for e in p0.producers] == [
        (14, 15),
        (10, -1),
    ]


def test_transactional_ids_states_fencing_and_outcomes(cluster: Path) -> None:
    ids = {t.transactional_id: t for t in transaction_report(cluster).transactional_ids}
    assert sorted(ids) == ["tx-abort", "tx-commit", "tx-fenced", "tx-open", "tx-timeout"]
    commit = ids["tx-commit"]
    assert [c.state for c in commit.changes] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "CompleteCommit",
    ]
    assert [(x.outcome, x.duration_ms, x.partitions) for x in commit.transactions] == [
        ("committed", 2 * S, (O0,))
    ]
    assert [(x.outcome, x.partitions) for x in ids["tx-abort"].transactions] == [
        ("aborted", (O0, O1))
    ]
    assert [x.outcome for x in ids["tx-timeout"].transactions] == ["aborted (timed out)"]
    fenced = ids["tx-fenced"]
    assert [x.outcome for x in fenced.transactions] == ["aborted (fenced)"]
    assert [(c.change, c.producer_epoch) for c in fenced.changes if c.change] == [
        ("epoch bump", 1),
        ("epoch bump", 2),
    ]
    assert [x.outcome for x in ids["tx-open"].transactions] == ["open"]


def test_as_of_reads_the_disks_as_they_were(cluster: Path) -> None:
    # at T0 + 4.5 s: tx-timeout and tx-open have not begun, pid 99 is open 2.5 s
    report = transaction_report(cluster, as_of=AsOf(timestamp_ms=T0 + 4 * S + 500))
    p0 = next(p for p in report.partitions if p.partition == 0)
    assert (p0.log_end_offset, p0.open) == (12, [])
    assert report.hanging == []
    (young,) = report.open
    assert young.producer_id == 99 and young.age_ms == 2500
    (hanging,) = transaction_report(
        cluster, as_of=AsOf(timestamp_ms=T0 + 4 * S + 500), max_timeout_ms=2 * S
    ).hanging
    assert hanging.producer_id == 99
    ids = {t.transactional_id for t in report.transactional_ids}
    assert "tx-open" not in ids


def test_a_listed_transaction_past_its_timeout_is_not_hanging(cluster: Path) -> None:
    """The coordinator lists tx-open's transaction (Ongoing on orders-0): Kafka's find-hanging
    never lists it, however old; the coordinator aborts it itself once its timeout passes."""
    at = AsOf(timestamp_ms=T0 + 1000 * S)
    report = transaction_report(cluster, as_of=at)
    hanging = {t.producer_id: t for t in report.hanging}
    assert sorted(hanging) == [99]  # last write 998 s ago, unlisted
    (listed,) = [t for t in report.open if not t.hanging]
    assert listed.producer_id == 14 and listed.idle_ms == 970 * S
    assert listed.times_out_at == T0 + 90 * S and listed.abort_command is None


def test_the_loose_rule_flags_more_but_aborts_only_what_kafka_lists(cluster: Path) -> None:
    report = transaction_report(cluster, as_of=AsOf(timestamp_ms=T0 + 200 * S), rule="loose")
    assert report.rule == "loose"
    hanging = {t.producer_id: t for t in report.hanging}
    assert sorted(hanging) == [14, 99]
    assert "open 170000 ms, longer than its timeout of 60000 ms" in hanging[14].reason
    assert "find-hanging does not list it" in hanging[14].reason
    assert [g.group for g in hanging[14].blocked_groups] == ["g-rc"]
    assert "no transactional id of the coordinator has producer id 99" in hanging[99].reason
    assert all(t.abort_command is None and not t.find_hanging for t in hanging.values())
    code, out, _ = _run(cluster, "--as-of", "2023-11-14T22:16:20Z", "--rule", "loose")
    assert code == 1 and "rule: loose (looser than kafka-transactions find-hanging)" in out
    assert "abort it:" not in out


def test_transactional_id_filter(cluster: Path) -> None:
    report = transaction_report(cluster, "tx-fenced")
    assert [t.transactional_id for t in report.transactional_ids] == ["tx-fenced"]
    assert [(p.topic, p.partition) for p in report.partitions] == [O1]


def test_cli_jsonl_equals_the_api_and_exits_1_on_hanging(cluster: Path) -> None:
    code, out, _ = _run(cluster, "--format", "jsonl", "--max-timeout-ms", 20 * S)
    assert code == 1
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines == transaction_report(cluster, max_timeout_ms=20 * S).lines()
    kinds = [line["kind"] for line in lines]
    assert kinds == ["transactional-id"] * 5 + ["partition"] * 2 + ["hanging"]


def test_cli_table_and_html(cluster: Path, tmp_path: Path) -> None:
    code, out, _ = _run(cluster, "--max-timeout-ms", 20 * S)
    assert code == 1
    assert out.startswith("now 2023-11-14T22:13:51.000Z")
    assert "hanging transactions: 1" in out
    assert (
        "abort it: kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic orders " in out
    )
    assert "open transactions not hanging: 1" in out
    assert "orders-1  log end 11  LSO 2  gap 9" in out
    page = tmp_path / "t.html"
    code, _, _ = _run(cluster, "--format", "html", "--output", page, "--max-timeout-ms", 20 * S)
    text = page.read_text()
    assert code == 1 and text.startswith("<!DOCTYPE html>") and "Hanging transactions (1)" in text
    # every open transaction is named with its producer and offsets
    assert "Open transactions not hanging (1)" in text
    assert "<td>orders-0</td><td>14</td><td>0</td><td>15</td><td>18</td>" in text
    assert "<td>orders-1</td><td>99</td><td>0</td><td>2</td>" in text
    code, out, _ = _run(cluster)  # by default nothing is old enough
    assert code == 0 and "hanging transactions: 0" in out and "find-hanging lists it from" in out


def test_cli_clean_cluster_exits_0(cluster: Path) -> None:
    code, out, _ = _run(cluster / "orders-0")
    assert code == 0 and "hanging transactions: 0" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--as-of", "12:00"], "--as-of '12:00' is neither a log offset"),
        (["--transactional-id", "nope"], "transactional id 'nope' is not in the dump"),
    ],
)
def test_bad_options_exit_2(cluster: Path, args: list[str], message: str) -> None:
    code, _, err = _run(cluster, *args)
    assert code == 2 and message in err


def test_input_without_transactions_or_data_exits_2(tmp_path: Path) -> None:
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch([commit_record("g", "t", 0, 1, T0)], timestamp=T0)
    code, _, err = _run(folder)
    assert code == 2
    assert "expected __transaction_state-N or data partition folders" in err
    assert "holds partition folders of __consumer_offsets (1 partition(s))" in err


def test_real_data_without_transactions() -> None:
    real = Path(__file__).resolve().parent / "data" / "kafka-data" / "aibulb"
    report = transaction_report(real)
    (p,) = report.partitions
    assert (p.topic, p.open, p.aborted_from_markers) == ("my-topic", [], [])
    assert p.last_stable_offset == p.log_end_offset == 16
    assert report.hanging == [] and report.transactional_ids == []


def test_transaction_version_2_bumps_are_not_fencing(tmp_path: Path) -> None:
    """KIP-890: every transaction's end bumps the epoch; a fence is an abort followed at once
    by a new instance's InitProducerId (Empty with the next epoch), as a 4.x broker writes."""
    coord = tmp_path / "__transaction_state-0"
    coord.mkdir()
    records = [
        txn_record("a", "Empty", 5, 0, T0, [], tv=0),
        txn_record("a", "Ongoing", 5, 0, T0 + 1, [O0], start=T0 + 1, tv=2),
        txn_record("a", "PrepareAbort", 5, 1, T0 + 5, [O0], start=T0 + 1, tv=2),
        txn_record("a", "CompleteAbort", 5, 1, T0 + 6, [], start=T0 + 1, tv=2),
        txn_record("f", "Empty", 6, 0, T0, [], tv=0),
        txn_record("f", "Ongoing", 6, 0, T0 + 1, [O0], start=T0 + 1, tv=2),
        txn_record("f", "PrepareAbort", 6, 1, T0 + 110, [O0], start=T0 + 1, tv=2),
        txn_record("f", "CompleteAbort", 6, 1, T0 + 111, [], start=T0 + 1, tv=2),
        txn_record("f", "Empty", 6, 2, T0 + 215, [], tv=2),
        txn_record("t", "Ongoing", 7, 0, T0 + 1, [O0], timeout=1500, start=T0 + 1, tv=2),
        txn_record("t", "PrepareAbort", 7, 1, T0 + 1843, [O0], timeout=1500, start=T0 + 1, tv=2),
        txn_record("t", "CompleteAbort", 7, 1, T0 + 1905, [], timeout=1500, start=T0 + 1, tv=2),
    ]
    with SegmentWriter(coord / "00000000000000000000.log") as w:
        for key, value, at in records:
            w.write_batch([(key, value)], timestamp=at)
    ids = {t.transactional_id: t for t in transaction_report(tmp_path).transactional_ids}
    assert [x.outcome for x in ids["a"].transactions] == ["aborted"]
    assert [c.change for c in ids["a"].changes if c.change] == []
    assert [x.outcome for x in ids["f"].transactions] == ["aborted (fenced)"]
    assert [c.change for c in ids["f"].changes if c.change] == ["epoch bump"]
    assert [x.outcome for x in ids["t"].transactions] == ["aborted (timed out)"]


def _compressed(entry: bytes) -> bytes:
    """A v2 batch with its records gzip-compressed (a producer may compress a marker batch)."""
    payload = compress(Codec.GZIP, entry[61:])
    header = bytearray(entry[:61])
    struct.pack_into(">i", header, 8, 49 + len(payload))
    header[22] |= int(Codec.GZIP)
    struct.pack_into(">I", header, 17, crc32c.crc32c(bytes(header[21:]) + payload))
    return bytes(header) + payload


def _damaged_copy(cluster: Path, root: Path) -> Path:
    """The cluster with orders-1's markers compressed, the first plain batch of orders-0 made
    corrupt (its CRC no longer matches) and a torn tail on orders-0."""
    copy = root / "kafka-logs"
    shutil.copytree(cluster, copy)
    o1 = copy / "orders-1" / "00000000000000000000.log"
    data = o1.read_bytes()
    entries = [data[p : p + n] for p, n in entry_frames(data, 1 << 20)]  # type: ignore[misc]
    o1.write_bytes(b"".join(_compressed(e) if e[22] & 0x20 else e for e in entries))
    o0 = copy / "orders-0" / "00000000000000000000.log"
    damaged = bytearray(o0.read_bytes())
    damaged[70] ^= 0x40
    o0.write_bytes(bytes(damaged) + struct.pack(">qi", 40, 200) + b"cut")
    return copy


@pytest.mark.parametrize("at", [None, T0 + 4 * S + 500])
def test_both_backends_give_the_same_answers(
    cluster: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    records_module: ModuleType,
    at: int | None,
) -> None:
    """The native header pass and the reference read the data partitions to the same report,
    errors included; compressed markers end their transactions as plain ones do."""
    as_of = None if at is None else AsOf(timestamp_ms=at)
    damaged = _damaged_copy(cluster, tmp_path)
    answers: dict[str, list[Any]] = {}
    for backend in ("pure", "native"):
        monkeypatch.setenv(backends.ENVIRONMENT_VARIABLE, backend)
        assert native_headers_enabled() == (backend == "native")
        for name, path in (("plain", cluster), ("damaged", damaged)):
            report = transaction_report(path, as_of=as_of, max_timeout_ms=1000)
            answers.setdefault(name, []).append(
                (
                    report.now,
                    report.lines(),
                    [(e.kind, e.position, e.reason) for e in report.errors],
                )
            )
    assert answers["plain"][0] == answers["plain"][1]
    assert answers["damaged"][0] == answers["damaged"][1]
    _, plain, _ = answers["plain"][0]
    _, lines, errors = answers["damaged"][0]
    assert [kind for kind, _, _ in errors] == ["crc-mismatch", "truncated-tail"]
    orders1 = [line for line in lines if line.get("topic") == "orders" and line["partition"] == 1]
    expected = [line for line in plain if line.get("topic") == "orders" and line["partition"] == 1]
    for line in (*orders1, *expected):
        line.pop("folder", None)
    assert orders1 == expected and any(line["kind"] == "hanging" for line in orders1)


def write_offset_transactions(root: Path) -> Path:
    """A log dir of transactional offset commits (sendOffsetsToTransaction): tx-done (pid 32)
    committed; pid 31 left g-lost's commits open with no coordinator record; tx-offs (pid 30)
    is Ongoing with g-txn's commit."""
    log = root / "kafka-logs"
    offsets, coord = log / "__consumer_offsets-0", log / "__transaction_state-0"
    for d in (offsets, coord):
        d.mkdir(parents=True)
    co0 = ("__consumer_offsets", 0)
    txn: dict[str, Any] = {"producer_epoch": 0, "transactional": True}
    with SegmentWriter(offsets / "00000000000000000000.log") as w:
        w.write_batch([commit_record("g-plain", "orders", 0, 3, T0)], timestamp=T0)  # 0
        w.write_batch(
            [commit_record("g-done", "orders", 0, 4, T0 + S)],
            timestamp=T0 + S,
            producer_id=32,
            **txn,
        )  # 1
        w.write_control(ControlType.COMMIT, timestamp=T0 + 2 * S, producer_id=32, producer_epoch=0)
        w.write_batch(
            [
                commit_record("g-lost", "orders", 0, 7, T0 + 5 * S),
                commit_record("g-lost", "orders", 1, 2, T0 + 5 * S),
            ],
            timestamp=T0 + 5 * S,
            producer_id=31,
            **txn,
        )  # 3-4
        w.write_batch(
            [commit_record("g-txn", "orders", 0, 5, T0 + 10 * S)],
            timestamp=T0 + 10 * S,
            producer_id=30,
            **txn,
        )  # 5
        w.write_batch(
            [commit_record("g-plain", "orders", 0, 6, T0 + 60 * S)], timestamp=T0 + 60 * S
        )
    records = [
        txn_record("tx-done", "Ongoing", 32, 0, T0 + S, [co0], start=T0 + S),
        txn_record("tx-done", "CompleteCommit", 32, 0, T0 + 2 * S, [], start=T0 + S),
        txn_record("tx-offs", "Ongoing", 30, 0, T0 + 10 * S, [co0], start=T0 + 10 * S),
    ]
    with SegmentWriter(coord / "00000000000000000000.log") as w:
        for key, value, at in records:
            w.write_batch([(key, value)], timestamp=at)
    return log


def test_transactional_offset_commits_in_consumer_offsets(tmp_path: Path) -> None:
    """sendOffsetsToTransaction's commits: an open one keeps its group's offsets pending
    (UNSTABLE_OFFSET_COMMIT for consumers asking for stable offsets); one no coordinator lists
    hangs once old enough, as on a data partition."""
    log = write_offset_transactions(tmp_path)
    report = transaction_report(log, max_timeout_ms=30 * S)
    assert report.partitions == []
    (p,) = report.offset_partitions
    assert (p.topic, p.partition, p.committed, p.last_stable_offset, p.log_end_offset) == (
        "__consumer_offsets",
        0,
        1,
        3,
        7,
    )
    by_pid = {t.producer_id: t for t in p.open}
    assert [t.producer_id for t in p.open] == [31, 30]
    assert by_pid[31].pending_groups == ["g-lost"]
    assert [(c.topic, c.partition, c.offset) for c in by_pid[31].pending_commits] == [
        ("orders", 0, 7),
        ("orders", 1, 2),
    ]
    assert by_pid[30].pending_groups == ["g-txn"]
    (hanging,) = report.hanging
    assert hanging is by_pid[31] and hanging.abort_command == abort_command(
        "__consumer_offsets", 0, 3
    )
    assert not by_pid[30].hanging and by_pid[30].transactional_id == "tx-offs"
    lines = report.lines()
    (hanging_line,) = [line for line in lines if line["kind"] == "hanging"]
    assert hanging_line["pendingGroups"] == ["g-lost"]
    code, out, _ = _run(log, "--max-timeout-ms", 30 * S)
    assert code == 1
    assert "keeps pending the offsets of groups: g-lost (g-lost orders-0 at 7, " in out
    assert "__consumer_offsets-0  log end 7  LSO 3  gap 4  open 2  committed 1" in out


def test_folders_named_like_partitions_are_not_taken_for_them(tmp_path: Path) -> None:
    """A system configuration folder holds ``dbus-1`` and ``polkit-1``: folders with a topic's
    name and a number, but no file a broker writes."""
    for name, file in (("dbus-1", "system.conf"), ("polkit-1", "rules.d")):
        (tmp_path / name).mkdir()
        (tmp_path / name / file).write_text("x")
    code, _, err = _run(tmp_path)
    assert code == 2
    assert "holds no Kafka partition folder or segment (found: dbus-1, polkit-1)" in err
    assert "partition folders of dbus" not in err
