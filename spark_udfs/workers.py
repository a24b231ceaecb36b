"""What the executors' Python workers read with, told to the client.

A worker that cannot import the native engine (``codegen.native._engine``) or the native record
loop (``codegen.native._records``) reads with the pure-Python backend: the same rows, several
times slower, and the one warning it gives goes to that worker's log, on the server or cluster,
which the client never sees. A package sent with ``ship=True`` (``ship_package``) carries Python
files only (Python imports no compiled module from a zip): it uses the engine of the package
installed in the workers' Python when that was built from the same C sources, and reads with the
pure-Python backend otherwise.

:func:`worker_backends` asks the workers (a small job of one row per partition) and
:func:`warn_pure_workers` turns a worker without the engine into a
:class:`~codegen.runtime.backends.NativeFallbackWarning` on the client;
``spark_udfs.session.ship_package`` calls it after shipping.
"""

from __future__ import annotations

import socket
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from codegen import native
from codegen.runtime.backends import NativeFallbackWarning
from spark_udfs.connect import default_parallelism

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["native_problem", "warn_pure_workers", "worker_backends"]

_REPORT = pa.schema([pa.field("host", pa.string()), pa.field("problem", pa.string())])


def native_problem() -> str | None:
    """Why this process reads with the pure-Python backend although it was not asked to
    (``SPECGEN_BACKEND=pure``), or None."""
    from codegen.dumps.arrow import native_columns_enabled
    from codegen.runtime import backends

    if backends.requested() == backends.PURE:
        return None
    problem = backends.native_problem()
    if problem is None and not native_columns_enabled():
        problem = "the native record loop (codegen.native._records) does not import"
    if problem is not None and native.installed_engine_problem is not None:
        problem += f" ({native.installed_engine_problem})"  # a shipped zip's copy
    return problem


def _report(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for _ in batches:
        pass
    row = {"host": socket.gethostname(), "problem": native_problem()}
    yield pa.RecordBatch.from_pylist([row], schema=_REPORT)


def worker_backends(spark: SparkSession, partitions: int | None = None) -> dict[str, str | None]:
    """Each executor host's reason to read with the pure-Python backend (None: it has the
    native engine), from one task per partition (default: the session's cores, or 2 over a
    Spark Connect server that does not set ``spark.default.parallelism``); a host whose workers
    differ reports a reason."""
    count = partitions or default_parallelism(spark) or 2
    tasks = spark.range(count, numPartitions=count)
    probe = tasks.mapInArrow(_report, "host string, problem string")
    found: dict[str, str | None] = {}
    for row in probe.collect():
        if row.problem is not None or row.host not in found:
            found[row.host] = row.problem or found.get(row.host)
    return found


def warn_pure_workers(spark: SparkSession, partitions: int | None = None) -> dict[str, str | None]:
    """Warn the client (:class:`NativeFallbackWarning`) when an executor's Python workers read
    with the pure-Python backend; return :func:`worker_backends`."""
    found = worker_backends(spark, partitions)
    pure = {host: problem for host, problem in found.items() if problem is not None}
    if pure:
        hosts = ", ".join(sorted(pure))
        warnings.warn(
            f"kafka-specgen: the Python workers on {hosts} read with the pure-Python backend "
            f"(the same rows, several times slower): {next(iter(pure.values()))}. A package "
            "sent with ship=True carries no compiled engine (a zip holds Python files only) "
            "and uses the one installed with the same version in the workers' Python "
            "(PYSPARK_PYTHON): install kafka-specgen there",
            NativeFallbackWarning,
            stacklevel=2,
        )
    return found
