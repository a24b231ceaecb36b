"""Codec speed, side by side in one run: our generated codecs (native and pure-Python
backends), kafka-python 3.x and kio.

    .venv/bin/python bench/bench_codecs.py [--quick]

Every message is built once, encoded by us, and checked to be decoded and re-encoded
byte-identically by the peers before anything is timed. Each figure is the best of
several timed runs (µs per message); ratios are peer time / our time, so above 1 means we
are faster ("ours" is the native backend; the pure one is shown next to it). The `__consumer_offsets` pair is also compared with a hand-written `struct`
decoder, the floor a generated decoder is measured against.
"""

from __future__ import annotations

import argparse
import io
import struct
import sys
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CACHE = ROOT / ".cache" / "bench"


def corpus_package() -> Any:
    """Requests and responses come from Kafka 4.4.0's kafka-clients specs (fetched by `make
    setup`), generated into .cache/bench."""
    from codegen.emit import write_package
    from tests.corpus import kafka_specs

    out = CACHE / "bench_corpus"
    write_package(
        [kafka_specs("kafka-clients")], out
    )  # always: rewrites only what the current generator changes
    sys.path.insert(0, str(CACHE))
    import bench_corpus

    return bench_corpus


def interleaved(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Best time per call of each function (µs), timed in alternating rounds.

    Alternating keeps a slow spell of a shared machine from landing on one contender only.
    """
    numbers = {}
    for name, fn in fns.items():
        number, _ = timeit.Timer(fn).autorange()
        numbers[name] = max(number // 2, 1)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(runs):
        for name, fn in fns.items():
            seconds = timeit.Timer(fn).timeit(numbers[name])
            best[name] = min(best[name], seconds / numbers[name] * 1e6)
    return best


# ------------------------------------------------------------------------------- messages


def metadata_response() -> dict[str, Any]:
    return {
        "throttleTimeMs": 0,
        "brokers": [
            {
                "nodeId": i,
                "host": f"broker-{i}.kafka.internal",
                "port": 9092,
                "rack": f"rack-{i % 3}",
            }
            for i in range(5)
        ],
        "clusterId": "q1w2e3r4t5y6u7i8o9p0aa",
        "controllerId": 1,
        "topics": [
            {
                "errorCode": 0,
                "name": f"orders-events-{t:03d}",
                "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
                "isInternal": False,
                "partitions": [
                    {
                        "errorCode": 0,
                        "partitionIndex": p,
                        "leaderId": p % 5,
                        "leaderEpoch": 7,
                        "replicaNodes": [p % 5, (p + 1) % 5, (p + 2) % 5],
                        "isrNodes": [p % 5, (p + 1) % 5, (p + 2) % 5],
                        "offlineReplicas": [],
                    }
                    for p in range(10)
                ],
                "topicAuthorizedOperations": -2147483648,
            }
            for t in range(100)
        ],
    }


def offset_commit_request() -> dict[str, Any]:
    return {
        "groupId": "payments-consumer",
        "generationIdOrMemberEpoch": 12,
        "memberId": "consumer-1-6f1c0b7e-3c2a-4a8e-9d7e-1f2a3b4c5d6e",
        "groupInstanceId": None,
        "topics": [
            {
                "name": f"payments-{t}",
                "partitions": [
                    {
                        "partitionIndex": p,
                        "committedOffset": 1_000_000 + p,
                        "committedLeaderEpoch": 3,
                        "committedMetadata": "",
                    }
                    for p in range(8)
                ],
            }
            for t in range(3)
        ],
    }


def fetch_response() -> dict[str, Any]:
    return {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "sessionId": 12345,
        "responses": [
            {
                "topicId": "AAAAAAAAAAAAAAAAAAAAAg",
                "partitions": [
                    {
                        "partitionIndex": p,
                        "errorCode": 0,
                        "highWatermark": 500_000 + p,
                        "lastStableOffset": 499_990 + p,
                        "logStartOffset": 0,
                        "currentLeader": {"leaderId": p % 3, "leaderEpoch": 9},
                        "abortedTransactions": [],
                        "preferredReadReplica": -1,
                        "records": None,
                    }
                    for p in range(10)
                ],
            }
            for _ in range(5)
        ],
        "nodeEndpoints": [],
    }


def consumer_subscription() -> dict[str, Any]:
    return {
        "topics": [f"clickstream-{i}" for i in range(6)],
        "userData": "AAECAwQFBgcICQ==",
        "ownedPartitions": [
            {"topic": f"clickstream-{i}", "partitions": [0, 1, 2, 3]} for i in range(6)
        ],
        "generationId": 42,
        "rackId": "use1-az1",
    }


@dataclass
class Case:
    label: str
    spec: str
    version: int
    json: dict[str, Any]
    kafka_python: tuple[Any, dict[str, Any]] | None  # class, decode/encode kwargs
    kio: Any | None  # kio class or None


def kafka_python_classes() -> dict[str, Any]:
    from kafka.protocol.consumer.fetch import FetchResponse
    from kafka.protocol.consumer.group import OffsetCommitRequest
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
    from kafka.protocol.metadata.metadata import MetadataResponse

    return {
        "MetadataResponse": MetadataResponse,
        "OffsetCommitRequest": OffsetCommitRequest,
        "FetchResponse": FetchResponse,
        "ConsumerProtocolSubscription": ConsumerProtocolSubscription,
    }


def kio_classes() -> dict[str, Any]:
    from kio.index import load_entity_schema, load_request_schema, load_response_schema
    from kio.static.constants import EntityType

    return {
        "MetadataResponse": load_response_schema(3, 12),
        "OffsetCommitRequest": load_request_schema(8, 9),
        "FetchResponse": load_response_schema(1, 16),
        "ConsumerProtocolSubscription": load_entity_schema(
            "consumer_protocol_subscription", 3, EntityType.data
        ),
    }


def run_case(case: Case, ours: Any, runs: int) -> dict[str, float | None]:
    """Check every contender's bytes, then time them all in alternating rounds."""
    cls = ours.MESSAGES[case.spec]
    obj = cls.from_json(case.json, case.version)
    data = obj.encode(case.version)
    assert cls.decode(data, case.version) == obj
    native, pure = native_readers(cls), cls._PURE_READERS
    # What cls.decode does on each backend: the version's reader over the whole buffer.
    contenders: dict[str, Callable[[], object]] = {
        "ours_dec": lambda: cls._decode_whole(native, data, case.version),
        "pure_dec": lambda: cls._decode_whole(pure, data, case.version),
        "ours_enc": lambda: obj.encode(case.version),
    }
    assert cls._decode_whole(native, data, case.version) == obj
    kp = kafka_python_classes().get(case.spec)
    if kp is not None:
        header = {"header": False} if case.spec == "ConsumerProtocolSubscription" else {}
        kp_obj = kp.decode(data, version=case.version, **header)
        if hasattr(type(kp_obj), "_header"):
            # kafka-python's fast decode path skips __init__, which encode() relies on.
            object.__setattr__(kp_obj, "_header", None)
        kp_bytes = kp_obj.encode(version=case.version, **header)
        assert bytes(kp_bytes) == data, f"kafka-python re-encodes {case.label} differently"
        contenders["kp_dec"] = lambda: kp.decode(data, version=case.version, **header)
        contenders["kp_enc"] = lambda: kp_obj.encode(version=case.version, **header)
    kio_cls = kio_classes().get(case.spec)
    if kio_cls is not None:
        from kio.serial import entity_reader, entity_writer

        reader, writer = entity_reader(kio_cls), entity_writer(kio_cls)
        kio_obj, _ = reader(data, 0)

        def kio_encode() -> bytes:
            buf = io.BytesIO()
            writer(buf, kio_obj)
            return buf.getvalue()

        assert kio_encode() == data, f"kio re-encodes {case.label} differently"
        contenders["kio_dec"] = lambda: reader(data, 0)
        contenders["kio_enc"] = kio_encode
    times = interleaved(contenders, runs)
    row: dict[str, float | None] = {"bytes": len(data)}
    for name in ("ours_dec", "pure_dec", "ours_enc", "kp_dec", "kp_enc", "kio_dec", "kio_enc"):
        row[name] = times.get(name)
    return row


def native_readers(cls: Any) -> dict[int, Any]:
    """The class's native readers; the bench compares backends, so the engine must be built."""
    from codegen.runtime import backends

    if backends.native_problem() is not None:
        raise SystemExit(f"bench_codecs: {backends.native_problem()}")
    readers, _ = backends.native_readers(
        backends.native_engine(), cls._NATIVE_CLASSES, cls._NATIVE_TABLES
    )
    return readers


# ------------------------------------------------------------------------ offsets pair

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_QIH = struct.Struct(">qih")
_Q = struct.Struct(">q")


def hand_written_pair(key: bytes, value: bytes) -> tuple[tuple[str, str, int], tuple[int, ...]]:
    """The floor: a hand-written struct decoder of key v1 + value v3 (no checks).

    Like any topic decoder (and ours below) it reads the two int16 prefixes that say which
    layout follows, then the bodies.
    """
    (_key_type,) = _H.unpack_from(key)
    (_value_version,) = _H.unpack_from(value)
    (n,) = _H.unpack_from(key, 2)
    group = key[4 : 4 + n].decode()
    o = 4 + n
    (n,) = _H.unpack_from(key, o)
    topic = key[o + 2 : o + 2 + n].decode()
    o += 2 + n
    (partition,) = _I.unpack_from(key, o)
    offset, epoch, n = _QIH.unpack_from(value, 2)
    metadata = value[16 : 16 + n].decode()
    (ts,) = _Q.unpack_from(value, 16 + n)
    return (group, topic, partition), (offset, epoch, len(metadata), ts)


def offsets_pair(runs: int) -> dict[str, float]:
    from generated.offset_commit_key import OffsetCommitKey
    from generated.offset_commit_value import OffsetCommitValue

    key_obj = OffsetCommitKey(group="payments-consumer", topic="payments-events", partition=7)
    value_obj = OffsetCommitValue(
        offset=1_234_567, leader_epoch=5, metadata="", commit_timestamp=1_700_000_000_000
    )
    key = _H.pack(1) + key_obj.encode(0)
    value = _H.pack(3) + value_obj.encode(3)

    from codegen.dumps.coordinator import record_pair_reader

    read_key, read_value = native_readers(OffsetCommitKey)[0], native_readers(OffsetCommitValue)[3]
    pure_key, pure_value = OffsetCommitKey._PURE_READERS[0], OffsetCommitValue._PURE_READERS[3]
    read_pair, read_pair_rows = record_pair_reader(), record_pair_reader(rows=True)

    def ours() -> tuple[object, object]:
        # The hot-loop form a topic decoder uses: the int16 prefixes pick the readers.
        (_key_type,) = _H.unpack_from(key)
        (_value_version,) = _H.unpack_from(value)
        k, _ = read_key(key, 2)
        v, _ = read_value(value, 2)
        return k, v

    def ours_pair() -> tuple[object, object]:
        # One native call: it reads the prefixes, picks the readers, reads key and value.
        k, v = read_pair(key, value)
        return k, v

    def ours_rows() -> tuple[object, object]:
        # The same with row readers: tuples of field values, as the hand-written decoder gives.
        k, v = read_pair_rows(key, value)
        return k, v

    def pure() -> tuple[object, object]:
        (_key_type,) = _H.unpack_from(key)
        (_value_version,) = _H.unpack_from(value)
        k, _ = pure_key(key, 2)
        v, _ = pure_value(value, 2)
        return k, v

    def ours_read() -> tuple[object, object]:
        k, _ = OffsetCommitKey.read(key, 2, 0)
        v, _ = OffsetCommitValue.read(value, 2, 3)
        return k, v

    assert ours() == ours_pair() == pure() == ours_read() == (key_obj, value_obj)
    assert ours_rows()[0][:3] == ("payments-consumer", "payments-events", 7)
    assert hand_written_pair(key, value)[0] == ("payments-consumer", "payments-events", 7)
    return interleaved(
        {
            "ours": ours,
            "ours_pair": ours_pair,
            "ours_rows": ours_rows,
            "pure": pure,
            "ours_read": ours_read,
            "hand": lambda: hand_written_pair(key, value),
        },
        runs * 3,
    )


def fmt(x: float | None) -> str:
    return "-" if x is None else (f"{x:,.2f}" if x < 10 else f"{x:,.1f}")


def ratio(peer: float | None, ours: float | None) -> str:
    return "-" if peer is None or not ours else f"{peer / ours:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer timed runs")
    args = parser.parse_args()
    runs = 3 if args.quick else 7
    corpus = corpus_package()
    cases = [
        Case(
            "MetadataResponse v12 (100 topics x 10 partitions)",
            "MetadataResponse",
            12,
            metadata_response(),
            None,
            None,
        ),
        Case(
            "OffsetCommitRequest v9 (3 x 8 partitions)",
            "OffsetCommitRequest",
            9,
            offset_commit_request(),
            None,
            None,
        ),
        Case(
            "FetchResponse v16 (50 partitions, 1 tag each)",
            "FetchResponse",
            16,
            fetch_response(),
            None,
            None,
        ),
        Case(
            "ConsumerProtocolSubscription v3",
            "ConsumerProtocolSubscription",
            3,
            consumer_subscription(),
            None,
            None,
        ),
    ]
    print(f"Python {sys.version.split()[0]}; best of {runs} runs; µs per message\n")
    header = (
        "| message | bytes | ours dec (native) | pure dec | ours enc | kafka-python dec "
        "| kafka-python enc | kio dec | kio enc | native vs pure dec | vs kafka-python dec "
        "| vs kafka-python enc | vs kio dec | vs kio enc |"
    )
    print(header)
    print("|" + "---|" * 14)
    for case in cases:
        r = run_case(case, corpus, runs)
        print(
            f"| {case.label} | {r['bytes']:.0f} | {fmt(r['ours_dec'])} | {fmt(r['pure_dec'])} "
            f"| {fmt(r['ours_enc'])} | {fmt(r['kp_dec'])} | {fmt(r['kp_enc'])} "
            f"| {fmt(r['kio_dec'])} | {fmt(r['kio_enc'])} | {ratio(r['pure_dec'], r['ours_dec'])} "
            f"| {ratio(r['kp_dec'], r['ours_dec'])} | {ratio(r['kp_enc'], r['ours_enc'])} "
            f"| {ratio(r['kio_dec'], r['ours_dec'])} | {ratio(r['kio_enc'], r['ours_enc'])} |"
        )
    pair = offsets_pair(runs)
    hand = pair["hand"]
    print(
        "\n__consumer_offsets OffsetCommitKey v1 + OffsetCommitValue v3 pair (targets: objects "
        "at most 0.4x, tuples at most 0.3x the hand-written decoder):\n"
        f"  native, objects, record_pair_reader(): {pair['ours_pair']:.2f} µs "
        f"({pair['ours_pair'] / hand:.2f}x hand-written)\n"
        f"  native, tuples, record_pair_reader(rows=True): {pair['ours_rows']:.2f} µs "
        f"({pair['ours_rows'] / hand:.2f}x hand-written)\n"
        f"  native, objects, two Cls.reader(version) calls: {pair['ours']:.2f} µs "
        f"({pair['ours'] / hand:.2f}x hand-written)\n"
        f"  pure, objects, two reader calls: {pair['pure']:.2f} µs "
        f"({pair['pure'] / hand:.2f}x hand-written)\n"
        f"  active backend, objects with Cls.read(): {pair['ours_read']:.2f} µs\n"
        f"  hand-written struct decoder, no checks: {hand:.2f} µs"
    )


if __name__ == "__main__":
    main()
