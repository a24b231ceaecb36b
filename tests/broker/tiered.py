"""A real single-node KRaft broker with tiered storage (KIP-405) for the tiered-storage tests.

``run_tiered_broker(folder)`` formats storage and starts ``kafka.Kafka`` (the pinned release, as
``client.run_broker`` does) with remote storage on: Kafka's own ``LocalTieredStorage`` (from its
published test jar) keeps the remote segments in ``folder/remote/kafka-tiered-storage``, the
default topic-based metadata manager writes ``__remote_log_metadata``. Then it runs
``tests/broker/src/tiered/TieredWorkload.java`` in steps:

1. ``load``: tiered topics with 4 KiB segments and one second of local retention, records
   until segments are remote and local retention removed some, the topic ``tiered-gone``
   deleted once its segments were remote;
2. ``pause``: the storage's file copy stops half way through an upload (after the segment and
   its offset index), and the broker is killed there (SIGKILL, by its process id);
3. the broker starts again on the same folders and finishes its work (the half-done upload is
   copied again under a new id); ``truth``: records in the new leader epoch, then, once the
   offsets settled, what the broker answers (earliest, earliest-local, latest-tiered and latest
   offsets per partition, topic ids, local bytes per partition);
4. the broker is stopped (SIGTERM) before the tests read its files.

The folder keeps ``server.properties``, ``logs/`` (log.dirs), ``remote/`` (the remote storage),
``broker.log`` (both runs), ``workload.log``, ``truth.json`` and ``deleted-topic.json``. The
jars and classes come from ``tests/broker/fetch.sh``; nothing is downloaded here.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ports import free_ports

from broker.client import (
    FEATURES,
    FETCH_COMMAND,
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    BrokerError,
    _classpath,
    _start,
    _stop,
    _tail,
    cache_dir,
    java,
    server_properties,
)
from broker.client import missing_reason as broker_missing_reason

__all__ = ["TieredRun", "missing_reason", "run_tiered_broker"]

STEP_TIMEOUT_S = 120.0
_SOURCES = sorted((Path(__file__).resolve().parent / "src" / "tiered").glob("*.java"))
_JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
_STORAGE_MANAGER = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"


def missing_reason(cache: Path | None = None) -> str | None:
    """Why the tiered broker cannot start (a sentence naming the command to run), or None."""
    cache = cache or cache_dir()
    reason = broker_missing_reason(cache)
    if reason is not None:
        return reason
    if not any((cache / "tiered-jars").glob("kafka-storage-*-test.jar")):
        return f"{cache / 'tiered-jars'} has no kafka-storage test jar; run {FETCH_COMMAND}"
    workload = cache / "tiered-workload"
    if not (workload / "classes" / "TieredWorkload.class").is_file():
        return f"the tiered workload is not compiled; run {FETCH_COMMAND}"
    current = hashlib.sha256(b"".join(p.read_bytes() for p in _SOURCES)).hexdigest()
    stamp = workload / "sources.sha256"
    if not stamp.is_file() or stamp.read_text().strip() != current:
        return f"the compiled tiered workload is older than its source; run {FETCH_COMMAND}"
    return None


def tiered_properties(log_dir: Path, remote: Path, broker_port: int, controller_port: int) -> str:
    """The broker tests' configuration with remote storage on, its tasks every second, and
    ``__remote_log_metadata`` in two partitions."""
    settings = {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": _STORAGE_MANAGER,
        "rsm.config.dir": str(remote),
        "rsm.config.delete.enable": "true",
        "rsm.config.transferer.class": "PausingTransferer",
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "2",
        "remote.log.manager.task.interval.ms": "500",
        "log.retention.check.interval.ms": "500",
        "log.initial.task.delay.ms": "500",
        "log.roll.ms": "3600000",
    }
    return server_properties(log_dir, broker_port, controller_port) + "".join(
        f"{k}={v}\n" for k, v in settings.items()
    )


@dataclass(frozen=True)
class TieredRun:
    """What a finished run left behind, and the broker's answers."""

    folder: Path
    log_dir: Path
    remote_dir: Path
    """The remote storage's root: ``<topic>-<partition>-<topic id>`` folders."""
    truth: dict[str, Any]
    deleted_topic: dict[str, Any]
    seconds: float


