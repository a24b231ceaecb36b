"""A real broker of the pinned release in the loop (``pytest -m kafka``).

The session fixture ``broker_run`` (tests/conftest.py, tests/broker/client.py) starts a
single-node KRaft broker, loads it with tests/broker/src/BrokerWorkload.java (classic groups with
every assignor, consumer-protocol groups, a regex subscription, an upgrade and a downgrade, a
share group, a streams group, transactional offset commits, transactions that commit, abort, time
out and are fenced, one left open, admin alters and deletes, an empty topic and a four-partition
topic with committed offsets) and stops it. These tests
compare what our decoders make of its log folder with Kafka's own answers:

- ``dump --format dump-log`` equals DumpLogSegments on every internal-topic segment;
- the compacted view equals the broker's listGroups / describe / listConsumerGroupOffsets;
- the Spark ``kafka-log`` source gives the same offsets and group states;
- the forensics commands give the broker's protocol types, log ends and share group offsets,
  also when the log dir is split into two broker images.
- ``transactions`` gives the broker's ListTransactions / DescribeTransactions /
  DescribeProducers answers, and each transaction's outcome.
"""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from broker.client import BrokerRun
from cuts import batch_cuts, offset_cuts, python_rows, sample, spark_rows
from oracle import KafkaOracle
from oracle import missing_reason as oracle_missing
from test_dumps_oracle import _compare
from test_forensics_cuts import check_cli, check_every_cut

from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    decode_batches,
)
from codegen.dumps.decoded import DecodedBatch
from codegen.dumps.metadata import CLUSTER_METADATA
from codegen.dumps.model import BatchHeader
from codegen.dumps.segments import SegmentReader
from codegen.dumps.views.compacted import CompactedView, GroupState
from codegen.forensics.groups import AsOf

pytestmark = [pytest.mark.kafka, pytest.mark.xdist_group("kafka")]

INTERNAL_TOPICS = (CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE, CLUSTER_METADATA)
_TYPES = {"Classic": "classic", "Consumer": "consumer", "Share": "share", "Streams": "streams"}


def _segments(run: BrokerRun, topic: str) -> list[Path]:
    return [f for d in run.partition_dirs(topic) for f in sorted(d.glob("*.log"))]


def _view(run: BrokerRun, truth: dict[str, Any]) -> CompactedView:
    """The compacted view of the __consumer_offsets prefix ``truth`` holds for."""
    ends = {int(p): end for p, end in truth["consumerOffsetsEnd"].items()}
    view = CompactedView()
    for partition in run.partition_dirs(CONSUMER_OFFSETS):
        end = ends[int(partition.name.rsplit("-", 1)[1])]
        for segment in sorted(partition.glob("*.log")):
            view.add_batches(
                item
                for item in decode_batches(segment)
                if isinstance(item, DecodedBatch) and item.batch.base_offset < end
            )
    return view


def _truths(run: BrokerRun) -> list[dict[str, Any]]:
    """The settled points on the way, then the end."""
    return [*run.truth["snapshots"], run.truth]


def _truth_offsets(truth: dict[str, Any]) -> dict[tuple[str, str, int], tuple[int, str, int]]:
    return {
        (o["group"], o["topic"], o["partition"]): (
            o["offset"],
            o["metadata"],
            -1 if o["leaderEpoch"] is None else o["leaderEpoch"],
        )
        for o in truth["offsets"]
    }


def _truth_groups(truth: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["groupId"]: g for g in truth["groups"]}


POINTS = range(4)  # three settled points of the workload, then its end


def test_workload_stays_within_budget(broker_run: BrokerRun) -> None:
    assert broker_run.workload_seconds < 120, broker_run.workload_seconds
    kinds = {g["type"] for g in broker_run.truth["groups"]}
    assert kinds == {"Classic", "Consumer", "Share", "Streams"}
    assert len(_truths(broker_run)) == len(POINTS)
    for topic in INTERNAL_TOPICS:
        assert _segments(broker_run, topic), f"the broker wrote no {topic} segment"
    # Age-based rolling gives the offsets topic several segments, so the files cover rolled
    # segments with producer snapshots as well as the active one.
    assert max(len(list(d.glob("*.log"))) for d in broker_run.partition_dirs(CONSUMER_OFFSETS)) > 1


