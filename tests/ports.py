"""Free TCP ports of 127.0.0.1 for the servers the tests start (brokers, S3, Spark)."""

from __future__ import annotations

import socket
from contextlib import ExitStack


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports: each socket is held bound until all are taken, so two
    calls in a row cannot be handed the same port (a broker's listener and its controller's)."""
    with ExitStack() as held:
        ports = []
        for _ in range(count):
            sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def free_port() -> int:
    """One free port."""
    (port,) = free_ports(1)
    return port
