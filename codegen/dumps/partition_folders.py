"""Kafka's partition folders, ``<topic>-<partition>`` in a broker's log dir: the one place their
names are read (the dump command, the forensics' inputs, the ``kafka-log`` source, the demo).

A name is a partition folder's when it is a legal topic name (letters, digits, ``.``, ``_``,
``-``, at most 249 characters, as Kafka's ``Topic.validate`` allows), a ``-`` and the partition
number. A folder found by walking a directory is taken for one only when it also holds a file
a broker writes there (a segment, an index, a producer snapshot, ``partition.metadata`` or
``leader-epoch-checkpoint``): ``/etc`` holds ``dbus-1`` and ``polkit-1``, which are not.
"""

from __future__ import annotations

import re
from typing import Final

from codegen.dumps import storage
from codegen.dumps.storage import StoragePath

__all__ = ["BROKER_FILES", "BROKER_SUFFIXES", "is_partition_folder", "partition_of"]

_NAME: Final = re.compile(r"(?P<topic>[a-zA-Z0-9._-]{1,249})-(?P<partition>\d+)")
BROKER_SUFFIXES: Final = frozenset(
    {".log", ".index", ".timeindex", ".snapshot", ".txnindex", ".checkpoint", ".deleted"}
)
"""What a broker names the files of a partition folder (``.checkpoint``: KRaft snapshots)."""
BROKER_FILES: Final = frozenset({"partition.metadata", "leader-epoch-checkpoint"})


def partition_of(name: str) -> tuple[str, int] | None:
    """The topic and partition a folder named ``name`` holds (``orders-3``), None when the
    name is not a partition folder's."""
    m = _NAME.fullmatch(name)
    return (m.group("topic"), int(m.group("partition"))) if m else None


def is_partition_folder(path: StoragePath) -> bool:
    """Whether ``path`` (on disk or in object storage) is a folder with a partition folder's
    name that holds a file a broker writes in one."""
    if partition_of(path.name) is None or not path.is_dir():
        return False
    return any(
        f.suffix in BROKER_SUFFIXES or f.name in BROKER_FILES
        for f in storage.listdir(path)
        if f.is_file()
    )
