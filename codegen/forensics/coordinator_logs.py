"""A coordinator topic's segment files among the paths given (broker log dirs, partition folders,
segment files, globs: :mod:`codegen.forensics.inputs`), one replica per partition: what every
command over ``__consumer_offsets`` reads first (its live records, for a downgrade, are
:mod:`codegen.forensics.coordinator_partitions`')."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from codegen.dumps.coordinator_types import CONSUMER_OFFSETS
from codegen.dumps.storage import RemotePath, StoragePath
from codegen.forensics.inputs import InputError, LogDirs, discover

__all__ = ["DumpInputError", "dump_partitions", "is_paths", "log_dirs_of"]

DumpInputError = InputError
"""The input is not what the command reads (kept under its former name)."""


def log_dirs_of(path: StoragePath | Sequence[StoragePath | str] | LogDirs) -> LogDirs:
    if isinstance(path, LogDirs):
        return path
    return discover([path] if isinstance(path, str | Path | RemotePath) else list(path))


def dump_partitions(
    path: StoragePath | Sequence[StoragePath | str] | LogDirs, topic: str = CONSUMER_OFFSETS
) -> list[tuple[int, list[StoragePath]]]:
    """(partition, segment files) of ``topic`` to read from broker log dirs, partition folders
    or segment files (see :mod:`codegen.forensics.inputs`); one replica per partition.

    Raises :class:`~codegen.forensics.inputs.InputError` when the paths hold none."""
    dirs = log_dirs_of(path)
    dirs.require(topic, command=f"reading {topic}")
    found = dirs.coordinator_segments(topic)
    if not found:
        raise InputError(
            f"{', '.join(map(str, dirs.given))}: the {topic} partition folders hold no .log segment"
        )
    return found


def is_paths(value: object) -> bool:
    """A list or tuple of paths (rather than of views)."""
    return isinstance(value, list | tuple) and all(
        isinstance(v, str | Path | RemotePath) for v in value
    )
