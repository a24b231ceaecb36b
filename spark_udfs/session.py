"""A Spark session with sane defaults for decoding dumps, and shipping this package to executors."""

from __future__ import annotations

import importlib
import os
import socket
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from codegen import native
from spark_udfs.connect import add_python_file, default_parallelism, is_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrameReader, SparkSession

__all__ = [
    "build_package_zip",
    "get_session",
    "kafka_log_reader",
    "ship_codec_package",
    "ship_package",
]

_PACKAGES = ("codegen", "generated", "spark_udfs")
_ROOT = Path(__file__).resolve().parent.parent


def _python_env() -> None:
    """Workers must run the same Python (with pyarrow) as the driver."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def get_session(
    master: str | None = None,
    app_name: str = "kafka-specgen",
    driver_memory: str = "4g",
    shuffle_partitions: int | None = None,
    ship: bool = False,
    extra_conf: dict[str, str] | None = None,
    remote: str | None = None,
) -> SparkSession:
    """Create (or get) a session: ``local[*]`` unless ``master`` is given, UI off.

    ``remote`` (default: the ``SPARK_REMOTE`` environment variable, as PySpark reads it) makes
    a Spark Connect client instead, and ``master`` is not used: ``"sc://host:15002"`` for a
    running server, ``"local[2]"`` to start one in this process (on a free port of 127.0.0.1,
    so a server already running on 15002 is no obstacle). ``ship=True`` adds this
    package to the executors (``addPyFile``, or ``addArtifacts`` over Spark Connect; needed on a
    cluster unless the wheel is installed there). ``driver_memory`` only applies when this call
    starts the JVM; a client of a running Connect server sets only the ``spark.sql.*`` settings
    (of ``extra_conf`` too): the others are the server's.

    What a local session starts (the driver's ports, a web UI turned on in ``extra_conf``, a
    local Connect server) listens on 127.0.0.1 only, unless ``SPARK_LOCAL_IP`` or
    ``extra_conf`` say otherwise: a machine's other users and its network see none of it.
    A Python worker that crashes (killed by a signal its Python code does not catch) reports
    its traceback in the task's error (Spark's faulthandler settings, on).
    """
    from pyspark.sql import SparkSession

    _python_env()
    remote = remote or os.environ.get("SPARK_REMOTE")
    conf = {
        "spark.driver.memory": driver_memory,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions or os.cpu_count() or 2),
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        # A Python worker that crashes (a signal: SIGSEGV, SIGABRT, ...) reports its Python
        # traceback, not only "Python worker exited unexpectedly".
        "spark.python.worker.faulthandler.enabled": "true",
        "spark.sql.execution.pyspark.udf.faulthandler.enabled": "true",
        **(extra_conf or {}),
    }
    builder: Any  # the classic builder, or the Connect one (a subtype of neither)
    if remote and remote.startswith("local"):
        _loopback_only(conf, extra_conf or {})
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        url = _start_local_connect_server(remote, conf, app_name)
        builder = ConnectSession.builder.remote(url)
        conf = {k: v for k, v in conf.items() if k.startswith("spark.sql.")}
    elif remote:
        builder = SparkSession.builder.remote(remote)
        # A running server was configured when it started: a client sets SQL settings only.
        conf = {k: v for k, v in conf.items() if k.startswith("spark.sql.")}
    else:
        master = master or os.environ.get("SPARK_MASTER", "local[*]")
        if master.startswith("local"):
            _loopback_only(conf, extra_conf or {})
        builder = SparkSession.builder.master(master)
    builder = builder.appName(app_name)
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark: SparkSession = builder.getOrCreate()
    if not is_connect(spark):  # a Connect server keeps its own log level
        spark.sparkContext.setLogLevel("ERROR")
    if ship:
        ship_package(spark)
    register_data_source(spark)
    return spark


def _loopback_only(conf: dict[str, str], extra_conf: dict[str, str]) -> None:
    """A local Spark's listeners on 127.0.0.1: the driver's RPC and block manager ports
    (``spark.driver.bindAddress``) and the web UIs, which bind every interface unless
    ``SPARK_LOCAL_IP`` names one (read by the JVM as it starts). The user's own win."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    local_ip = os.environ["SPARK_LOCAL_IP"]
    for key in ("spark.driver.bindAddress", "spark.driver.host"):
        conf.setdefault(key, extra_conf.get(key, local_ip))


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _start_local_connect_server(master: str, conf: dict[str, str], app_name: str) -> str:
    """Start a Spark Connect server in this process (PySpark's own, as ``remote("local")``
    does) on a free port of the loopback address, and return its URL.

    PySpark's ``remote("local[N]")`` binds the fixed port 15002 on every interface and fails
    when a server already runs there; the server here is the same plugin, bound like every
    other listener of a local session (``SPARK_LOCAL_IP``, 127.0.0.1 by default). Its clients
    authenticate with a token made for the process (``SPARK_CONNECT_AUTHENTICATE_TOKEN``, which
    the client reads too), and stopping the client's session stops the server."""
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    host = os.environ["SPARK_LOCAL_IP"]
    port = int(conf.get("spark.connect.grpc.binding.port") or _free_port(host))
    options = {
        **conf,
        "spark.app.name": app_name,
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
    }
    RemoteSession._start_connect_server(master, options)
    # As PySpark's own local remote: the client's stop() stops this server as well.
    os.environ["SPARK_LOCAL_REMOTE"] = "1"
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    # gRPC's local credentials carry the token in plain text only to the name "localhost".
    name = "localhost" if host in ("127.0.0.1", "::1", "localhost") else host
    return f"sc://{name}:{port}"