@pytest.mark.oracle
@pytest.mark.skipif(oracle_missing() is not None, reason=f"Kafka oracle: {oracle_missing()}")
@pytest.mark.parametrize("topic", INTERNAL_TOPICS)
def test_dump_log_matches_dump_log_segments(broker_run: BrokerRun, topic: str) -> None:
    segments = _segments(broker_run, topic)
    assert segments
    with KafkaOracle() as oracle:
        for segment in segments:
            _compare(oracle, segment, topic)


@pytest.mark.parametrize("point", POINTS)
def test_committed_offsets_match_the_broker(broker_run: BrokerRun, point: int) -> None:
    truth = _truths(broker_run)[point]
    view = _view(broker_run, truth)
    ours = {
        (o.group, o.topic, o.partition): (o.offset, o.metadata, o.leader_epoch)
        for o in view.offset_rows()
    }
    expected = _truth_offsets(truth)
    assert len(expected) >= 15  # every point has commits of several groups
    assert ours == expected


def _member_count(g: GroupState | None) -> int:
    return 0 if g is None else len(g.members)


@pytest.mark.parametrize("point", POINTS)
def test_group_types_states_and_members_match_the_broker(broker_run: BrokerRun, point: int) -> None:
    view = _view(broker_run, _truths(broker_run)[point])
    truth = _truth_groups(_truths(broker_run)[point])
    offset_groups = {o.group for o in view.offset_rows()}
    # Kafka prints topic ids in URL-safe base64; our records carry them as UUIDs.
    topic_names = {
        str(uuid.UUID(bytes=base64.urlsafe_b64decode(v + "=="))): k
        for k, v in broker_run.truth["topicIds"].items()
    }
    # Groups that only ever had offsets (admin alters, transactional commits) have no group
    # record: the broker lists them as Empty classic groups.
    for group_id, g in truth.items():
        if group_id not in view.groups:
            assert group_id in offset_groups, group_id
            assert (g["type"], g["state"], g["members"]) == ("Classic", "Empty", [])
    assert set(view.groups) <= set(truth)
    for group_id, ours in view.groups.items():
        g = truth[group_id]
        assert (ours.type, ours.state) == (_TYPES[g["type"]], g["state"]), group_id
        theirs = {m["memberId"]: m for m in g["members"]}
        assert set(ours.members) == set(theirs), group_id
        if ours.type in ("consumer", "share", "streams"):
            assert ours.epoch == g["groupEpoch"], group_id
        if ours.members and ours.type in ("classic", "consumer"):
            assert (ours.protocol or g["assignor"]) == g["assignor"], group_id
        for member_id, m in ours.members.items():
            t = theirs[member_id]
            assert (m.client_id, m.instance_id) == (t["clientId"], t.get("instanceId")), member_id
            if ours.type in ("consumer", "streams"):
                assert m.member_epoch == t["memberEpoch"], member_id
            assignment = {
                topic_names.get(topic, topic): sorted(parts)
                for topic, parts in m.assignment.items()
                if parts
            }
            assert assignment == t.get("assignment", assignment), member_id
    if point == POINTS[-1]:
        # Describe returns no racks; the records carry the ones the workload configured.
        racks = {
            (g.group, m.client_id): m.rack_id
            for g in view.groups.values()
            for m in g.members.values()
            if m.rack_id
        }
        assert racks == {
            ("classic-live", "classic-live-static"): "rack-a",
            ("consumer-live", "consumer-live-a"): "rack-b",
        }
        # The end covers both settled kinds of state.
        states = {(g.type, g.state) for g in view.groups.values()}
        assert {
            ("classic", "Stable"),
            ("consumer", "Stable"),
            ("share", "Empty"),
            ("streams", "Empty"),
        } <= states


