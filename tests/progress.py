"""Progress by time, not by count (``--time-progress``; ``make test`` turns it on).

A few hundred Spark and broker tests take most of a run's time and thousands of codec tests
take seconds, so pytest's percentage (tests done of tests collected) says little about the time
left. This plugin weighs every test by how long it took in the last run of the same phase
(pytest's cache, ``.pytest_cache``; a phase is the backend, whether Spark runs over Spark Connect
and the ``-m`` expression: ``make test``'s native, pure and Connect phases each keep their own),
else in the last run of another phase (the same test on the other backend), else by an estimate
for its kind (``DEFAULT_SECONDS``), and prints a line at every tenth of the estimated time::

    [time progress] 4,056 tests, about 31m 10s on 2 workers (62m 20s of test time, timed in this phase's last run)
    [time progress]  40% of the estimated test time: 1,310 of 4,056 tests in 14m 02s, about 21m 10s left

The time left is the weight still to run at the pace so far. It runs in the process that
reports (pytest-xdist's controller under ``-n``), which knows test ids but not markers, hence
estimates by path.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import pytest

__all__ = ["CACHE_KEY", "DEFAULT_SECONDS", "TimeProgress", "estimate", "phase_name"]

STEP = 0.1
# Seconds a test of each kind takes on a busy two-core machine, by the first matching part of
# its id; measured on full runs (the cache replaces them after one run).
DEFAULT_SECONDS: Sequence[tuple[str, float]] = (
    ("tests/spark/", 15.0),
    ("tests/test_broker", 20.0),
    ("tests/test_demo.py::test_demo_", 60.0),
    ("tests/test_docs_examples.py::test_examples_run[", 30.0),
    ("tests/fuzz/", 2.0),
    ("tests/test_native_columns.py", 1.0),
    ("tests/test_oracle_diff.py", 0.3),
    ("tests/test_dumplog_parity.py", 0.5),
    ("", 0.1),
)


def estimate(nodeid: str) -> float:
    return next(seconds for part, seconds in DEFAULT_SECONDS if part in nodeid)


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}m {whole % 60:02d}s"


CACHE_KEY = "kafka-specgen/durations"
"""The cache entry: phase -> test id -> seconds of its last run in that phase."""


def phase_name(markexpr: str | None) -> str:
    """``native/all``, ``pure/codec``, ``auto+connect/spark_connect``: what a run's tests take
    time on (the backend, Spark Connect) and which tests it runs."""
    backend = os.environ.get("SPECGEN_BACKEND", "auto")
    connect = "+connect" if os.environ.get("SPECGEN_SPARK_CONNECT") else ""
    return f"{backend}{connect}/{markexpr or 'all'}"


def _workers(config: pytest.Config) -> int:
    """The tests running at once: pytest-xdist's workers, else one."""
    count = getattr(config.option, "numprocesses", None)
    if getattr(config.option, "dist", "no") == "no" or not count:
        return 1
    return count if isinstance(count, int) else os.cpu_count() or 1


class TimeProgress:
    """Counts finished tests by their weight and prints a line at every ``STEP`` of it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.phase = phase_name(config.option.markexpr)
        self.phases: dict[str, dict[str, float]] = {}
        if config.cache is not None:
            self.phases = dict(config.cache.get(CACHE_KEY, {}))
        self.known: dict[str, float] = dict(self.phases.get(self.phase, {}))
        self.elsewhere: dict[str, float] = {}
        """Each test's time in another phase's last run, where this phase has none."""
        for name, times in self.phases.items():
            if name != self.phase:
                for nodeid, seconds in times.items():
                    self.elsewhere.setdefault(nodeid, seconds)
        self.workers = _workers(config)
        self.weights: dict[str, float] = {}
        self.total = 0.0
        self.done = 0.0
        self.tests_done = 0
        self.next_step = STEP
        self.durations: dict[str, float] = {}
        self.started = time.monotonic()

    def weight(self, nodeid: str) -> float:
        """A test's expected seconds: this phase's last run, another phase's, its kind's."""
        if nodeid in self.known:
            return self.known[nodeid]
        return self.elsewhere.get(nodeid, estimate(nodeid))

    def _set_items(self, nodeids: Sequence[str]) -> None:
        if self.weights:
            return  # every xdist worker reports the same collection
        self.weights = {n: self.weight(n) for n in nodeids}
        self.total = sum(self.weights.values()) or 1.0
        self.started = time.monotonic()  # the work starts now, collection is done
        here = sum(1 for n in nodeids if n in self.known)
        there = sum(1 for n in nodeids if n not in self.known and n in self.elsewhere)
        guessed = len(nodeids) - here - there
        parts = [
            f"{here:,} timed in this phase's last run" if here else "",
            f"{there:,} in another phase's last run" if there else "",
            f"{guessed:,} estimated by kind" if guessed else "",
        ]
        source = ", ".join(p for p in parts if p)
        if not here and not there:
            source = "estimated by kind: no earlier run in .pytest_cache"
        elif not there and not guessed:
            source = "timed in this phase's last run"
        wall = (
            f"about {_clock(self.total / self.workers)} on {self.workers} workers "
            f"({_clock(self.total)} of test time, {source})"
            if self.workers > 1
            else f"about {_clock(self.total)} of test time ({source})"
        )
        self._write(f"{len(nodeids):,} tests, {wall}; a line at every {STEP:.0%} of it")

    def _write(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        writer = getattr(reporter, "_tw", None)  # pytest has no public "current column"
        if writer is not None and writer.width_of_current_line:
            reporter.write("\n")
        reporter.write_line(f"[time progress] {line}", cyan=True)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if session.items:
            self._set_items([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        self._set_items(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        if report.when != "teardown":
            return
        self.tests_done += 1
        weight = self.weights.get(report.nodeid)
        self.done += self.weight(report.nodeid) if weight is None else weight
        fraction = min(self.done / self.total, 1.0) if self.total else 0.0
        if fraction < self.next_step or fraction >= 1.0:
            return
        while self.next_step <= fraction:
            self.next_step += STEP
        elapsed = time.monotonic() - self.started
        left = elapsed * (1 - fraction) / fraction
        self._write(
            f"{fraction:4.0%} of the estimated test time: {self.tests_done:,} of "
            f"{len(self.weights):,} tests in {_clock(elapsed)}, about {_clock(left)} left"
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.cache is not None and self.durations:
            self.phases[self.phase] = {**self.known, **self.durations}
            self.config.cache.set(CACHE_KEY, self.phases)
