"""``groups --format jsonl``'s lines: each report's JSON (:meth:`codegen.forensics.groups
.GroupReport.to_json`), its timeline's deleted committed offsets (most of a timeline) written
by Arrow from the deletion columns (:class:`codegen.forensics.group_timelines.Timelines`)
rather than made events one by one. The pure backend, and what Arrow's text cannot be trusted
with (nulls, what orjson refuses), take the events: the reference."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from codegen.dumps.views.compaction import arrow_array
from codegen.forensics.group_timelines import OFFSET_DELETED, Timelines
from codegen.forensics.groups import GroupReport
from codegen.forensics.output import json_bytes
from codegen.runtime import backends

__all__ = ["group_lines", "timeline_texts"]


def group_lines(reports: Sequence[GroupReport]) -> Iterator[bytes]:
    """Each report's line (``json_bytes(report.to_json())``, byte for byte)."""
    texts: dict[int, dict[str, bytes] | None] = {}
    fast = backends.requested() != backends.PURE
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
    compact) for the groups with an event, or None where it is not written here: no
    deletions, a null among them, an event orjson refuses."""
    if timelines.deleted is None:
        return None
    table = timelines.deleted.combine_chunks()  # one chunk a column (it has rows)
    group, topic, partition, at, timestamp = (
        table.column(name).chunk(0)
        for name in ("group", "topic", "partition", "recordOffset", "timestamp")
    )
    if any(column.null_count for column in table.columns):
        return None
    records = timelines.records
    try:
        record_texts = [orjson.dumps(e.to_json(), option=orjson.OPT_NON_STR_KEYS) for e in records]
        topics = topic.dictionary_encode()
        topic_texts = [orjson.dumps(t) for t in topics.dictionary.to_pylist()]
    except TypeError:
        return None
    const = _binaries(
        [
            b'{"offset":',
            b',"timestamp":',
            b',"kind":"' + OFFSET_DELETED.encode() + b'","detail":{"topic":',
            b',"partition":',
            b"}}",
            b"",
            b",",
        ]
    )
    deleted = pc.binary_join_element_wise(
        const[0],
        _digits(at),
        const[1],
        _digits(timestamp),
        const[2],
        _binaries(topic_texts).take(topics.indices),
        const[3],
        _digits(partition),
        const[4],
        const[5],
    )
    texts = pa.concat_arrays([_binaries(record_texts), deleted])
    # Group codes: the deletions' dictionary, then the record events' groups it lacks.
    groups = group.dictionary_encode()
    names: list[str] = groups.dictionary.to_pylist()
    code_of = {name: i for i, name in enumerate(names)}
    for e in records:
        if e.group not in code_of:
            code_of[e.group] = len(names)
            names.append(e.group)
    codes = np.concatenate(
        [
            np.fromiter((code_of[e.group] for e in records), np.int64, len(records)),
            groups.indices.to_numpy(zero_copy_only=False),
        ]
    )
    offsets = np.concatenate(
        [np.fromiter((e.offset for e in records), np.int64, len(records)), at.to_numpy()]
    )
    # By group, then offset; a tie in the order given (lexsort is stable): the records'
    # events first, each lot in its order, as Timelines.events merges them.
    order = np.lexsort((offsets, codes))
    bounds = np.zeros(len(names) + 1, np.int32)
    np.cumsum(np.bincount(codes, minlength=len(names)), out=bounds[1:])
    joined = pc.binary_join(
        pa.ListArray.from_arrays(arrow_array(bounds), texts.take(arrow_array(order))), const[6]
    )
    return {name: b"[" + text + b"]" for name, text in zip(names, joined.to_pylist(), strict=True)}


def _binaries(items: Sequence[bytes]) -> pa.Array:
    """``items`` as a large binary array, made on its buffers: ``pa.array`` and ``pa.scalar``
    of Python objects import dateutil, which groups needs nowhere else."""
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, items), np.int64, len(items)), out=offsets[1:])
    data = pa.py_buffer(b"".join(items))
    return pa.Array.from_buffers(pa.large_binary(), len(items), [None, pa.py_buffer(offsets), data])


def _digits(column: pa.Array) -> pa.Array:
    """An integer column in decimal, as JSON writes it."""
    return pc.cast(pc.cast(column, pa.string()), pa.large_binary())
