"""The TCP sockets a process tree listens on, read from ``/proc`` (Linux): for tests that
check that what the project starts listens on the loopback address only."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

_LISTEN = "0A"


def _children(pid: int) -> set[int]:
    tree, grew = {pid}, True
    while grew:
        grew = False
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in tree:
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            parent = int(stat.rpartition(")")[2].split()[1])
            if parent in tree:
                tree.add(int(entry.name))
                grew = True
    return tree


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    except OSError:
        pass
    return inodes


def _address(hex_address: str) -> str:
    host, _, _ = hex_address.partition(":")
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    # /proc/net/tcp6: four 32-bit words, each in host (little-endian) order
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    address = ipaddress.IPv6Address(words)
    return str(address.ipv4_mapped or address)


def listening(pid: int | None = None) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket that ``pid`` (default: this process) or any of its
    descendants listens on."""
    inodes = set().union(*(_socket_inodes(p) for p in _children(pid or os.getpid())))
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == _LISTEN and int(fields[9]) in inodes:
                found.append((_address(fields[1]), int(fields[1].rpartition(":")[2], 16)))
    return sorted(found)


def exposed(pid: int | None = None) -> list[tuple[str, int]]:
    """The listening sockets of :func:`listening` not on a loopback address."""
    return [(a, p) for a, p in listening(pid) if not ipaddress.ip_address(a).is_loopback]