@pytest.mark.spark
def test_spark_kafka_log_source_matches_the_broker(broker_run: BrokerRun, kafka_spark: Any) -> None:
    from spark_udfs import compacted, functions

    files = [str(f) for f in _segments(broker_run, CONSUMER_OFFSETS)]
    decoded = functions.decode_consumer_offsets(kafka_spark.read.format("kafka-log").load(files))
    got = {
        (r.group, r.topic, r.partition): r.offset
        for r in compacted.committed_offsets(decoded).collect()
    }
    groups = {r.group: (r.type, r.state) for r in compacted.group_states(decoded).collect()}
    assert got == {k: v[0] for k, v in _truth_offsets(broker_run.truth).items()}
    truth = _truth_groups(broker_run.truth)
    assert groups
    assert groups == {g: (_TYPES[truth[g]["type"]], truth[g]["state"]) for g in groups}


# ------------------------------------------------------ the forensics commands against the broker


def _forensic_facts(paths: list[Path], as_of: AsOf | None = None) -> dict[str, Any]:
    from codegen.forensics.groups import group_reports
    from codegen.forensics.lag import lag_reports

    groups = {r.group: r for r in group_reports(paths, None, as_of)}
    lags = lag_reports(paths, None, as_of)
    ends = {(p.group, p.topic, p.partition): p.log_end_offset for g in lags for p in g.partitions}
    committed = {
        (p.group, p.topic, p.partition): (p.commits[-1].offset, p.commits[-1].leader_epoch)
        for g in lags
        for p in g.partitions
        if p.live and p.commits
    }
    shares = {
        (g.group, s.state.topic, s.state.partition): (s.state.start_offset, s.lag)
        for g in lags
        for s in g.share_partitions
    }
    return {"groups": groups, "ends": ends, "committed": committed, "shares": shares}


def _settled_moment(run: BrokerRun, truth: dict[str, Any]) -> AsOf | None:
    """A settled point of the workload as an ``--as-of`` time: the newest batch time of the
    ``__consumer_offsets`` prefix the truth holds for (None at the end)."""
    if truth is run.truth:
        return None
    ends = {int(p): end for p, end in truth["consumerOffsetsEnd"].items()}
    newest = -1
    for partition in run.partition_dirs(CONSUMER_OFFSETS):
        end = ends[int(partition.name.rsplit("-", 1)[1])]
        for segment in sorted(partition.glob("*.log")):
            for h in SegmentReader(segment).batch_headers():
                if isinstance(h, BatchHeader) and h.base_offset < end:
                    newest = max(newest, h.max_timestamp)
    return AsOf(timestamp_ms=newest)


def _facts_agree(run: BrokerRun, truth: dict[str, Any]) -> tuple[int, int]:
    """The forensics at a settled point (``--as-of`` its time; the end read whole) against the
    broker's answers then: every group's protocol type, type, state and members, each
    committed offset and its leader epoch (``lag``'s last commit), the log end of every
    partition with a committed offset, share groups' start offsets and lag."""
    facts = _forensic_facts([run.log_dir], _settled_moment(run, truth))
    agree, total = 0, 0
    listed = _truth_groups(truth)
    for group_id, g in listed.items():
        ours = facts["groups"].get(group_id)
        got = None if ours is None else ours.protocol_type
        total += 1
        agree += (got or "") == (g["protocolType"] or "")
        assert (got or "") == (g["protocolType"] or ""), group_id
        assert ours is not None, group_id
        theirs = (_TYPES[g["type"]], g["state"], sorted(m["memberId"] for m in g["members"]))
        mine = (ours.type, ours.state, sorted(m["memberId"] for m in ours.members))
        total += 3
        agree += sum(a == b for a, b in zip(mine, theirs, strict=True))
        assert mine == theirs, group_id
    offsets = _truth_offsets(truth)
    assert set(facts["committed"]) == set(offsets)  # none missing, none the broker has not
    for key, (offset, _, epoch) in offsets.items():
        total += 2
        got = facts["committed"].get(key)
        agree += (got is not None and got[0] == offset) + (got is not None and got[1] == epoch)
        assert got == (offset, epoch), key
    log_ends = truth["logEnds"]
    for (group, topic, partition), end in facts["ends"].items():
        key = f"{topic}-{partition}"
        if key not in log_ends:
            continue
        total += 1
        agree += end == log_ends[key]
        assert end == log_ends[key], (group, key)
    expected = {
        (s["group"], s["topic"], s["partition"]): (s["startOffset"], s["lag"])
        for s in truth["shareOffsets"]
    }
    for k, (start, lag) in expected.items():
        total += 2
        got_start, got_lag = facts["shares"].get(k, (None, None))
        agree += (got_start == start) + (lag is None or got_lag == lag)
        assert got_start == start, k
        assert lag is None or got_lag == lag, k
    return agree, total


