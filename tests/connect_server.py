"""A local Spark Connect server for the ``spark_connect`` pass (``SPECGEN_SPARK_CONNECT=1``).

``start_server(folder)`` runs PySpark's own ``SparkConnectServer`` (``spark-submit``, master
``local[2]``) in its own process on a free port of 127.0.0.1, from the project root (the working
folder relative paths are read against, as on any Spark server), with Spark's Kafka source on its
class path when ``make setup`` fetched it. Clients reach it at ``url``, as they reach a cluster's:
no ``SparkContext`` and no JVM in the client's process. ``stop()`` ends it by its process id.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ENV = "SPECGEN_SPARK_CONNECT"
"""Set to 1: the Spark tests marked ``spark_connect`` run against a Connect server."""

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 180.0
_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


@dataclass
class ConnectServer:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # its own group: the JVM and its workers
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(folder: Path, conf: dict[str, str]) -> ConnectServer:
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    port = _free_port()
    settings = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.local.dir": str(folder / "spark-local"),
        **conf,
    }
    command = [str(home / "bin" / "spark-submit"), "--class", _SERVER_CLASS]
    command += ["--master", "local[2]", "--driver-memory", "2g"]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    env = dict(os.environ, SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable, PWD=str(ROOT))
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the driver's ports and any web UI
    for var in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE"):
        env.pop(var, None)
    log = folder / "connect-server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = ConnectServer(process, port, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return server
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the Spark Connect server did not start:\n{tail}")
        time.sleep(0.5)
