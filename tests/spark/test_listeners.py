"""What a local Spark of the project listens on: the loopback address only.

A classic local session (the tests' shared one) and ``get_session(remote="local[N]")``, which
starts a Spark Connect server in the process: every listening socket of the process and its
children (the JVM: the driver's RPC and block manager ports, the Py4J gateway, the Connect
server) is on 127.0.0.1, and the Connect server takes a free port, so one already on Spark's
default port (15002) is no obstacle.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from connect_server import enabled as connect_pass
from sockets import exposed, listening

pytestmark = pytest.mark.spark

LOCAL_CONNECT = """\
import socket, sys
sys.path.insert(0, "tests")
from sockets import exposed, listening
held = socket.socket()
try:  # Spark Connect's default port, held by another listener
    held.bind(("127.0.0.1", 15002))
    held.listen()
except OSError:
    pass  # another server has it already: the same obstacle
from spark_udfs.session import get_session
spark = get_session(remote="local[1]", driver_memory="512m", shuffle_partitions=1)
assert spark.range(7).count() == 7
print(sorted(set(listening()) - {("127.0.0.1", 15002)}))
print(exposed())
spark.stop()
"""


@pytest.mark.skipif(connect_pass(), reason="a classic session's JVM: not in the Connect pass")
def test_a_local_session_listens_on_loopback_only(spark: Any) -> None:
    assert spark.range(3).count() == 3
    assert listening(), "the JVM's listening sockets were not found"
    assert exposed() == []


def test_a_local_connect_server_takes_a_free_loopback_port() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", LOCAL_CONNECT],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sockets, open_to_all = proc.stdout.splitlines()[-2:]
    assert open_to_all == "[]", sockets
    assert sockets != "[]"


@pytest.mark.spark_connect
@pytest.mark.connect_only
def test_the_test_runs_connect_server_listens_on_loopback_only(
    spark: Any, spark_connect_server: Any
) -> None:
    assert spark.range(3).count() == 3
    assert ("127.0.0.1", spark_connect_server.port) in listening(spark_connect_server.pid)
    assert exposed(spark_connect_server.pid) == []
