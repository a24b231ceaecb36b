"""How the benchmarks time their jobs: wall and CPU seconds, the best of a few runs for a
one-core job; for Spark jobs, the median of rounds run in turn with the CPU seconds of the
driver JVM and of its Python workers (read from /proc; :class:`TreeCpu` keeps the time of
workers that end)."""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def best(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """The least wall and CPU seconds of ``repeat`` runs of ``fn()``."""
    walls, cpus = [], []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def process_table() -> dict[int, tuple[int, int, int]]:
    """Every process now: pid -> (parent pid, start time, user + system ticks of its own)."""
    procs: dict[int, tuple[int, int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        procs[int(entry)] = (int(fields[1]), int(fields[19]), int(fields[11]) + int(fields[12]))
    return procs


def timed(
    jobs: dict[str, Callable[[], None]], runs: int, jvm_pid: int, warm_up: bool = True
) -> dict[str, Any]:
    """Each job run once to warm up (unless ``warm_up`` is False: when the session is warm
    already and a run takes minutes), then the jobs in turn ``runs`` times (noisy machines
    drift): median wall time and the median CPU seconds of the JVM and the Python workers."""
    if warm_up:
        for job in jobs.values():
            job()
    times: dict[str, list[float]] = {name: [] for name in jobs}
    cpu: dict[str, list[tuple[float, float]]] = {name: [] for name in jobs}
    tree = TreeCpu(jvm_pid)
    try:
        for _ in range(runs):
            for name, job in jobs.items():
                jvm0, py0 = tree.seconds()
                t = time.perf_counter()
                job()
                times[name].append(time.perf_counter() - t)
                jvm1, py1 = tree.seconds()
                cpu[name].append((jvm1 - jvm0, py1 - py0))
    finally:
        tree.stop()
    return {
        name: {
            "median_s": statistics.median(times[name]),
            "runs_s": times[name],
            "jvm_cpu_s": statistics.median(c[0] for c in cpu[name]),
            "python_cpu_s": statistics.median(c[1] for c in cpu[name]),
        }
        for name in jobs
    }


class TreeCpu:
    """CPU seconds of the driver JVM and of its descendants (the Python workers), counted so
    that processes which end are not lost: the Python daemon ignores SIGCHLD, so a worker that
    exits (an idle one is stopped after a minute) is reaped without adding its time to any
    parent's. A thread reads ``/proc`` every ``interval`` seconds and keeps each process's last
    user + system time; what a process spends after its last reading is lost (at most
    ``interval`` seconds each). ``own`` is what the readings cost this process (about 1 % of a
    core), to take out of its own CPU time."""

    def __init__(self, jvm_pid: int, interval: float = 0.25) -> None:
        self.jvm_pid = jvm_pid
        self.interval = interval
        self._tick = os.sysconf("SC_CLK_TCK")
        self._seen: dict[tuple[int, int], tuple[bool, int]] = {}  # (pid, start) -> (jvm?, ticks)
        self._lock = threading.Lock()
        self.own = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        started = time.thread_time()
        procs = process_table()
        tree, todo = [], [self.jvm_pid]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo += [c for c, (parent, _, _) in procs.items() if parent == pid]
        with self._lock:
            for pid in tree:
                if pid in procs:
                    _, start, ticks = procs[pid]
                    self._seen[pid, start] = (pid == self.jvm_pid, ticks)
            self.own += time.thread_time() - started

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self._read()

    def seconds(self) -> tuple[float, float]:
        """CPU seconds so far of the JVM and of the Python workers (every one seen)."""
        self._read()
        with self._lock:
            jvm = sum(t for is_jvm, t in self._seen.values() if is_jvm)
            workers = sum(t for is_jvm, t in self._seen.values() if not is_jvm)
        return jvm / self._tick, workers / self._tick

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
