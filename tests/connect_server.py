"""A local Spark Connect server for the ``spark_connect`` pass (``SPECGEN_SPARK_CONNECT=1``).

``start_server(folder)`` runs PySpark's own ``SparkConnectServer`` as ``make connect-server``
does (:mod:`spark_udfs.connect_server`, master ``local[2]``) in its own process on a free port
of 127.0.0.1, from the project root (the working folder relative paths are read against, as on
any Spark server), with Spark's Kafka source on its class path when ``make setup`` fetched it. Clients reach it at ``url``, as they reach a cluster's:
no ``SparkContext`` and no JVM in the client's process. ``stop()`` ends it by its process id.
"""

from __future__ import annotations

import os
from pathlib import Path

from spark_udfs import connect_server
from spark_udfs.connect_server import ConnectServer

ENV = "SPECGEN_SPARK_CONNECT"
"""Set to 1: the Spark tests marked ``spark_connect`` run against a Connect server."""

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 180.0


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def start_server(folder: Path, conf: dict[str, str]) -> ConnectServer:
    """The server of ``make connect-server`` (``spark_udfs.connect_server``) on a free port,
    ``local[2]``, the project root as its working folder."""
    return connect_server.start(
        folder, port=0, master="local[2]", workdir=ROOT, conf=conf, timeout=START_TIMEOUT_S
    )
