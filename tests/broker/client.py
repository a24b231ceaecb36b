"""A real single-node KRaft broker (the pinned release) for the broker tests, and its workload.

``run_broker(folder)`` formats storage, starts ``kafka.Kafka`` (broker and controller in one
process, listeners on 127.0.0.1 at free ports), runs ``tests/broker/src/StreamsWorkload.java``
(a streams group) and ``BrokerWorkload.java`` (every other group kind, then the truth) against it
and stops it by its process id (SIGTERM, then SIGKILL after a timeout). The broker is stopped
before the tests read its files, so Kafka's DumpLogSegments and our decoders see the same
bytes (a running broker keeps appending: cluster-metadata no-ops, expirations). The folder keeps:

    folder/server.properties   the generated broker configuration
    folder/logs/               the broker's log folder (log.dirs)
    folder/broker.log          the broker's own log
    folder/workload.log        the workloads' output
    folder/streams-state/      the streams application's state directory
    folder/truth.json          the broker's answers (listGroups, describe, offsets) at the end

``start_live_copy(run, folder)`` starts that broker again on a copy of its log folder, for
clients that read topics live (Spark's Kafka source); the run's own files stay as they were.

The jars and the compiled workload come from ``tests/broker/fetch.sh``; nothing is downloaded here.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ports import free_ports

KAFKA_VERSION = "4.4.0"
FETCH_COMMAND = "tests/broker/fetch.sh"
START_TIMEOUT_S = 90.0
WORKLOAD_TIMEOUT_S = 150.0
STOP_TIMEOUT_S = 30.0

FEATURES = {
    "group.version": 1,  # the consumer group protocol (KIP-848)
    "share.version": 2,  # share groups (KIP-932)
    "streams.version": 1,  # streams groups (KIP-1071)
    "transaction.version": 2,  # transactions V2 (KIP-890)
}
"""Feature levels the storage is formatted with (the 4.4-IV2 defaults, pinned here)."""

_BROKER_DIR = Path(__file__).resolve().parent
_WORKLOAD_SOURCES = (
    _BROKER_DIR / "src" / "BrokerWorkload.java",
    _BROKER_DIR / "src" / "StreamsWorkload.java",
)
_READY_LINE = "Kafka Server started"
_JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


def cache_dir() -> Path:
    """``<project>/.cache/kafka-<version>``, shared with the oracle."""
    return _BROKER_DIR.parent.parent / ".cache" / f"kafka-{KAFKA_VERSION}"


def spark_kafka_jars() -> Path:
    """``<project>/.cache/spark-kafka/jars``: Spark's Kafka source (spark-kafka/fetch.sh)."""
    return _BROKER_DIR.parent.parent / ".cache" / "spark-kafka" / "jars"


def spark_kafka_conf() -> tuple[dict[str, str], str | None]:
    """Spark settings that add Spark's Kafka source (``spark.jars``), or why it is missing."""
    from spark_udfs.live import ConnectorMissingError, connector_conf

    try:
        return connector_conf(spark_kafka_jars()), None
    except ConnectorMissingError as exc:
        return {}, str(exc)


def java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def missing_reason(cache: Path | None = None) -> str | None:
    """Why the broker cannot start (a sentence naming the command to run), or None."""
    cache = cache or cache_dir()
    jars = cache / "broker-jars"
    if not any(jars.glob(f"kafka_2.13-{KAFKA_VERSION}.jar")):
        return f"{jars} has no kafka_2.13-{KAFKA_VERSION}.jar; run {FETCH_COMMAND}"
    if not any((cache / "streams-jars").glob("kafka-streams-*.jar")):
        return f"{cache / 'streams-jars'} has no kafka-streams jar; run {FETCH_COMMAND}"
    workload = cache / "broker-workload"
    if (
        not (workload / "classes" / "BrokerWorkload.class").is_file()
        or not (workload / "streams-classes" / "StreamsWorkload.class").is_file()
    ):
        return f"the broker workload is not compiled; run {FETCH_COMMAND}"
    stamp = workload / "sources.sha256"
    current = hashlib.sha256(b"".join(p.read_bytes() for p in _WORKLOAD_SOURCES)).hexdigest()
    if not stamp.is_file() or stamp.read_text().strip() != current:
        return f"the compiled broker workload is older than its source; run {FETCH_COMMAND}"
    if java() is None:
        return "no 'java' executable (JAVA_HOME/bin/java or on PATH)"
    return None


