"""payments and the transactions around it (:mod:`spark_udfs.cluster`): payment-service's three
instances, each a transactional producer (transaction version 2: every transaction ends with
a new epoch) that reads orders and writes payments, committing its offsets inside its
transactions; and payment-reconciler's one transaction, which its coordinator aborts on
timeout but whose ABORT marker never reaches payments-1: a hanging transaction.

The same transactions are written three times, as the brokers write them: the records and
markers of payments (:func:`write_payments`), the coordinator's ``__transaction_state``
(:func:`transaction_state`) and payment-service's commits in ``__consumer_offsets``
(:func:`payment_service`).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from codegen.dumps.log_dir_writer import LogDir
from codegen.dumps.model import ControlType
from spark_udfs.cluster.data import TOPICS
from spark_udfs.cluster.groups import SECOND, Batch, DataLog, GroupSim, Story
from spark_udfs.cluster.records import Record, transaction_record

__all__ = [
    "CONSUMER_OFFSETS",
    "Txn",
    "payment_service",
    "plan_transactions",
    "transaction_state",
    "write_payments",
]

CONSUMER_OFFSETS = "__consumer_offsets"
TIMEOUT_MS = 60_000
HANGS_FOR = 20 * 60 * SECOND
"""How long before the end the hanging transaction starts, at least: longer than a broker's
default transaction.max.timeout.ms (15 minutes)."""


@dataclass(slots=True)
class Txn:
    time: int
    transactional_id: str
    producer_id: int
    epoch: int
    payments: list[int]
    committed: bool
    hanging: bool = False


def plan_transactions(
    rnd: random.Random, start: int, end: int, first_pid: int, story: Story
) -> tuple[list[Txn], dict[str, int]]:
    """payment-service's three instances, a transaction every two seconds or so each (3 % of
    them aborted), and payment-reconciler's one transaction at 62 %, which hangs (at least
    :data:`HANGS_FOR` before the end: Kafka's find-hanging lists a transaction only once its
    last write is older than the broker's transaction.max.timeout.ms)."""
    txns: list[Txn] = []
    pids: dict[str, int] = {}
    for i in range(3):
        tid = f"payment-service-{i}"
        pids[tid] = first_pid + i
        t = start + rnd.randrange(1, 4) * SECOND + i * 300
        epoch = 0
        while t < end - SECOND:
            parts = sorted(rnd.sample(range(3), rnd.choice([1, 1, 2])))
            txns.append(Txn(t, tid, pids[tid], epoch, parts, rnd.random() > 0.03))
            epoch += 1  # transaction version 2: every transaction ends with a new epoch
            t += 2 * SECOND + rnd.randrange(-400, 400)
    pids["payment-reconciler"] = first_pid + 3
    hangs_from = min(story.at(0.62), end - HANGS_FOR)
    txns.append(Txn(hangs_from, "payment-reconciler", first_pid + 3, 0, [1], False, True))
    txns.sort(key=lambda x: x.time)
    return txns, pids


def write_payments(
    log_dir: LogDir,
    topic_id: uuid.UUID,
    txns: list[Txn],
    rnd: random.Random,
    story: Story,
) -> None:
    """payments-0..2: each transaction's records then its marker; the hanging one's records
    and no marker. Their log ends over time go to ``story.data``."""
    logs = [log_dir.partition("payments", p, topic_id) for p in range(3)]
    sequences: dict[tuple[int, int], int] = {}
    for p in range(3):
        story.data[("payments", p)] = DataLog()
    spec = TOPICS[1]
    for txn in txns:
        for p in txn.payments:
            log = logs[p]
            n = rnd.randrange(1, 4) if not txn.hanging else 5
            records = [
                (
                    f"pay-{rnd.randrange(10**6)}".encode(),
                    json.dumps(
                        {"orderId": f"o-{rnd.randrange(100000, 999999)}", "status": "captured"}
                    ).encode(),
                )
                for _ in range(n)
            ]
            seq = sequences.get((txn.producer_id, p), 0)
            first = log.write_batch(
                records,
                timestamp=txn.time + 4,
                codec=spec.codec,
                producer_id=txn.producer_id,
                producer_epoch=txn.epoch,
                base_sequence=seq,
                transactional=True,
            )
            sequences[(txn.producer_id, p)] = seq + n
            data = story.data[("payments", p)]
            data.times.append(txn.time + 4)
            data.ends.append(log.next_offset)
            if txn.hanging:
                data.stuck_from, data.stuck_at = txn.time + 4, first
                continue
            log.write_marker(
                ControlType.COMMIT if txn.committed else ControlType.ABORT,
                timestamp=txn.time + 14,
                producer_id=txn.producer_id,
                producer_epoch=txn.epoch + 1,
                coordinator_epoch=0,
            )
            data.times.append(txn.time + 14)
            data.ends.append(log.next_offset)


