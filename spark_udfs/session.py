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
) -> SparkSession:
    """Create (or get) a session: ``local[*]`` unless ``master`` is given, UI off.

    ``ship=True`` adds this package to the executors with ``addPyFile`` (needed on a cluster
    unless the wheel is installed there). ``driver_memory`` only applies when this call starts
    the JVM.
    """
    from pyspark.sql import SparkSession

    _python_env()
    builder = (
        SparkSession.builder.master(master or os.environ.get("SPARK_MASTER", "local[*]"))
        .appName(app_name)
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions or os.cpu_count() or 2))
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
    )
    for k, v in (extra_conf or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
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
    """Send the package to every executor (``SparkContext.addPyFile``)."""
    path = build_package_zip()
    spark.sparkContext.addPyFile(str(path))
    return path


def ship_codec_package(spark: SparkSession, package: str | ModuleType) -> Path:
    """Send a generated codec package (importable here) to every executor with ``addPyFile``.

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
    spark.sparkContext.addPyFile(str(target))
    register_data_source(spark)
    return target


def register_data_source(spark: SparkSession) -> None:
    from spark_udfs.datasource import KafkaLogDataSource

    spark.dataSource.register(KafkaLogDataSource)


def kafka_log_reader(spark: SparkSession) -> DataFrameReader:
    """``spark.read.format("kafka-log")`` spread over the session's cores (``minPartitions``:
    the source itself only knows the cores of the driver, which on a cluster are fewer)."""
    return spark.read.format("kafka-log").option(
        "minPartitions", spark.sparkContext.defaultParallelism
    )
