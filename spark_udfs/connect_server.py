"""A Spark Connect server for this package's clients, from a pip install of PySpark.

``python -m spark_udfs.connect_server start`` (``make connect-server``) starts PySpark's own
``SparkConnectServer`` set up as ``kafka-log`` and the UDFs need it, and ``stop`` ends it by the
process id it wrote:

- ``SPARK_HOME`` is the ``pyspark`` package's folder: a pip install holds Spark's jars and
  ``bin/spark-submit`` there, no other Spark is needed;
- ``PYSPARK_PYTHON`` is this interpreter, whose environment holds ``spark_udfs``, ``codegen`` and
  their dependencies: the server's Python workers import them (with another Python a read fails
  with ``[PYTHON_DATA_SOURCE_ERROR] ... No module named 'spark_udfs'``);
- its working folder (``--workdir``, default the current one) is where every client's relative
  paths resolve, as for Spark's own file sources;
- ``--kafka-jars DIR`` puts Spark's Kafka source on its class path (``make spark-kafka-setup``
  fetches it) for live topics;
- it listens on 127.0.0.1 unless ``--host`` says otherwise (it has no authentication: see
  docs/spark.md), on ``--port`` (15002, Spark's default; 0 takes a free one);
- its pid file, log and Spark's scratch space are in ``--folder``;
- its Python workers are started without PySpark's fork server (``spark.python.use.daemon``
  false): Spark 4.3 keeps one fork server per client session and Python module, with its idle
  workers, after the session ends (about five processes, 190 MiB, per session, for good);
  without it the workers of an ended session go too, for more CPU per task (a fresh
  interpreter, not a fork): ``--conf spark.python.use.daemon=true`` for a server few sessions use.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SERVER_CLASS", "ConnectServer", "main", "running", "start", "stop"]

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_FOLDER = Path(".cache") / "connect-server"
DEFAULT_PORT = 15002
START_TIMEOUT_S = 180.0
_PID_FILE = "server.pid"
_LOG_FILE = "connect-server.log"


@dataclass
class ConnectServer:
    """A server started by :func:`start`: its process (the leader of a process group of its
    own: the JVM and its Python workers), address and log."""

    pid: int
    host: str
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"

    def stop(self, timeout: float = 30.0) -> None:
        """End the server's process group by its id (TERM, then KILL after ``timeout``)."""
        _end_group(self.pid, self.process, timeout)


def _end_group(pid: int, process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None:
            if process.poll() is not None:
                return
        elif not _alive(pid):
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    if process is not None:
        process.wait()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:  # a zombie has ended
        return stat.read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return True


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _listening(host: str, port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex((host, port)) == 0


def spark_home() -> Path:
    """The ``pyspark`` package's folder: ``SPARK_HOME`` of a pip install."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def server_command(
    host: str, port: int, master: str, driver_memory: str, conf: Mapping[str, str]
) -> list[str]:
    """The ``spark-submit`` command line of the server."""
    settings = {
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.python.worker.reuse": "true",
        # Spark keys its Python worker pools by the client session and ends none when the
        # session ends; with the fork server each session left ~5 processes behind for good.
        "spark.python.use.daemon": "false",
        **conf,
    }
    command = [str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS]
    command += ["--master", master, "--driver-memory", driver_memory]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return command


def running(folder: Path) -> int | None:
    """The pid of the server whose pid file is in ``folder``, while it runs."""
    pid_file = folder / _PID_FILE
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


def start(
    folder: Path = DEFAULT_FOLDER,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    master: str = "local[*]",
    workdir: Path | None = None,
    driver_memory: str = "2g",
    kafka_jars: Path | None = None,
    conf: Mapping[str, str] | None = None,
    timeout: float = START_TIMEOUT_S,
) -> ConnectServer:
    """Start the server and wait until it listens; see the module's docstring."""
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    pid = running(folder)
    if pid is not None:
        raise RuntimeError(
            f"a Connect server started from {folder} runs already (pid {pid}); stop it first "
            f"(python -m spark_udfs.connect_server stop --folder {folder})"
        )
    if port == 0:
        port = _free_port(host)
    elif _listening(host, port):
        raise RuntimeError(f"{host}:{port} is in use; give another --port (0: a free one)")
    settings = {"spark.local.dir": str(folder / "spark-local"), **(conf or {})}
    if kafka_jars is not None:
        from spark_udfs.live import connector_conf

        settings.update(connector_conf(kafka_jars))
    work = (workdir or Path.cwd()).resolve()
    env = dict(os.environ, SPARK_HOME=str(spark_home()), PYSPARK_PYTHON=sys.executable)
    env["PWD"] = str(work)  # the folder relative paths resolve against (spark_udfs.connect)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1" if host == "127.0.0.1" else host)
    for var in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE"):
        env.pop(var, None)  # the server is a classic application
    log = folder / _LOG_FILE
    with open(log, "wb") as out:
        process = subprocess.Popen(
            server_command(host, port, master, driver_memory, settings),
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a group of its own: stop() ends the JVM and its workers
        )
    (folder / _PID_FILE).write_text(f"{process.pid}\n")
    server = ConnectServer(process.pid, host, port, log, process)
    deadline = time.monotonic() + timeout
    while not _listening(host, port):
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the Spark Connect server did not start (log: {log}):\n{tail}")
        time.sleep(0.5)
    return server


def stop(folder: Path = DEFAULT_FOLDER, timeout: float = 30.0) -> int | None:
    """Stop the server whose pid file is in ``folder``; its pid, or None if none ran."""
    folder = folder.resolve()
    pid = running(folder)
    if pid is not None:
        _end_group(pid, None, timeout)
    (folder / _PID_FILE).unlink(missing_ok=True)
    return pid


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spark_udfs.connect_server",
        description="Start or stop a Spark Connect server for kafka-log and the UDFs.",
        epilog=(
            "examples:\n"
            "  python -m spark_udfs.connect_server start --workdir /data/kafka\n"
            "  python -m spark_udfs.connect_server start --kafka-jars .cache/spark-kafka/jars\n"
            "  SPARK_REMOTE=sc://127.0.0.1:15002 python my_job.py\n"
            "  python -m spark_udfs.connect_server stop"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument(
        "--folder", type=Path, default=DEFAULT_FOLDER, help="pid file, log, scratch space"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0: a free port")
    parser.add_argument("--master", default="local[*]", help="where its jobs run")
    parser.add_argument(
        "--workdir", type=Path, help="where relative paths resolve (default: this folder)"
    )
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--kafka-jars", type=Path, help="the folder of Spark's Kafka source")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting"
    )
    args = parser.parse_args(argv)
    if args.action == "stop":
        pid = stop(args.folder)
        print("no server was running" if pid is None else f"stopped the server (pid {pid})")
        return 0
    if args.action == "status":
        pid = running(args.folder.resolve())
        print("not running" if pid is None else f"running (pid {pid})")
        return 0 if pid is not None else 3
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--conf {item}: give KEY=VALUE")
        conf[key] = value
    try:
        server = start(
            args.folder,
            host=args.host,
            port=args.port,
            master=args.master,
            workdir=args.workdir,
            driver_memory=args.driver_memory,
            kafka_jars=args.kafka_jars,
            conf=conf,
        )
    except RuntimeError as exc:
        print(f"connect-server: {exc}", file=sys.stderr)
        return 2
    print(f"Spark Connect server at {server.url} (pid {server.pid}, log {server.log})")
    print(f"clients: SPARK_REMOTE={server.url} or get_session(remote={server.url!r})")
    print(f"stop it: python -m spark_udfs.connect_server stop --folder {args.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
