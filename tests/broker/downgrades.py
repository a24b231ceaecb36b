"""Real downgrades: logs written by Kafka 4.4.0 at a lower metadata.version, then a real older
broker started on a copy of them; what it answers, or what it dies on, is the truth.

``write_log(folder, metadata_version)`` formats a single-node KRaft Kafka 4.4.0 at that level
(a static quorum, so releases before 3.9 can start on it), starts it, runs
tests/broker/src/DowngradeWorkload.java (classic groups, an offsets-only group, transactions;
and a consumer-protocol group from 4.0-IV0, which group.version needs) and stops it.
``start_old(release, log_dir, folder)`` copies the log dir and starts ``kafka.Kafka`` of
``release`` on it, with the replay's jars of that release (codegen.forensics.replay.jars: the
runtime closure of kafka_2.13, fetched by make setup) and slf4j-simple for its log; it either
starts (then the workload's ``probe`` records its Admin API's answers) or dies (its last log
lines say on what). Every broker listens on 127.0.0.1 and is stopped by its process id.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ports import free_ports

from broker.client import (
    BrokerError,
    _stop,
    _tail,
    cache_dir,
    java,
)
from codegen.forensics.replay.jars import jar_set

WORKLOAD = Path(__file__).resolve().parent / "src" / "DowngradeWorkload.java"
CLUSTER_ID = "ZG93bmdyYWRlLXRlc3Q0NA"
START_TIMEOUT_S = 90.0
_READY = "Kafka Server started"
_JVM = ("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
CONSUMER_GROUPS_FROM = (4, 0)
"""group.version 1 (the consumer group protocol) needs metadata.version 4.0-IV0."""


@dataclass(frozen=True)
class WrittenLog:
    metadata_version: str
    log_dir: Path
    consumer_groups: bool


@dataclass(frozen=True)
class OldBroker:
    """How an older broker took a copy of a log: it started and answered, or it died."""

    release: str
    started: bool
    truth: dict[str, Any]
    """Its Admin API's answers (groups, offsets, transactions) when it started."""
    log: str
    """The tail of its own log."""


def _properties(log_dir: Path, broker_port: int, controller_port: int) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(log_dir),
        "auto.create.topics.enable": "false",
        "num.partitions": "1",
        "offsets.topic.num.partitions": "2",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "log.cleaner.min.compaction.lag.ms": "3600000",
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())


def _workload_classes(folder: Path) -> Path:
    out = folder / "workload-classes"
    if not (out / "DowngradeWorkload.class").is_file():
        jars = cache_dir() / "broker-jars"
        subprocess.run(
            ["javac", "--release", "17", "-nowarn", "-d", str(out), "-cp", f"{jars}/*",
             str(WORKLOAD)],
            check=True, capture_output=True,
        )  # fmt: skip
    return out


def _launch(classpath: str, config: Path, log: Path) -> subprocess.Popen[bytes]:
    java_bin = java()
    assert java_bin is not None
    with log.open("wb") as out:
        return subprocess.Popen(
            [java_bin, *_JVM, "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-cp", classpath,
             "kafka.Kafka", str(config)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def _wait_ready(proc: subprocess.Popen[bytes], log: Path) -> bool:
    """True when the broker said it started; False when it exited first."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while _READY not in log.read_text(errors="replace"):
        if proc.poll() is not None:
            return False
        if time.monotonic() > deadline:
            _stop(proc)
            raise BrokerError(f"the broker did not start in {START_TIMEOUT_S}s:\n{_tail(log)}")
        time.sleep(0.2)
    return True


def _run_workload(folder: Path, *args: str) -> None:
    jars = cache_dir() / "broker-jars"
    classes = _workload_classes(folder.parent)
    java_bin = java()
    assert java_bin is not None
    done = subprocess.run(
        [java_bin, *_JVM, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp",
         f"{classes}{os.pathsep}{jars}/*", "DowngradeWorkload", *args],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise BrokerError(f"DowngradeWorkload {args[0]} failed:\n{done.stderr[-3000:]}")


def write_log(folder: Path, metadata_version: str) -> WrittenLog:
    """A log written by Kafka 4.4.0 formatted at ``metadata_version`` (see the module doc)."""
    folder.mkdir(parents=True, exist_ok=True)
    log_dir = folder / "logs"
    config = folder / "server.properties"
    broker_port, controller_port = free_ports(2)
    config.write_text(_properties(log_dir, broker_port, controller_port))
    jars = f"{cache_dir() / 'broker-jars'}/*"
    level = tuple(int(p) for p in metadata_version.split("-")[0].split("."))
    consumer_groups = level >= CONSUMER_GROUPS_FROM
    features = ["--feature", "group.version=1"] if consumer_groups else []
    java_bin = java()
    assert java_bin is not None
    formatted = subprocess.run(
        [java_bin, *_JVM, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", jars,
         "kafka.tools.StorageTool", "format", "--config", str(config), "--cluster-id",
         CLUSTER_ID, "--release-version", metadata_version, *features],
        capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False,
    )  # fmt: skip
    if formatted.returncode != 0:
        raise BrokerError(f"kafka-storage format at {metadata_version} failed:\n{formatted.stdout}")
    proc = _launch(jars, config, folder / "broker.log")
    try:
        if not _wait_ready(proc, folder / "broker.log"):
            raise BrokerError(f"Kafka 4.4.0 exited:\n{_tail(folder / 'broker.log')}")
        _run_workload(folder, "write", f"127.0.0.1:{broker_port}", str(consumer_groups).lower())
    finally:
        _stop(proc)
    return WrittenLog(metadata_version, log_dir, consumer_groups)


def start_old(release: str, log_dir: Path, folder: Path) -> OldBroker:
    """Kafka ``release`` started on a copy of ``log_dir``; its answers, or what it died on."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "logs"
    shutil.copytree(log_dir, copy)
    config = folder / "server.properties"
    broker_port, controller_port = free_ports(2)
    config.write_text(_properties(copy, broker_port, controller_port))
    slf4j = next((cache_dir() / "broker-jars").glob("slf4j-simple-*.jar"))
    classpath = os.pathsep.join([*(str(j) for j in jar_set(release).jars), str(slf4j)])
    log = folder / "broker.log"
    proc = _launch(classpath, config, log)
    try:
        if not _wait_ready(proc, log):
            return OldBroker(release, False, {}, _tail(log, 80))
        time.sleep(3)  # the coordinators load their partitions after start-up
        out = folder / "truth.json"
        _run_workload(folder, "probe", f"127.0.0.1:{broker_port}", str(out))
        truth: dict[str, Any] = json.loads(out.read_text())
    finally:
        _stop(proc)
    return OldBroker(release, True, truth, _tail(log, 80))
