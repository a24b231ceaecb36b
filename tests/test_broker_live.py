"""Internal topics read live from the test broker with Spark's Kafka source (``pytest -m kafka``).

``live_broker`` (tests/conftest.py) is the broker of ``broker_run`` started again on a copy of
its log folder, after the workload; ``live_spark`` has Spark's Kafka source on its class path
(tests/broker/spark-kafka/fetch.sh). The tests check:

- a batch read of ``__consumer_offsets``, decoded with the topic functions, gives the broker's
  own committed offsets (listConsumerGroupOffsets) and group types;
- ``__consumer_offsets``, ``__transaction_state`` and ``__share_group_state`` read live decode to
  the same records as the stopped broker's log files through the ``kafka-log`` source;
- the streaming recipe (``spark_udfs.live.track_committed_offsets``) builds the table of
  committed offsets the broker answers, over several micro-batches;
- the main job reads ``__consumer_offsets`` live with ``--bootstrap-servers``.

The tests marked ``spark_connect`` run once more in that pass of ``make test``, as a Spark
Connect client of the run's local server (``live_spark``): there the client cannot ask the
cluster for a topic's partition count, so they give the broker's setting, as a user would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from broker.client import BrokerRun, LiveBroker, spark_kafka_jars
from test_broker import _segments, _truth_offsets

from codegen.dumps.coordinator import CONSUMER_OFFSETS, SHARE_GROUP_STATE, TRANSACTION_STATE

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.xdist_group("kafka")]

ROOT = Path(__file__).resolve().parents[1]
_TYPES = {"Classic": "classic", "Consumer": "consumer", "Share": "share", "Streams": "streams"}
_DECODERS = {
    CONSUMER_OFFSETS: "decode_consumer_offsets",
    TRANSACTION_STATE: "decode_transaction_state",
    SHARE_GROUP_STATE: "decode_share_group_state",
}


# The broker's settings for the internal topics' partition counts (tests/broker/client.py).
_PARTITIONS_SETTING = {
    CONSUMER_OFFSETS: "offsets.topic.num.partitions",
    TRANSACTION_STATE: "transaction.state.log.num.partitions",
    SHARE_GROUP_STATE: "share.coordinator.state.topic.num.partitions",
}


def _partitions(spark: Any, broker: LiveBroker, topic: str) -> int | None:
    """None on a classic session (it asks the cluster); over Spark Connect the broker's setting
    for ``topic``, read from its configuration, as ``read_internal_topic`` then needs it."""
    from spark_udfs.connect import is_connect

    if not is_connect(spark):
        return None
    lines = (broker.folder / "server.properties").read_text().splitlines()
    settings = dict(line.split("=", 1) for line in lines if "=" in line)
    return int(settings[_PARTITIONS_SETTING[topic]])


def _offsets(rows: Any) -> dict[tuple[str, str, int], tuple[int, str, int]]:
    return {(r.group, r.topic, r.partition): (r.offset, r.metadata, r.leaderEpoch) for r in rows}


@pytest.mark.spark_connect
def test_batch_read_of_consumer_offsets_matches_the_broker(
    live_broker: LiveBroker, live_spark: Any
) -> None:
    from spark_udfs import compacted, live
    from spark_udfs.functions import decode_consumer_offsets

    raw = live.read_internal_topic(
        live_spark,
        live_broker.bootstrap_servers,
        CONSUMER_OFFSETS,
        partitions=_partitions(live_spark, live_broker, CONSUMER_OFFSETS),
    )
    decoded = live.as_log_rows(decode_consumer_offsets(raw)).cache()
    got = _offsets(compacted.committed_offsets(decoded).collect())
    truth = live_broker.run.truth
    assert len(got) >= 15
    assert got == _truth_offsets(truth)
    # States move on once the restarted broker expires the workload's members; types do not.
    groups = {r.group: r.type for r in compacted.group_states(decoded).collect()}
    # group_states lists classic and consumer groups; the source's own consumer joined none.
    assert groups == {
        g["groupId"]: _TYPES[g["type"]]
        for g in truth["groups"]
        if g["type"] in ("Classic", "Consumer")
    }
    decoded.unpersist()


def test_a_topic_the_cluster_does_not_have_says_what_to_check(
    live_broker: LiveBroker, live_spark: Any
) -> None:
    from spark_udfs.live import LiveTopicError, read_internal_topic

    with pytest.raises(LiveTopicError) as raised:
        read_internal_topic(live_spark, live_broker.bootstrap_servers, "__no_such_topic")
    assert str(raised.value).startswith(
        f"cannot describe topic '__no_such_topic' at {live_broker.bootstrap_servers}: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"
    )
    assert "that the topic exists" in str(raised.value)


def _record_rows(df: Any) -> set[tuple[Any, ...]]:
    from pyspark.sql import functions as F

    return {
        tuple(r)
        for r in df.select(
            "partition",
            "offset",
            "recordName",
            "isTombstone",
            F.to_json("decodedKey"),
            F.to_json("decodedValue"),
        ).collect()
    }


@pytest.mark.spark_connect
@pytest.mark.parametrize("topic", list(_DECODERS))
def test_live_records_decode_like_the_log_files(
    broker_run: BrokerRun, live_broker: LiveBroker, live_spark: Any, topic: str
) -> None:
    from pyspark.sql import functions as F

    from spark_udfs import compacted, functions, live

    decode = getattr(functions, _DECODERS[topic])
    files = decode(
        live_spark.read.format("kafka-log").load([str(f) for f in _segments(broker_run, topic)])
    )
    # What the stopped broker's files hold, without control records and aborted transactions.
    expected = _record_rows(compacted.effective_records(files))
    ends = {
        r.partition: r.end
        for r in files.groupBy("partition").agg((F.max("offset") + 1).alias("end")).collect()
    }
    assert expected, f"the workload left no {topic} records"

    partitions = _partitions(live_spark, live_broker, topic)
    rows = decode(
        live.read_internal_topic(
            live_spark, live_broker.bootstrap_servers, topic, partitions=partitions
        )
    )
    # The restarted broker may have appended since; compare the records the files hold.
    end = F.element_at(
        F.create_map(*(F.lit(x) for kv in ends.items() for x in kv)), F.col("partition")
    )
    got = _record_rows(rows.filter(F.col("offset") < F.coalesce(end, F.lit(0))))
    assert got == expected


@pytest.mark.spark_connect
def test_streaming_recipe_keeps_the_committed_offsets_of_the_broker(
    live_broker: LiveBroker, live_spark: Any, tmp_path: Path
) -> None:
    from spark_udfs import live

    table = tmp_path / "committed_offsets"
    query = live.track_committed_offsets(
        live_spark,
        live_broker.bootstrap_servers,
        table,
        tmp_path / "checkpoint",
        trigger={"availableNow": True},
        # Small micro-batches: the table is built up over several of them.
        options={"maxOffsetsPerTrigger": "60"},
        partitions=_partitions(live_spark, live_broker, CONSUMER_OFFSETS),
    )
    query.awaitTermination(300)
    assert query.exception() is None
    # The property, not the key: a Connect client's progress JSON has the sources' counts only.
    batches = [p for p in query.recentProgress if p.numInputRows > 0]
    assert len(batches) > 2, [p.numInputRows for p in query.recentProgress]
    got = _offsets(live_spark.read.parquet(str(table)).collect())
    assert got == _truth_offsets(live_broker.run.truth)


def test_demo_reads_consumer_offsets_live(live_broker: LiveBroker, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "spark_udfs.demo", "--bootstrap-servers",
         live_broker.bootstrap_servers, "--kafka-jars", str(spark_kafka_jars()),
         "--out", str(out), "--show", "3"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"reading {CONSUMER_OFFSETS} from {live_broker.bootstrap_servers}" in done.stdout
    table = pq.read_table(out / "committed_offsets.parquet").to_pylist()
    got = {
        (r["group"], r["topic"], r["partition"]): (r["offset"], r["metadata"], r["leaderEpoch"])
        for r in table
    }
    assert got == _truth_offsets(live_broker.run.truth)
