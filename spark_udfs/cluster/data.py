"""The cluster's data topics (:mod:`spark_udfs.cluster`): what a web shop's producers write
over the hour, as idempotent producers write it (a producer id, sequences per partition,
compressed batches), and each partition's log end over time for its consumers.

A batch's records are made once per size and a few variants (:class:`Payloads`) and framed
again at each offset (:func:`codegen.dumps.writer.frame_v2_batch`): a topic of tens of
thousands of batches costs a few hundred encodings.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Final

from codegen.dumps.compression import Codec
from codegen.dumps.log_dir_writer import LogDir
from codegen.dumps.writer import NewRecord, encode_record_batch, frame_v2_batch
from spark_udfs.cluster.groups import MINUTE, DataLog, Story

__all__ = ["CLICKSTREAM_SEGMENT", "START", "TOPICS", "TopicSpec", "write_data_topics"]

START: Final = 1796115600000
"""2026-12-01T09:00:00Z: the hour starts."""
CLICKSTREAM_SEGMENT: Final = 256 * 1024
"""clickstream's segment.bytes: set small, so its partitions roll (segments, snapshots)."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    rate: float
    """Records per second per partition."""
    batch_ms: int
    codec: Codec
    producer: str
    segment_bytes: int = 1 << 30


TOPICS: Final = (
    TopicSpec("orders", 6, 2.0, 1000, Codec.LZ4, "web-shop"),
    TopicSpec("payments", 3, 0.0, 0, Codec.NONE, "payment-service"),
    TopicSpec("shipments", 3, 1.0, 2000, Codec.LZ4, "fulfilment"),
    TopicSpec("inventory", 4, 1.5, 1000, Codec.LZ4, "warehouse"),
    TopicSpec("clickstream", 12, 12.0, 1000, Codec.ZSTD, "edge-collector", CLICKSTREAM_SEGMENT),
    TopicSpec("audit-log", 1, 0.5, 5000, Codec.NONE, "audit"),
)


def _value(topic: str, rnd: random.Random) -> tuple[bytes, bytes]:
    n = rnd.randrange(100000, 999999)
    if topic == "orders":
        body = {
            "orderId": f"o-{n}",
            "customerId": f"c-{n % 7919}",
            "lines": rnd.randrange(1, 6),
            "total": f"{rnd.randrange(500, 40000) / 100:.2f}",
            "currency": "EUR",
        }
        return f"o-{n}".encode(), json.dumps(body, separators=(",", ":")).encode()
    if topic == "shipments":
        body = {
            "orderId": f"o-{n}",
            "carrier": rnd.choice(["dhl", "ups", "postnl"]),
            "status": rnd.choice(["label-created", "picked-up", "in-transit", "delivered"]),
        }
        return f"o-{n}".encode(), json.dumps(body, separators=(",", ":")).encode()
    if topic == "inventory":
        body = {
            "sku": f"sku-{n % 4099}",
            "warehouse": rnd.choice(["ams-1", "fra-2"]),
            "onHand": rnd.randrange(0, 500),
        }
        return f"sku-{n % 4099}".encode(), json.dumps(body, separators=(",", ":")).encode()
    if topic == "clickstream":
        page = rnd.choice(["/", "/search", "/product", "/cart", "/checkout"])
        body = {
            "session": f"s-{n:x}",
            "page": page,
            "referrer": rnd.choice(["", "google", "newsletter"]),
            "ms": rnd.randrange(20, 900),
        }
        return f"s-{n:x}".encode(), json.dumps(body, separators=(",", ":")).encode()
    body = {"actor": f"user-{n % 97}", "action": rnd.choice(["login", "refund", "price-change"])}
    return f"user-{n % 97}".encode(), json.dumps(body, separators=(",", ":")).encode()


class Payloads:
    """Batches' payloads (their records, compressed), a few per size, framed again and again
    at new offsets: a topic of tens of thousands of batches costs a few hundred encodings."""

    VARIANTS: Final = 8

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.made: dict[tuple[str, int, int], tuple[bytes, int, int, int]] = {}

    def get(self, spec: TopicSpec, count: int) -> tuple[bytes, int, int, int]:
        """(payload, attributes, last offset delta, newest timestamp delta)."""
        k = (spec.name, count, self.rnd.randrange(self.VARIANTS))
        if k not in self.made:
            records = [NewRecord(*_value(spec.name, self.rnd), timestamp=i) for i in range(count)]
            batch = encode_record_batch(records, codec=spec.codec)
            attributes = int.from_bytes(batch[21:23], "big")
            self.made[k] = (batch[61:], attributes, count - 1, count - 1)
        return self.made[k]


def schedule(spec: TopicSpec, rnd: random.Random, start: int, end: int) -> list[tuple[int, int]]:
    """(time, record count) of a partition's batches."""
    out = []
    t = start + rnd.randrange(spec.batch_ms)
    mean = spec.rate * spec.batch_ms / 1000
    while t < end:
        count = max(1, int(rnd.gauss(mean, mean / 4) + 0.5))
        out.append((t, count))
        t += spec.batch_ms + rnd.randrange(-spec.batch_ms // 5, spec.batch_ms // 5 + 1)
    return out


def write_data_topics(
    log_dir: LogDir, story: Story, rnd: random.Random, first_pid: int
) -> tuple[int, dict[str, int]]:
    """Every data topic but payments, from five minutes before the hour to its end; each
    partition's log end over time goes to ``story.data``. Returns the records written and each
    producer's id (from ``first_pid``)."""
    payloads = Payloads(rnd)
    pid_of: dict[str, int] = {}
    written = 0
    for spec in TOPICS:
        if spec.name == "payments":
            continue
        pid = pid_of.setdefault(spec.producer, first_pid + len(pid_of))
        for p in range(spec.partitions):
            log = log_dir.partition(
                spec.name, p, story.topic_ids[spec.name], segment_bytes=spec.segment_bytes
            )
            data = story.data[(spec.name, p)] = DataLog()
            seq = 0
            for t, count in schedule(spec, rnd, story.start - 5 * MINUTE, story.end):
                payload, attrs, last_delta, ts_delta = payloads.get(spec, count)
                log.append(
                    frame_v2_batch(
                        payload,
                        attributes=attrs,
                        record_count=count,
                        last_offset_delta=last_delta,
                        base_offset=log.next_offset,
                        base_timestamp=t,
                        max_timestamp=t + ts_delta,
                        producer_id=pid,
                        producer_epoch=0,
                        base_sequence=seq,
                    )
                )
                seq += count
                data.times.append(t + ts_delta)
                data.ends.append(log.next_offset)
            written += log.records
    return written, pid_of