def test_forensics_match_the_broker(broker_run: BrokerRun) -> None:
    truth = broker_run.truth
    facts = _forensic_facts([broker_run.log_dir])
    assert broker_run.truth["logEnds"]["t-empty-0"] == 0
    assert ("lag-empty", "t-empty", 0) in facts["ends"]
    assert truth["shareOffsets"]
    agree, total = _facts_agree(broker_run, truth)
    print(f"forensics agree with the broker on {agree} of {total} facts")


def test_the_log_dir_in_s3_reads_as_on_disk(broker_run: BrokerRun, s3_server: Any) -> None:
    """The broker's log dir uploaded to a real S3-compatible server: the forensics (which agree
    with the broker above) find the same facts there, and each command prints what it prints
    for the disk, with the credentials of the standard chain."""
    import os
    import subprocess
    import sys

    import s3server

    from codegen.dumps import storage

    remote = s3server.upload(s3_server, broker_run.log_dir, f"broker-run/{uuid.uuid4().hex[:8]}")
    local = _forensic_facts([broker_run.log_dir])
    on_s3 = _forensic_facts([storage.path(remote, s3_server.options())])
    assert on_s3["ends"] == local["ends"] and on_s3["shares"] == local["shares"]
    assert {g: r.protocol_type for g, r in on_s3["groups"].items()} == {
        g: r.protocol_type for g, r in local["groups"].items()
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    for command in (
        ["dump", "{}", "--compacted"],
        ["dump", "{}/__transaction_state-0"],
        ["groups", "{}", "--format", "jsonl"],
        ["lag", "{}", "--format", "jsonl"],
        ["transactions", "{}", "--format", "jsonl"],
        ["downgrade-check", "{}", "--to", "3.9"],
    ):
        runs = [
            subprocess.run(
                [sys.executable, "-m", "codegen", *(c.format(where) for c in command)],
                capture_output=True,
                text=True,
                env={**env, **extra},
                timeout=300,
            )
            for where, extra in ((broker_run.log_dir, {}), (remote, s3_server.environment()))
        ]
        disk, s3 = runs
        assert disk.stdout, (command, disk.stderr)
        assert (s3.returncode, s3.stdout) == (
            disk.returncode,
            disk.stdout.replace(str(broker_run.log_dir), remote),
        ), command
        assert s3_server.secret_key not in s3.stdout + s3.stderr


def test_forensics_match_the_broker_at_every_settled_point(broker_run: BrokerRun) -> None:
    """``groups`` and ``lag`` ``--as-of`` each settled point of the workload give the broker's
    answers of that moment."""
    agree, total = 0, 0
    for truth in _truths(broker_run):
        a, t = _facts_agree(broker_run, truth)
        agree, total = agree + a, total + t
    assert agree == total > 150
    print(f"forensics agree with the broker at its {len(POINTS)} settled points: {agree} facts")


# ------------------------------------------------------ every moment of the broker's log

BROKER_CUTS = os.environ.get("KAFKA_SPECGEN_BROKER_CUTS", "24")
"""Batch boundaries of the broker's log compared in ``make test`` (a seeded sample); ``all``
compares every one (``make test-cuts``)."""
BROKER_OFFSET_CUTS = 6
"""``__consumer_offsets`` offsets compared in ``make test`` (a seeded sample of
:func:`cuts.offset_cuts`; ``make test-cuts`` compares every one)."""


def _cuts(run: BrokerRun) -> list[AsOf]:
    """The settled points, then the batch boundaries of :data:`BROKER_CUTS`, then the offsets
    of :data:`BROKER_OFFSET_CUTS`."""
    settled = [c for t in run.truth["snapshots"] if (c := _settled_moment(run, t)) is not None]
    every = batch_cuts(run.log_dir)
    sampled = every if BROKER_CUTS == "all" else sample(every, int(BROKER_CUTS), seed=41)
    offsets = offset_cuts(run.log_dir)
    if BROKER_CUTS != "all":
        offsets = sample(offsets, BROKER_OFFSET_CUTS, seed=41)
    return settled + [c for c in [*sampled, *offsets] if c not in settled]


def test_every_moment_is_the_answer_over_the_log_before_it(
    broker_run: BrokerRun, tmp_path: Path
) -> None:
    """At the settled points and the batch boundaries, ``groups``, ``lag`` and
    ``transactions --as-of`` give the answer over a copy of the log dir as it was then (most
    ``__consumer_offsets`` partitions are written only late in the run: at the early cuts they
    hold nothing yet)."""
    cuts = _cuts(broker_run)
    compared = check_every_cut(broker_run.log_dir, cuts, tmp_path)
    print(f"{compared} cuts of the broker's log compared with their prefix")


def test_the_command_line_gives_the_api_answer_at_settled_points(
    broker_run: BrokerRun, tmp_path: Path
) -> None:
    settled = _cuts(broker_run)[:3]
    early = batch_cuts(broker_run.log_dir)[1]
    offsets = offset_cuts(broker_run.log_dir)
    middle = offsets[len(offsets) // 2]  # every __consumer_offsets partition cut there
    for n, cut in enumerate([early, *settled, middle]):
        check_cli(broker_run.log_dir, cut, tmp_path, ("table", "html") if n == 1 else ())


@pytest.mark.spark
def test_spark_gives_the_api_answer_at_cuts(broker_run: BrokerRun, kafka_spark: Any) -> None:
    """Spark's group states, lag, share lag and transactions at the first settled point (most
    ``__consumer_offsets`` partitions still empty) and at a ``__consumer_offsets`` offset
    halfway through the busiest partition equal the Python API's (the other cuts:
    tests/spark/test_forensics_histories_spark.py, make test-cuts's Python answers)."""
    offsets = offset_cuts(broker_run.log_dir)
    for cut in (_cuts(broker_run)[0], offsets[len(offsets) // 2]):
        expected = python_rows(broker_run.log_dir, cut)
        assert spark_rows(kafka_spark, broker_run.log_dir, cut) == expected, cut


def test_lag_over_two_broker_images_matches_one(broker_run: BrokerRun, tmp_path: Path) -> None:
    import shutil

    from codegen.forensics.lag import lag_reports

    one, two = tmp_path / "broker-a", tmp_path / "broker-b"
    for image in (one, two):
        image.mkdir()
    for sub in broker_run.log_dir.iterdir():
        if not sub.is_dir():
            continue
        spread = sub.name.startswith("t-spread-") and int(sub.name.rsplit("-", 1)[1]) >= 2
        shutil.copytree(sub, (two if spread else one) / sub.name)

    def ends(paths: list[Path]) -> dict[Any, Any]:
        return {
            (p.group, p.topic, p.partition): (p.log_end_offset, p.lag)
            for g in lag_reports(paths, group="lag-spread")
            for p in g.partitions
        }

    whole = ends([broker_run.log_dir])
    assert len(whole) == 4
    assert {k: v[0] for k, v in whole.items()} == {
        ("lag-spread", "t-spread", p): broker_run.truth["logEnds"][f"t-spread-{p}"]
        for p in range(4)
    }
    alone = ends([one])
    assert sum(end is None for end, _ in alone.values()) == 2
    assert ends([one, two]) == whole


# ------------------------------------------------------------------- transactions from the disk


def _transaction_report(run: BrokerRun) -> Any:
    from codegen.forensics.transactions import transaction_report

    return transaction_report(run.log_dir)


def test_transactional_ids_match_list_and_describe_transactions(broker_run: BrokerRun) -> None:
    truth = broker_run.truth["transactions"]
    report = _transaction_report(broker_run)
    ids = {t.transactional_id: t for t in report.transactional_ids}
    latest = {tid: t.changes[-1] for tid, t in ids.items()}
    described = {d["transactionalId"]: d for d in truth["described"]}
    assert {"txn-1", "txn-commit", "txn-abort", "txn-fenced", "txn-timeout", "txn-open"} <= set(
        described
    )
    assert set(described) == set(ids)
    for tid, d in described.items():
        ours = latest[tid]
        assert (ours.state, ours.producer_id, ours.producer_epoch, ours.timeout_ms) == (
            d["state"],
            d["producerId"],
            d["producerEpoch"],
            d["transactionTimeoutMs"],
        ), tid
        assert sorted(f"{t}-{p}" for t, p in ours.partitions) == d["partitions"], tid
        if d["transactionStartTimeMs"] is not None:
            assert ours.start_timestamp == d["transactionStartTimeMs"], tid
    listed = {t["transactionalId"]: (t["producerId"], t["state"]) for t in truth["listed"]}
    assert listed == {tid: (latest[tid].producer_id, latest[tid].state) for tid in listed}


def test_transaction_outcomes_and_fencing(broker_run: BrokerRun) -> None:
    ids = {t.transactional_id: t for t in _transaction_report(broker_run).transactional_ids}

    def outcomes(tid: str) -> list[str]:
        return [x.outcome for x in ids[tid].transactions]

    assert outcomes("txn-commit") == ["committed"]
    assert outcomes("txn-abort") == ["aborted"]
    assert outcomes("txn-timeout") == ["aborted (timed out)"]
    assert outcomes("txn-fenced") == ["aborted (fenced)", "committed"]
    assert outcomes("txn-open") == ["open"]
    assert outcomes("txn-1") == ["committed", "aborted"]
    assert any(c.change for c in ids["txn-fenced"].changes)


def test_open_transactions_match_describe_producers(broker_run: BrokerRun) -> None:
    truth = broker_run.truth["transactions"]
    report = _transaction_report(broker_run)
    theirs = {
        (p["topic"], p["partition"], p["producerId"], p["currentTransactionStartOffset"])
        for p in truth["producers"]
        if p["currentTransactionStartOffset"] is not None
    }
    ours = {
        (t.topic, t.partition, t.producer_id, t.first_offset)
        for p in report.partitions
        for t in p.open
    }
    assert ours == theirs and len(ours) == 1  # txn-open's transaction on t-txn-disk-1
    assert report.hanging == []
    by_partition = {(p.topic, p.partition): p for p in report.partitions}
    (open_txn,) = by_partition[("t-txn-disk", 1)].open
    assert open_txn.transactional_id == "txn-open"
    assert by_partition[("t-txn-disk", 1)].last_stable_offset == open_txn.first_offset
    # every aborted range the markers give is in the broker's .txnindex, with its LSO
    for p in report.partitions:
        assert p.index_problems == [], (p.topic, p.partition)
    assert by_partition[("t-txn-disk", 0)].aborted_from_markers


@pytest.mark.oracle
@pytest.mark.skipif(oracle_missing() is not None, reason=f"Kafka oracle: {oracle_missing()}")
def test_broker_txnindex_files_match_dump_log_segments(broker_run: BrokerRun) -> None:
    """The broker's own .txnindex files, as DumpLogSegments prints them and as the generated
    AbortedTxn reads them."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from codegen.dumps.log_files import read_transaction_index
    from codegen.dumps.run import dump_log_run

    indexes = sorted(broker_run.log_dir.glob("t-txn*-*/*.txnindex"))
    entries = [e for f in indexes for e in read_transaction_index(f)]
    assert {e.txn.producer_id for e in entries} >= {
        t["producerId"]
        for t in broker_run.truth["transactions"]["described"]
        if t["transactionalId"] in ("txn-abort", "txn-timeout")
    }
    with KafkaOracle() as oracle:
        for f in indexes:
            theirs = oracle.dump_log_result(["--files", str(f)])
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                dump_log_run([f], [None])
            assert out.getvalue() == theirs["stdout"], f
