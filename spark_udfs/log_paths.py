"""What a ``kafka-log`` read names: the ``load()`` paths and the ``paths`` option
(:func:`given_paths`), resolved to files and folders (globs, object storage), the segments and
snapshots below them (a tiered topic's remote segments in offset order), the topic and partition
each belongs to, and the ``storage.*`` options."""

from __future__ import annotations

import json
from collections.abc import Mapping

from codegen.dumps import storage
from codegen.dumps.log_dirs import readable_remote, tiered_order
from codegen.dumps.partition_folders import partition_of
from codegen.dumps.remote_storage import remote_partition
from codegen.dumps.segments import SEGMENT_SUFFIXES
from codegen.dumps.storage import StoragePath, split_outside_braces
from spark_udfs.connect import server_path

__all__ = [
    "given_paths",
    "list_log_files",
    "resolve_paths",
    "storage_options",
    "tiered_files",
    "topic_of",
]


def resolve_paths(paths: list[str], options: Mapping[str, str] | None = None) -> list[StoragePath]:
    """The files and folders ``paths`` name: each an existing path or a glob pattern (``*``,
    ``?``, ``[abc]``, ``{a,b}``, as Spark's file sources take them), matches in name order; on
    disk or, for a URL, in object storage (``options``: :mod:`codegen.dumps.storage`)."""
    out: list[StoragePath] = []
    for given in paths:
        p = server_path(given)  # relative: to the server's folder, over Spark Connect too
        path = storage.path(p, options)
        if path.exists():
            out.append(path)
        elif storage.has_magic(p):
            ((_, matches),) = storage.expand([p], options)
            if not matches:
                raise FileNotFoundError(
                    f"kafka-log: the pattern {given} matches no file or folder; check it, or give "
                    "the folders themselves"
                )
            out.extend(matches)
        else:
            raise FileNotFoundError(f"kafka-log: no such file or folder: {given}")
    return out


def list_log_files(paths: list[str], options: Mapping[str, str] | None = None) -> list[StoragePath]:
    """Every segment and snapshot below ``paths`` (files, folders or glob patterns; on disk or
    in object storage, ``options``: :mod:`codegen.dumps.storage`); of a tiered topic's remote
    storage, one complete copy of each remote segment
    (:func:`codegen.dumps.log_dirs.readable_remote`)."""
    return tiered_files(paths, options)[0]


def tiered_files(
    paths: list[str], options: Mapping[str, str] | None = None
) -> tuple[list[StoragePath], dict[str, int]]:
    """:func:`list_log_files` with each tiered partition's remote and local segments in offset
    order, and the offset below which each remote segment is read, by the segment's path text
    (:func:`codegen.dumps.log_dirs.tiered_order`)."""
    out: list[StoragePath] = []
    for path in resolve_paths(paths, options):
        if path.is_dir():
            found = [f for f in path.rglob("*") if f.suffix in SEGMENT_SUFFIXES and f.is_file()]
            out.extend(sorted(found, key=lambda f: str(f).split("/")))  # as paths sort
        else:
            out.append(path)
    ordered, bounds = tiered_order(readable_remote(out))
    return ordered, {str(f): b for f, b in bounds.items()}


def topic_of(path: StoragePath, options: Mapping[str, str]) -> tuple[str | None, int | None]:
    topic: str | None = options.get("topic")
    part: int | None = int(options["partition"]) if "partition" in options else None
    remote = remote_partition(path.parent)
    owner = partition_of(path.parent.name)
    if remote is not None:  # a tiered topic's remote segment: <topic>-<partition>-<topic id>
        topic = topic or remote.topic
        part = remote.partition if part is None else part
    elif owner is not None:
        topic = topic or owner[0]
        part = owner[1] if part is None else part
    elif path.suffix == ".checkpoint":
        topic, part = topic or "__cluster_metadata", 0 if part is None else part
    return topic, part


_STORAGE = "storage."


def storage_options(options: Mapping[str, str]) -> dict[str, str]:
    """The ``storage.*`` options, without the prefix: the settings of the filesystem of a URL
    (:mod:`codegen.dumps.storage`: ``storage.endpoint_override``, ``storage.access_key``...)."""
    return {k[len(_STORAGE) :]: v for k, v in options.items() if k.startswith(_STORAGE)}


def given_paths(options: dict[str, str]) -> list[str]:
    """``load(path)``, ``load([paths])`` (Spark passes a JSON array as ``paths``), or the
    ``paths`` option: a JSON array or paths separated by commas (not those inside ``{a,b}``)."""
    if "paths" in options:
        raw = options["paths"]
        paths = json.loads(raw) if raw.startswith("[") else split_outside_braces(raw)
        return [str(p).strip() for p in paths if str(p).strip()]
    if "path" in options:
        return [options["path"]]
    raise ValueError("kafka-log: give a path: spark.read.format('kafka-log').load(path)")
