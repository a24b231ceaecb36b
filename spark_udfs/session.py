"""A Spark session with sane defaults for decoding dumps, and shipping this package to executors."""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

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
    running server, ``"local[2]"`` to start one in this process. ``ship=True`` adds this
    package to the executors (``addPyFile``, or ``addArtifacts`` over Spark Connect; needed on a
    cluster unless the wheel is installed there). ``driver_memory`` only applies when this call
    starts the JVM; a client of a running Connect server sets only the ``spark.sql.*`` settings
    (of ``extra_conf`` too): the others are the server's.
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
        **(extra_conf or {}),
    }
    if remote:
        builder = SparkSession.builder.remote(remote)
        if not remote.startswith("local"):
            # A running server was configured when it started: a client sets SQL settings only.
            conf = {k: v for k, v in conf.items() if k.startswith("spark.sql.")}
    else:
        builder = SparkSession.builder.master(master or os.environ.get("SPARK_MASTER", "local[*]"))
    builder = builder.appName(app_name)
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    if not is_connect(spark):  # a Connect server keeps its own log level
        spark.sparkContext.setLogLevel("ERROR")
    if ship:
        ship_package(spark)
    register_data_source(spark)
    return spark


def build_package_zip(target: Path | None = None) -> Path:
    """Zip ``codegen`` (runtime and dumps), ``generated`` and ``spark_udfs`` for ``addPyFile``."""
    if target is None:
        target = Path(tempfile.mkdtemp(prefix="kafka-specgen-")) / "kafka_specgen.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in _PACKAGES:
            for path in sorted((_ROOT / package).rglob("*.py")):
                if "__pycache__" not in path.parts:
                    zf.write(path, path.relative_to(_ROOT).as_posix())
    return target


def ship_package(spark: SparkSession) -> Path:
    """Send the package to every executor: ``SparkContext.addPyFile``, or over Spark Connect
    (no ``SparkContext``) ``addArtifacts(pyfile=True)``, the session's own artifacts."""
    path = build_package_zip()
    add_python_file(spark, path)
    register_data_source(spark)
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
    off)."""
    from spark_udfs.datasource import KafkaLogDataSource
    from spark_udfs.pushdown import PUSHDOWN_CONF

    spark.dataSource.register(KafkaLogDataSource)
    spark.conf.set(PUSHDOWN_CONF, "true")


def kafka_log_reader(spark: SparkSession) -> DataFrameReader:
    """``spark.read.format("kafka-log")`` spread over the session's cores (``minPartitions``:
    the source itself only knows the cores of the driver, which on a cluster are fewer). Over
    Spark Connect the cores are the server's ``spark.default.parallelism`` when it sets it,
    else the source's default."""
    reader = spark.read.format("kafka-log")
    cores = default_parallelism(spark)
    return reader if cores is None else reader.option("minPartitions", cores)
