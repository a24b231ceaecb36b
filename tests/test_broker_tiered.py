"""A real Kafka 4.4.0 broker with tiered storage (``tests/broker/tiered.py``: Kafka's
LocalTieredStorage, 4 KiB segments, one second of local retention, a topic deleted, the broker
killed during an upload and restarted), and what we read of its files against what the broker
itself answered before it stopped: the tiered-storage report's offsets (ListOffsets earliest,
earliest-local, latest-tiered, latest) and local bytes (describeLogDirs), its remote bytes
against the remote folder's listing, the upload the kill left half done, the deleted topic; each
partition's records read from the log dir and the remote storage, every offset once; and
``__remote_log_metadata`` printed as Kafka's DumpLogSegments prints it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from oracle import KafkaOracle
from oracle import missing_reason as oracle_missing

from codegen.dumps.remote_storage import remote_partitions, remote_segments
from codegen.dumps.run import dump_log_run
from codegen.tiered.report import tiered_report

pytestmark = [pytest.mark.kafka, pytest.mark.xdist_group("tiered-broker")]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from broker.tiered import missing_reason, run_tiered_broker

    reason = missing_reason()
    if reason is not None:
        if os.environ.get("CI") == "true":  # make setup fetches it: CI must run these
            pytest.fail(f"tiered Kafka broker: {reason}")
        pytest.skip(f"tiered Kafka broker: {reason}")
    return run_tiered_broker(tmp_path_factory.mktemp("tiered-broker"))


@pytest.fixture(scope="module")
def report(run: Any) -> Any:
    return tiered_report([run.log_dir, run.remote_dir])


def _partitions(report: Any) -> dict[str, dict[str, Any]]:
    return {f"{p['topic']}-{p['partition']}": p for p in report.sections.partitions.to_pylist()}


def test_the_reports_offsets_are_the_brokers(run: Any, report: Any) -> None:
    partitions = _partitions(report)
    assert set(run.truth["partitions"]) <= set(partitions)
    for label, answers in run.truth["partitions"].items():
        p = partitions[label]
        got = (
            p["logStartOffset"],
            p["localLogStartOffset"],
            p["remoteEndOffset"],
            p["logEndOffset"],
        )
        want = (
            answers["earliest"],
            answers["earliestLocal"],
            answers["latestTiered"],
            answers["latest"],
        )
        assert got == want, label
        assert p["localBytes"] == answers["localBytes"], label
        assert p["holes"] == [] and p["epochMismatches"] == 0, label
        assert p["topicId"] == run.truth["topicIds"][p["topic"]]


def test_remote_bytes_are_the_remote_folders_listing(run: Any, report: Any) -> None:
    partitions = _partitions(report)
    for folder in remote_partitions(run.remote_dir):
        if folder.topic_id == run.deleted_topic["topicId"]:
            continue
        p = partitions[folder.label]
        assert p["remoteStoredBytes"] == sum(f.stat().st_size for f in folder.folder.iterdir())
        served = [c for c in remote_segments(folder) if c.complete]
        assert p["remoteBytes"] <= sum(c.sizes()[".log"] for c in served)
        answers = run.truth["partitions"][folder.label]
        assert p["remoteRecords"] == answers["latestTiered"] + 1 - answers["earliest"]


def test_the_killed_upload_and_the_deleted_topic(run: Any, report: Any) -> None:
    segments = report.sections.segments.to_pylist()
    abandoned = [s for s in segments if s["status"] == "upload-abandoned"]
    # Every upload the storage paused (the one the workload waited for, and any other
    # partition's that started before the broker was stopped) and nothing else.
    paused = (run.folder / "remote" / "upload-paused").read_text().split()
    assert paused and len(abandoned) == len(paused), (paused, abandoned)
    for upload in abandoned:
        assert upload["topic"] == "tiered" and upload["files"] == [".index", ".log"], upload
        assert [p for p in paused if upload["segmentId"] in Path(p).name], (upload, paused)
    gone = [s for s in segments if s["topicId"] == run.deleted_topic["topicId"]]
    assert gone and {s["status"] for s in gone} == {"deleted"}
    assert report.findings and all("tiered-0" in f or "tiered-1" in f for f in report.findings)


def test_every_offset_read_once_from_both_sides(run: Any) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "codegen", "dump", str(run.log_dir), str(run.remote_dir)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    offsets: dict[str, list[int]] = {}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        if row.get("kind") == "record" and not str(row.get("topic")).startswith("__"):
            offsets.setdefault(f"{row['topic']}-{row['partition']}", []).append(row["offset"])
    for label, answers in run.truth["partitions"].items():
        assert offsets[label] == list(range(answers["earliest"], answers["latest"])), label


@pytest.mark.skipif(oracle_missing() is not None, reason=f"Kafka oracle: {oracle_missing()}")
def test_remote_log_metadata_prints_as_kafkas_tool(run: Any) -> None:
    with KafkaOracle() as oracle:
        for log in sorted(run.log_dir.glob("__remote_log_metadata-*/*.log")):
            theirs = oracle.dump_log_result(
                ["--files", str(log), "--deep-iteration", "--print-data-log",
                 "--remote-log-metadata-decoder"]
            )  # fmt: skip
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                dump_log_run([log], ["__remote_log_metadata"])
            assert out.getvalue() == theirs["stdout"]