def transaction_state(txns: list[Txn], offsets_partition: int) -> Iterator[tuple[int, str, Record]]:
    """(time, transactional id, record) of ``__transaction_state``, in time order per id."""
    seen: set[str] = set()
    for txn in txns:
        tid, pid, e = txn.transactional_id, txn.producer_id, txn.epoch
        if tid not in seen:
            seen.add(tid)
            yield (
                txn.time - 2000,
                tid,
                transaction_record(
                    tid,
                    producer_id=pid,
                    epoch=0,
                    status="Empty",
                    partitions=None,
                    timeout_ms=60000,
                    last_update=txn.time - 2000,
                    start=-1,
                ),
            )
        payments = {"payments": txn.payments}
        yield (
            txn.time + 3,
            tid,
            transaction_record(
                tid,
                producer_id=pid,
                epoch=e,
                status="Ongoing",
                partitions=payments,
                timeout_ms=60000,
                last_update=txn.time + 3,
                start=txn.time + 3,
            ),
        )
        if txn.hanging:
            abort_at = txn.time + 60000 + 1200  # its timeout passed: the coordinator aborts
            yield (
                abort_at,
                tid,
                transaction_record(
                    tid,
                    producer_id=pid,
                    epoch=e + 1,
                    status="PrepareAbort",
                    partitions=payments,
                    timeout_ms=60000,
                    last_update=abort_at,
                    start=txn.time + 3,
                ),
            )
            yield (
                abort_at + 6,
                tid,
                transaction_record(
                    tid,
                    producer_id=pid,
                    epoch=e + 1,
                    status="CompleteAbort",
                    partitions={},
                    timeout_ms=60000,
                    last_update=abort_at + 2,
                    start=txn.time + 3,
                ),
            )
            continue
        both = {**payments, CONSUMER_OFFSETS: [offsets_partition]}
        yield (
            txn.time + 6,
            tid,
            transaction_record(
                tid,
                producer_id=pid,
                epoch=e,
                status="Ongoing",
                partitions=both,
                timeout_ms=60000,
                last_update=txn.time + 6,
                start=txn.time + 3,
            ),
        )
        prepare, complete = (
            ("PrepareCommit", "CompleteCommit")
            if txn.committed
            else ("PrepareAbort", "CompleteAbort")
        )
        yield (
            txn.time + 12,
            tid,
            transaction_record(
                tid,
                producer_id=pid,
                epoch=e + 1,
                status=prepare,
                partitions=both,
                timeout_ms=60000,
                last_update=txn.time + 12,
                start=txn.time + 3,
            ),
        )
        yield (
            txn.time + 15,
            tid,
            transaction_record(
                tid,
                producer_id=pid,
                epoch=e + 1,
                status=complete,
                partitions={},
                timeout_ms=60000,
                last_update=txn.time + 13,
                start=txn.time + 3,
            ),
        )


def payment_service(story: Story, txns: list[Txn]) -> GroupSim:
    """payment-service's group (orders, consumer protocol) and its commits inside its
    transactions: a transactional batch, then the transaction's marker."""
    s = story
    g = GroupSim(s, "payment-service", ["orders"], protocol="consumer")
    for i in range(3):
        g.join(s.at(0.0) + (1 + i) * SECOND, f"payment-service-{i}")
    members = list(g.members)
    sequences: dict[int, int] = {}
    for txn in txns:
        if txn.hanging:
            continue
        i = int(txn.transactional_id.rsplit("-", 1)[1])
        tps = g.assignment[members[i]]
        batch = g.commit_batch(txn.time + 7, tps, s.keeps_up(50))
        seq = sequences.get(txn.producer_id, 0)
        sequences[txn.producer_id] = seq + len(batch.records)
        batch.producer = (txn.producer_id, txn.epoch, seq)
        s.batches.append(batch)
        control = ControlType.COMMIT if txn.committed else ControlType.ABORT
        s.batches.append(
            Batch(
                txn.time + 14,
                g.partition,
                [],
                marker=(int(control), txn.producer_id, txn.epoch + 1, 0),
            )
        )
    return g
