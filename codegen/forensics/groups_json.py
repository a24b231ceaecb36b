"""``groups --format jsonl``'s lines: each report's JSON (:meth:`codegen.forensics.groups
.GroupReport.to_json`), its timeline (mostly deleted committed offsets) printed by the native
printer in one pass from the deletion columns (:class:`codegen.forensics.group_timelines
.Timelines`) and the record events' texts, rather than made events one by one. The pure
backend, and what the printer is not given (nulls, what orjson refuses), take the events: the
reference."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
import pyarrow as pa

from codegen.dumps.json_text import native_printer
from codegen.forensics.group_timelines import Timelines
from codegen.forensics.groups import GroupReport
from codegen.forensics.output import json_bytes

__all__ = ["group_lines", "timeline_texts"]


def group_lines(reports: Sequence[GroupReport]) -> Iterator[bytes]:
    """Each report's line (``json_bytes(report.to_json())``, byte for byte)."""
    texts: dict[int, dict[str, bytes] | None] = {}
    fast = native_printer() is not None
    for r in reports:
        timelines = r.timelines
        text = None
        if fast and timelines is not None and timelines.deleted is not None:
            key = id(timelines)
            if key not in texts:
                texts[key] = timeline_texts(timelines)
            found = texts[key]
            text = None if found is None else found.get(r.group, b"[]")
        line = None
        # what orjson refuses (integers past 64 bits, lone surrogates): the reference's
        with contextlib.suppress(TypeError):
            if text is not None:
                line = orjson.dumps(
                    r.json_with(orjson.Fragment(text)), option=orjson.OPT_NON_STR_KEYS
                )
        yield json_bytes(r.to_json()) if line is None else line


def timeline_texts(timelines: Timelines) -> dict[str, bytes] | None:
    """Each group's timeline as JSON text (``[e.to_json() for e in timelines.of(group)]``,
    compact) for the groups with an event, printed by the native printer
    (``timeline_arrays``, ``codegen/native/timeline_arrays.h``) from the deletion columns and
    the record events, or None where it is not written here: no deletions, a null among them,
    an event the printer leaves to orjson (an integer past 64 bits, a lone surrogate, a type
    it does not print), no printer."""
    printer = native_printer()
    if timelines.deleted is None or printer is None:
        return None
    table = timelines.deleted.combine_chunks()  # one chunk a column (it has rows)
    group, topic, partition, at, timestamp = (
        table.column(name).chunk(0)
        for name in ("group", "topic", "partition", "recordOffset", "timestamp")
    )
    if any(column.null_count for column in table.columns) or topic.type != pa.string():
        return None
    groups = group.dictionary_encode()
    names: list[str] = groups.dictionary.to_pylist()
    n = len(topic)
    texts: list[bytes] | None = printer.timeline_arrays(
        names,  # the deletions' groups, then the record events' groups it lacks (appended)
        {name: i for i, name in enumerate(names)},
        _values(groups.indices, np.int32),
        _values(at, np.int64),
        _values(timestamp, np.int64),
        _values(partition, np.int32),
        np.frombuffer(topic.buffers()[1], np.int32, n + 1, topic.offset * 4),
        topic.buffers()[2] or b"",
        timelines.event_rows(),
    )
    return None if texts is None else dict(zip(names, texts, strict=True))


def _values(column: pa.Array, dtype: type[np.generic]) -> npt.NDArray[Any]:
    """An integer column without nulls as a numpy array of ``dtype`` (its own buffer)."""
    values: npt.NDArray[Any] = column.to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(values, dtype)
