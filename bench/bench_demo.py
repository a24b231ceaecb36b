"""Time ``make demo`` as a user meets it: the wall time and the CPU time of every process it
starts (the driver, the JVM, Spark's Python workers, the forensics commands), read from /proc.

    .venv/bin/python bench/bench_demo.py [--runs 1] [-- demo arguments...]

The machine is shared, so the CPU seconds are the steadier figure; the load average before and
after is printed beside them. Each run writes below a fresh folder in the system temp folder,
removed afterwards; the last run's phases (from one timestamped line of the demo to the next)
are timed too.
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from timing import TreeCpu

ROOT = Path(__file__).resolve().parents[1]


_PHASE = re.compile(r"^\[\d\d:\d\d:\d\d\] (.*)$")


def run_once(demo_args: list[str]) -> tuple[float, float, int, list[tuple[str, float, float]]]:
    """One demo run: (wall seconds, CPU seconds of its processes, exit status, and per phase
    (the demo's timestamped line that starts it) its wall and CPU seconds)."""
    out = Path(tempfile.mkdtemp(prefix="bench-demo-"))
    try:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "spark_udfs.demo", "--out", str(out / "run"), *demo_args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        tree = TreeCpu(proc.pid, interval=0.2)
        marks: list[tuple[str, float, float]] = []
        lines: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while True:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                break
            m = _PHASE.match(line)
            if m:
                marks.append((m[1][:60], time.perf_counter() - started, sum(tree.seconds())))
        proc.wait()
        tree.stop()
        wall, cpu = time.perf_counter() - started, sum(tree.seconds())
        phases = [
            (name, end_wall - wall0, end_cpu - cpu0)
            for (name, wall0, cpu0), (_, end_wall, end_cpu) in zip(
                marks, [*marks[1:], ("end", wall, cpu)], strict=True
            )
        ]
        return wall, cpu, proc.returncode, phases
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("demo_args", nargs="*", help="arguments for the demo (after --)")
    args = parser.parse_args()
    print(f"# load average before: {os.getloadavg()[0]:.1f}", flush=True)
    print("| run | wall s | CPU s | exit |")
    print("|---|---|---|---|")
    runs = []
    for n in range(1, args.runs + 1):
        wall, cpu, status, phases = run_once(args.demo_args)
        runs.append(phases)
        print(f"| {n} | {wall:.1f} | {cpu:.1f} | {status} |", flush=True)
    print(f"# load average after: {os.getloadavg()[0]:.1f}")
    print()
    print("| phase (the demo's line that starts it) | wall s | CPU s |")
    print("|---|---|---|")
    for name, wall, cpu in runs[-1]:
        print(f"| {name} | {wall:.1f} | {cpu:.1f} |")


if __name__ == "__main__":
    main()