def build_package_zip(target: Path | None = None) -> Path:
    """Zip ``codegen`` (runtime and dumps), ``generated`` and ``spark_udfs`` for ``addPyFile``,
    with the digest of the engine's C sources: the zip's ``codegen.native`` uses the compiled
    engine of a copy of the package installed on a worker when it was built from the same
    sources (Python imports none from a zip)."""
    if target is None:
        target = Path(tempfile.mkdtemp(prefix="kafka-specgen-")) / "kafka_specgen.zip"
    digest = native.sources_digest(_ROOT / "codegen" / "native")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in _PACKAGES:
            for path in sorted((_ROOT / package).rglob("*.py")):
                if "__pycache__" not in path.parts:
                    zf.write(path, path.relative_to(_ROOT).as_posix())
        if digest is not None:
            zf.writestr(f"codegen/native/{native.SHIPPED_DIGEST}", digest + "\n")
    return target


def ship_package(spark: SparkSession) -> Path:
    """Send the package to every executor: ``SparkContext.addPyFile``, or over Spark Connect
    (no ``SparkContext``) ``addArtifacts(pyfile=True)``, the session's own artifacts. A zip
    carries no compiled engine: the executors use the one of the package installed there when
    it was built from the same C sources (:func:`build_package_zip`), else they read with the
    pure-Python backend, and a :class:`~codegen.runtime.backends.NativeFallbackWarning` here
    says so to the client (:func:`spark_udfs.workers.warn_pure_workers`, one small job)."""
    from spark_udfs.workers import warn_pure_workers

    path = build_package_zip()
    add_python_file(spark, path)
    register_data_source(spark)
    warn_pure_workers(spark)
    return path


def ship_codec_package(spark: SparkSession, package: str | ModuleType) -> Path:
    """Send a generated codec package (importable here) to every executor with ``addPyFile``
    (``addArtifacts`` over Spark Connect).

    The zip holds the package's top-level package (``myproject`` for ``myproject.kafka``). The
    ``kafka-log`` source is registered again, since a data source sees only the files added
    before it was registered.
    """
    module = package if isinstance(package, ModuleType) else importlib.import_module(package)
    top = importlib.import_module(module.__name__.split(".")[0])
    if top.__file__ is None:
        raise ValueError(f"{top.__name__!r} is not a regular package: cannot zip it")
    folder = Path(top.__file__).resolve().parent
    target = Path(tempfile.mkdtemp(prefix="kafka-specgen-")) / f"{top.__name__}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, path.relative_to(folder.parent).as_posix())
    add_python_file(spark, target)
    register_data_source(spark)
    return target


def register_data_source(spark: SparkSession) -> None:
    """Register ``kafka-log`` and let Spark push filters into it (off by default in Spark:
    a source that takes filters is refused while ``spark.sql.python.filterPushdown.enabled`` is
    off).

    Over Spark Connect the session's plan cache (``spark.connect.session.planCache.enabled``)
    is turned off: with it, the scans of one loaded DataFrame share a read plan, in a query and
    across queries, as on a classic Spark 4.3 session; without it, each query resolves the
    DataFrame anew and each scan plans its own read, so ``kafka-log`` takes the query's
    filters there by default (``spark_udfs.pushdown``)."""
    from spark_udfs.datasource import KafkaLogDataSource, ScopedKafkaLogDataSource
    from spark_udfs.pushdown import PLAN_CACHE_CONF, PUSHDOWN_CONF

    if is_connect(spark):
        spark.conf.set(PLAN_CACHE_CONF, "false")
        spark.dataSource.register(ScopedKafkaLogDataSource)
    else:
        spark.dataSource.register(KafkaLogDataSource)
    spark.conf.set(PUSHDOWN_CONF, "true")


def kafka_log_reader(
    spark: SparkSession, storage_options: Mapping[str, str] | None = None
) -> DataFrameReader:
    """``spark.read.format("kafka-log")`` spread over the session's cores (``minPartitions``:
    the source itself only knows the cores of the driver, which on a cluster are fewer). Over
    Spark Connect the cores are the server's ``spark.default.parallelism`` when it sets it,
    else the source's default. ``storage_options``: the settings of the store the files are
    in (``codegen.dumps.storage``; the source's ``storage.*`` options)."""
    reader = spark.read.format("kafka-log")
    for key, value in (storage_options or {}).items():
        reader = reader.option(f"storage.{key}", value)
    if is_connect(spark):
        _load_resolves(reader)
    cores = default_parallelism(spark)
    return reader if cores is None else reader.option("minPartitions", cores)


def _load_resolves(reader: DataFrameReader) -> None:
    """Make ``reader.load()`` of a Spark Connect client ask the server for the DataFrame's
    schema, so that a path that does not exist, a pattern that matches nothing, a store that
    refuses or a wrong option fail at ``load()``, as on a classic session, not at the first
    action (a Connect client builds the plan without the server; the schema is kept)."""
    load = reader.load

    def load_and_resolve(*args: Any, **kwargs: Any) -> Any:
        df = load(*args, **kwargs)
        df.schema  # noqa: B018 - the server plans the source here
        return df

    setattr(reader, "load", load_and_resolve)  # noqa: B010 - the instance's, not the class's
