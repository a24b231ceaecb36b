"""Spark's and the JVM's routine start-up messages kept from a user who would take them for
errors (``python -m spark_udfs.demo``).

Two sources, two means:

- log4j: the JVM's logging configured by ``log4j2-quiet.properties`` (Spark's defaults at WARN,
  without Hadoop's "Unable to load native-hadoop library" warning and the default profile's
  notes), given to the driver JVM as it starts (:func:`java_options`);
- the JVM itself: Spark's launcher resolves the ``jdk.incubator.vector`` module, and the JVM
  then prints ``WARNING: Using incubator modules: jdk.incubator.vector`` on its standard error,
  which no option turns off. :func:`routine_lines_dropped` passes the process's standard error
  (and so the JVM's and the Python workers', which inherit it) through a pipe that drops that
  line and nothing else: warnings and errors of any other kind still show, as they come.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

__all__ = ["LOG4J_PROPERTIES", "ROUTINE_LINES", "java_options", "routine_lines_dropped"]

LOG4J_PROPERTIES: Final = Path(__file__).resolve().parent / "log4j2-quiet.properties"
ROUTINE_LINES: Final = (b"WARNING: Using incubator modules: jdk.incubator.vector",)
"""Whole lines of standard error that are routine: dropped."""


def java_options() -> str:
    """The driver JVM's option that selects the quiet log4j configuration."""
    return f"-Dlog4j2.configurationFile={LOG4J_PROPERTIES.as_uri()}"


def _pump(source: int, target: int, routine: tuple[bytes, ...]) -> None:
    """Copy ``source`` to ``target`` as bytes come, but for whole lines equal to one of
    ``routine`` (a line that could still become one is held until it is decided)."""
    held = b""
    while chunk := os.read(source, 65536):
        held += chunk
        lines = held.split(b"\n")
        held = lines.pop()
        out = b"".join(line + b"\n" for line in lines if line.rstrip(b"\r") not in routine)
        if held and not any(r.startswith(held) for r in routine):
            out, held = out + held, b""  # a progress bar's line (\r, no newline) shows now
        if out:
            os.write(target, out)
    if held:
        os.write(target, held)
    os.close(source)


@contextmanager
def routine_lines_dropped(routine: tuple[bytes, ...] = ROUTINE_LINES) -> Iterator[None]:
    """Standard error (file descriptor 2) through a filter of ``routine`` lines while the
    block runs; processes started in it (the JVM) keep writing through the filter after it,
    for as long as this process lives. Where stderr cannot be replaced, nothing changes."""
    try:
        saved = os.dup(2)
        read_end, write_end = os.pipe()
    except OSError:
        yield
        return
    sys.stderr.flush()
    os.dup2(write_end, 2)
    os.close(write_end)
    pump = threading.Thread(target=_pump, args=(read_end, saved, routine), daemon=True)
    pump.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # this process writes directly again; the pipe stays for the JVM