class BrokerError(RuntimeError):
    """The broker or the workload failed; the message ends with the tail of their log."""


@dataclass(frozen=True)
class BrokerRun:
    """What a finished run left behind."""

    folder: Path
    log_dir: Path
    truth: dict[str, Any]
    workload_seconds: float
    broker_port: int
    controller_port: int

    def partition_dirs(self, topic: str) -> list[Path]:
        """``<log_dir>/<topic>-<n>`` folders, by partition number."""
        found = [p for p in self.log_dir.glob(f"{topic}-*") if p.name[len(topic) + 1 :].isdigit()]
        return sorted(found, key=lambda p: int(p.name[len(topic) + 1 :]))


OFFSETS_PARTITIONS_ENV = "KAFKA_SPECGEN_BROKER_OFFSETS_PARTITIONS"
"""``__consumer_offsets``' partition count of the test broker (3 unless this is set)."""


def server_properties(log_dir: Path, broker_port: int, controller_port: int) -> str:
    """A single-node KRaft configuration with small internal topics and fast rebalances."""
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}"
        ),
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(log_dir),
        "auto.create.topics.enable": "false",
        "num.partitions": "1",
        # 3 keeps make test's copies small; make test-cuts takes Kafka's default of 50 (most
        # of them written only late in the run, the case --as-of once crashed on)
        "offsets.topic.num.partitions": os.environ.get(OFFSETS_PARTITIONS_ENV, "3"),
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.num.partitions": "2",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.num.partitions": "2",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        # segment.bytes cannot go below 1 MiB in 4.x: roll segments by age instead, so every
        # internal partition ends up with several segments; and keep the cleaner away so the
        # files hold the whole history.
        "offsets.topic.segment.bytes": "1048576",
        "transaction.state.log.segment.bytes": "1048576",
        "share.coordinator.state.topic.segment.bytes": "1048576",
        "log.roll.ms": "2000",
        "log.cleaner.min.compaction.lag.ms": "3600000",
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1000",
        "group.consumer.session.timeout.ms": "30000",  # the live group outlives the workload
        "group.consumer.min.session.timeout.ms": "1000",
        "group.consumer.heartbeat.interval.ms": "500",
        "group.consumer.min.heartbeat.interval.ms": "500",
        "group.streams.initial.rebalance.delay.ms": "0",
        "group.streams.heartbeat.interval.ms": "500",
        "group.streams.min.heartbeat.interval.ms": "500",
        "group.share.heartbeat.interval.ms": "500",
        "group.share.min.heartbeat.interval.ms": "500",
        "group.consumer.migration.policy": "bidirectional",
        # the workload's timed-out transaction is aborted within a second of its timeout
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())


