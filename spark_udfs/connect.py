"""What differs when the session is a Spark Connect client (``SparkSession.builder.remote``).

A Connect client has no ``SparkContext`` (no ``spark.sparkContext``, no ``addPyFile``, no py4j
gateway to the JVM); Python data sources and Arrow UDFs go to the server through the client, and
run in Python workers the server starts. The helpers here do each thing the way the session in
hand allows: files for the executors go by ``addArtifacts(pyfile=True)``, the cluster's cores
come from the session's configuration, and relative paths of ``kafka-log`` resolve against the
server's working folder, as those of Spark's own file sources do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from codegen.dumps import storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "add_python_file",
    "default_parallelism",
    "is_connect",
    "server_path",
]


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client session."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def add_python_file(spark: SparkSession, path: Path) -> None:
    """Put ``path`` (a ``.zip`` or ``.py``) on the executors' Python path: ``addPyFile`` on a
    classic session, ``addArtifacts(pyfile=True)`` over Spark Connect (the session's own
    artifacts, uploaded through the client)."""
    if is_connect(spark):
        spark.addArtifacts(str(path), pyfile=True)
    else:
        spark.sparkContext.addPyFile(str(path))


def default_parallelism(spark: SparkSession) -> int | None:
    """The cores of the session's cluster: the ``SparkContext``'s ``defaultParallelism`` on a
    classic session; over Spark Connect ``spark.default.parallelism`` when the server sets it,
    else None (the client cannot ask the cluster)."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    value = spark.conf.get("spark.default.parallelism", None)
    return int(value) if value else None


# Spark sets this in the environment of a Python worker that runs in a Connect session's own
# artifact folder (its working folder), not in the server's.
_ARTIFACT_SESSION = "SPARK_JOB_ARTIFACT_UUID"


def server_path(path: str) -> str:
    """``path`` as Spark's file sources read it: a relative path is relative to the working
    folder of the JVM that plans the read (a URL is left as it is). A Python worker of a Spark
    Connect session runs in the session's artifact folder; the JVM's working folder is the
    ``PWD`` it was started with, which the worker inherits."""
    session = os.environ.get(_ARTIFACT_SESSION)
    if os.path.isabs(path) or not session or os.path.basename(os.getcwd()) != session:
        return path
    if storage.is_url(path) or path.startswith("file://"):
        return path
    base = os.environ.get("PWD")
    return os.path.join(base, path) if base else path
