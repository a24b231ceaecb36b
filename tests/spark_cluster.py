"""A Spark standalone cluster for the tests: a master and two workers of one core each, started
from PySpark's own scripts (``sbin/spark-daemon.sh`` of the pip package, which has no
``start-master.sh``), every listener on 127.0.0.1.

``start(folder)`` starts them (their logs, pid files and working folders below ``folder``) on
free ports and waits until both workers are ALIVE; ``Cluster.conf()`` is what a session needs
to run there (the driver on 127.0.0.1, one core and 512 MiB per executor, two cores in all);
``stop()`` ends the daemons by their process ids (the workers end their executors). Executors
run in the workers' own processes and working folders: what they read comes from the paths
they are given, here an S3-compatible server (``tests/s3server.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ports import free_port, free_ports

START_TIMEOUT_S = 120.0
IDENT = "specgen-tests"
"""``SPARK_IDENT_STRING``: names the daemons' pid and log files."""
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass
class Cluster:
    folder: Path
    port: int
    ui_port: int
    env: dict[str, str]
    daemons: list[tuple[str, int]] = field(default_factory=list)
    """(class, instance number) of each daemon started."""

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def pids(self) -> list[int]:
        """The daemons' process ids, from their pid files."""
        found = []
        for cls, n in self.daemons:
            pid_file = self.folder / "pids" / f"spark-{IDENT}-{cls}-{n}.pid"
            if pid_file.is_file():
                found.append(int(pid_file.read_text().strip()))
        return found

    def state(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=10) as r:
            state: dict[str, object] = json.load(r)
            return state

    def conf(self) -> dict[str, str]:
        """A session's settings to run on this cluster from this machine."""
        return {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.cores.max": "2",
            "spark.ui.enabled": "false",
            "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        }

    def stop(self) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + 30
        for pid in self.pids():
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.2)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rpartition(")")[2].split()[0] != "Z"


def _daemon(cluster: Cluster, cls: str, n: int, args: list[str], extra: dict[str, str]) -> None:
    script = spark_home() / "sbin" / "spark-daemon.sh"
    subprocess.run(
        ["bash", str(script), "start", cls, str(n), *args],
        env={**cluster.env, **extra},
        check=True,
        capture_output=True,
        timeout=60,
    )
    cluster.daemons.append((cls, n))


def start(folder: Path, workers: int = 2) -> Cluster:
    """A master and ``workers`` one-core workers below ``folder``, ALIVE."""
    home = spark_home()
    for sub in ("pids", "logs"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SPARK_")},
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_MASTER_HOST": "127.0.0.1",
        "SPARK_PID_DIR": str(folder / "pids"),
        "SPARK_LOG_DIR": str(folder / "logs"),
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_IDENT_STRING": IDENT,
        "PYSPARK_PYTHON": sys.executable,
    }
    cluster = Cluster(folder, *free_ports(2), env)
    try:
        _daemon(
            cluster,
            MASTER,
            1,
            [
                "--host",
                "127.0.0.1",
                "--port",
                str(cluster.port),
                "--webui-port",
                str(cluster.ui_port),
            ],
            {},
        )
        for n in range(1, workers + 1):
            work = folder / f"worker-{n}"
            work.mkdir(exist_ok=True)
            _daemon(
                cluster,
                WORKER,
                n,
                [
                    *("--host", "127.0.0.1", "--cores", "1", "--memory", "768m"),
                    *("--work-dir", str(work), "--webui-port", str(free_port()), cluster.url),
                ],
                {"SPARK_WORKER_DIR": str(work)},
            )
        _wait_alive(cluster, workers)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_alive(cluster: Cluster, workers: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            state = cluster.state()
            alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]  # type: ignore[attr-defined]
            if len(alive) >= workers:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            logs = "\n".join(
                p.read_text(errors="replace")[-1500:] for p in (cluster.folder / "logs").glob("*")
            )
            raise RuntimeError(f"the standalone cluster did not come up:\n{logs}")
        time.sleep(1)