def _tail(path: Path, lines: int = 40) -> str:
    if not path.is_file():
        return f"({path.name} is missing)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _classpath(jars: Path, *extra: Path) -> str:
    return os.pathsep.join([*(str(p) for p in extra), str(jars / "*")])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the broker by its pid; SIGKILL it if it has not stopped in time."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def _start(
    java_bin: str, broker_jars: str, config: Path, broker_log: Path
) -> subprocess.Popen[bytes]:
    """Start ``kafka.Kafka`` with ``config`` and wait until it says it started."""
    with broker_log.open("wb") as out:
        proc = subprocess.Popen(
            [java_bin, *_JVM_OPTIONS, "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
             "-cp", broker_jars, "kafka.Kafka", str(config)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while _READY_LINE not in broker_log.read_text(errors="replace"):
            if proc.poll() is not None:
                raise BrokerError(f"the broker exited ({proc.returncode}):\n{_tail(broker_log)}")
            if time.monotonic() > deadline:
                raise BrokerError(f"the broker did not start in {START_TIMEOUT_S}s:\n"
                                  f"{_tail(broker_log)}")  # fmt: skip
            time.sleep(0.2)
    except BaseException:
        _stop(proc)
        raise
    return proc


def run_broker(folder: Path, cache: Path | None = None) -> BrokerRun:
    """Format, start, load with the workload and stop a broker in ``folder`` (see module doc)."""
    cache = cache or cache_dir()
    reason = missing_reason(cache)
    if reason is not None:
        raise BrokerError(f"test broker unavailable: {reason}")
    java_bin = java()
    assert java_bin is not None  # checked by missing_reason
    folder.mkdir(parents=True, exist_ok=True)
    log_dir = folder / "logs"
    config = folder / "server.properties"
    broker_port, controller_port = free_ports(2)
    config.write_text(server_properties(log_dir, broker_port, controller_port))
    quiet = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"
    broker_jars = _classpath(cache / "broker-jars")
    storage_log = folder / "storage.log"
    features = [arg for name, level in FEATURES.items() for arg in ("--feature", f"{name}={level}")]
    with storage_log.open("wb") as out:
        formatted = subprocess.run(
            [java_bin, *_JVM_OPTIONS, quiet, "-cp", broker_jars, "kafka.tools.StorageTool",
             "format", "--config", str(config), "--cluster-id", "a2Fma2Etc3BlY2dlbi10ZQ",
             "--standalone", *features],
            stdout=out, stderr=subprocess.STDOUT, timeout=START_TIMEOUT_S, check=False,
        )  # fmt: skip
    if formatted.returncode != 0:
        raise BrokerError(f"kafka-storage format failed:\n{_tail(storage_log)}")

    proc = _start(java_bin, broker_jars, config, folder / "broker.log")
    try:
        truth_path = folder / "truth.json"
        workload_log = folder / "workload.log"
        bootstrap = f"127.0.0.1:{broker_port}"
        classes = cache / "broker-workload"
        started = time.monotonic()
        with workload_log.open("wb") as out:
            # The streams group first (kafka-streams 4.3.1 in a JVM of its own), then the rest;
            # BrokerWorkload records the truth about every group.
            for classpath, main, args in (
                (_classpath(cache / "streams-jars", classes / "streams-classes"),
                 "StreamsWorkload", [bootstrap, str(folder / "streams-state")]),
                (_classpath(cache / "broker-jars", classes / "classes"),
                 "BrokerWorkload", [bootstrap, str(truth_path)]),
            ):  # fmt: skip
                remaining = WORKLOAD_TIMEOUT_S - (time.monotonic() - started)
                try:
                    done = subprocess.run(
                        [java_bin, *_JVM_OPTIONS, quiet, "-cp", classpath, main, *args],
                        stdout=out, stderr=subprocess.STDOUT, timeout=remaining, check=False,
                    )  # fmt: skip
                except subprocess.TimeoutExpired as exc:
                    raise BrokerError(
                        f"the workload took over {WORKLOAD_TIMEOUT_S}s:\n{_tail(workload_log)}"
                    ) from exc
                if done.returncode != 0:
                    raise BrokerError(f"{main} failed ({done.returncode}):\n{_tail(workload_log)}")
        seconds = time.monotonic() - started
        if not truth_path.is_file():
            raise BrokerError(f"the workload wrote no truth:\n{_tail(workload_log)}")
    finally:
        _stop(proc)
    truth: dict[str, Any] = json.loads(truth_path.read_text())
    return BrokerRun(folder, log_dir, truth, seconds, broker_port, controller_port)


@dataclass
class LiveBroker:
    """A running broker over a copy of a finished run's log folder (``start_live_copy``)."""

    run: BrokerRun
    folder: Path
    bootstrap_servers: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Stop it by its process id (SIGTERM, then SIGKILL after a timeout)."""
        _stop(self.process)


def start_live_copy(run: BrokerRun, folder: Path, cache: Path | None = None) -> LiveBroker:
    """Start the broker of ``run`` again, on a copy of its log folder in ``folder``.

    ``run``'s own files stay as the stopped broker left them; the copy holds the same internal
    topics, so clients (Spark's Kafka source) read the records the workload made, live. It
    listens on the run's ports (the controller's is in the formatted voter set); the caller
    stops it with :meth:`LiveBroker.stop`.
    """
    cache = cache or cache_dir()
    java_bin = java()
    if java_bin is None:
        raise BrokerError("test broker unavailable: no 'java' executable")
    folder.mkdir(parents=True, exist_ok=True)
    log_dir = folder / "logs"
    shutil.copytree(run.log_dir, log_dir)
    config = folder / "server.properties"
    config.write_text(server_properties(log_dir, run.broker_port, run.controller_port))
    proc = _start(java_bin, _classpath(cache / "broker-jars"), config, folder / "broker.log")
    return LiveBroker(run, folder, f"127.0.0.1:{run.broker_port}", proc)