def _step(java_bin: str, classpath: str, args: list[str], log: Path, timeout: float) -> None:
    with log.open("ab") as out:
        try:
            done = subprocess.run(
                [java_bin, *_JVM_OPTIONS, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                 "-cp", classpath, "TieredWorkload", *args],
                stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise BrokerError(
                f"TieredWorkload {args[0]} took over {timeout}s:\n{_tail(log)}"
            ) from exc
    if done.returncode != 0:
        raise BrokerError(f"TieredWorkload {args[0]} failed ({done.returncode}):\n{_tail(log)}")


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the broker by its process id: an unclean stop in the middle of its work."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=STOP_TIMEOUT_S)


def run_tiered_broker(folder: Path, cache: Path | None = None) -> TieredRun:
    """Format, start, load, kill during an upload, restart, settle and stop a tiered broker in
    ``folder`` (see the module's doc)."""
    cache = cache or cache_dir()
    reason = missing_reason(cache)
    if reason is not None:
        raise BrokerError(f"tiered test broker unavailable: {reason}")
    java_bin = java()
    assert java_bin is not None  # checked by missing_reason
    started = time.monotonic()
    folder.mkdir(parents=True, exist_ok=True)
    log_dir, remote = folder / "logs", folder / "remote"
    remote.mkdir(exist_ok=True)
    config = folder / "server.properties"
    broker_port, controller_port = free_ports(2)
    config.write_text(tiered_properties(log_dir, remote, broker_port, controller_port))
    broker_jars = _classpath(
        cache / "broker-jars",
        cache / "tiered-workload" / "classes",
        *sorted((cache / "tiered-jars").glob("*.jar")),
    )
    storage_log = folder / "storage.log"
    features = [arg for name, level in FEATURES.items() for arg in ("--feature", f"{name}={level}")]
    with storage_log.open("wb") as out:
        formatted = subprocess.run(
            [java_bin, *_JVM_OPTIONS, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
             "-cp", broker_jars, "kafka.tools.StorageTool", "format", "--config", str(config),
             "--cluster-id", "a2Fma2Etc3BlY2dlbi10ZQ", "--standalone", *features],
            stdout=out, stderr=subprocess.STDOUT, timeout=START_TIMEOUT_S, check=False,
        )  # fmt: skip
    if formatted.returncode != 0:
        raise BrokerError(f"kafka-storage format failed:\n{_tail(storage_log)}")
    bootstrap = f"127.0.0.1:{broker_port}"
    workload = folder / "workload.log"
    broker_log = folder / "broker.log"
    proc = _start(java_bin, broker_jars, config, broker_log)
    try:
        _step(java_bin, broker_jars, ["load", bootstrap, str(remote)], workload, STEP_TIMEOUT_S)
        _step(java_bin, broker_jars, ["pause", bootstrap, str(remote)], workload, STEP_TIMEOUT_S)
    finally:
        _kill(proc)
    (remote / "pause-uploads").unlink()
    first_log = broker_log.read_bytes()
    proc = _start(java_bin, broker_jars, config, broker_log)
    try:
        truth_path = folder / "truth.json"
        _step(
            java_bin,
            broker_jars,
            ["truth", bootstrap, str(remote), str(truth_path)],
            workload,
            STEP_TIMEOUT_S,
        )
    finally:
        _stop(proc)
        broker_log.write_bytes(first_log + b"\n--- restarted ---\n" + broker_log.read_bytes())
    truth: dict[str, Any] = json.loads(truth_path.read_text())
    deleted: dict[str, Any] = json.loads((folder / "deleted-topic.json").read_text())
    return TieredRun(
        folder,
        log_dir,
        remote / "kafka-tiered-storage",
        truth,
        deleted,
        time.monotonic() - started,
    )
