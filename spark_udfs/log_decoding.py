"""What ``kafka-log``'s ``decode``, ``topics``, ``recordTypes`` and ``columns`` options ask
for (:class:`Decoding`, :func:`output_schema`), and the decoded columns added to raw rows
(:func:`decode_batch`, :func:`with_decoded`: in FAILFAST the first error raised, in PERMISSIVE
kept in ``_decode_error``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from codegen.columnar.package import SHIPPED
from codegen.columnar.topics import (
    TOPICS,
    Selection,
    decode_topic_arrays,
    family_of_topic,
    record_names,
    topics_arrow_type,
    widen_to,
)
from codegen.dumps.topic_map import TopicMap
from spark_udfs.errors import MalformedKafkaRecordError
from spark_udfs.log_slices import RAW_SCHEMA, LogSlice
from spark_udfs.options import Mode
from spark_udfs.user_topics import (
    user_topics_arrow_type,
)

__all__ = [
    "DECODE_INPUTS",
    "Decoding",
    "decode_batch",
    "decoding_of",
    "output_schema",
    "with_decoded",
]


def decode_batch(
    rb: pa.RecordBatch,
    sl: LogSlice,
    family: str | None,
    typ: pa.StructType,
    mode: Mode,
    package: str = SHIPPED,
    selection: Selection = None,
) -> pa.RecordBatch:
    """``rb`` with the decoded columns of ``typ`` added (only those: a narrower ``typ`` builds
    less); ``family`` None (a topic with no decoder) leaves them null; ``selection`` decodes
    only those records."""
    if family is None:
        return with_decoded(rb, sl, {}, {}, typ, mode)
    key, value, control = rb.column("key"), rb.column("value"), rb.column("isControl")
    wanted = frozenset(f.name for f in typ)
    result = decode_topic_arrays(family, key, value, control, package, selection, wanted)
    return with_decoded(rb, sl, result.columns, result.errors, typ, mode)


def with_decoded(
    rb: pa.RecordBatch,
    sl: LogSlice,
    decoded: dict[str, pa.Array],
    errors: dict[int, str],
    typ: pa.StructType,
    mode: Mode,
) -> pa.RecordBatch:
    """``rb`` with the ``decoded`` columns of ``typ`` (the others null); in FAILFAST the first
    of ``errors`` is raised, in PERMISSIVE they fill ``_decode_error``."""
    if errors and mode != Mode.PERMISSIVE:
        i = min(errors)
        where = f"topic {sl.topic}, partition {sl.partition}, offset {rb['offset'][i].as_py()}"
        raise MalformedKafkaRecordError(where, errors[i])
    columns = dict(decoded)
    if mode == Mode.PERMISSIVE and decoded:
        errs = np.full(rb.num_rows, None, dtype=object)
        for i, reason in errors.items():
            errs[i] = reason
        columns["_decode_error"] = pa.array(errs, pa.string())
    arrays = [*rb.columns, *widen_to(columns, typ, rb.num_rows)]
    names = [*rb.schema.names, *(f.name for f in typ)]
    return pa.RecordBatch.from_arrays(arrays, names=names)


@dataclass(frozen=True, slots=True)
class Decoding:
    """What ``decode`` asks for: one family for every file (``forced``), or each internal
    topic's own family (``decode=true``), other topics read plain."""

    families: tuple[str, ...]
    forced: str | None
    names: Selection = None  # the record names to decode (``recordTypes``); None: all
    user: TopicMap | None = None  # the ``topics`` map
    user_topics: tuple[str, ...] = ()  # the topics of the read it names

    def decoded_type(self, permissive: bool, package: str) -> pa.StructType:
        """The decoded columns: the families', with the user topics' messages added."""
        base = None
        if self.families:
            base = topics_arrow_type(self.families, permissive, package, self.names)
        if self.user is None or not self.user_topics:
            assert base is not None
            return base
        return user_topics_arrow_type(base, self.user, self.user_topics, permissive)

    def family(self, topic: str | None) -> str | None:
        if self.forced is not None:
            return self.forced
        family = family_of_topic(topic)
        return family if family in self.families else None


def decoding_of(
    topics: set[str | None],
    option: str,
    package: str = SHIPPED,
    record_types: str = "",
    user: TopicMap | None = None,
) -> Decoding:
    mapped = tuple(sorted(user.entries_for(sorted(t for t in topics if t)))) if user else ()
    if option.lower() == "false":
        if user is not None and not mapped:
            raise ValueError(
                f"kafka-log: the topic map ({user.source}) names none of the topics read "
                f"({sorted(map(str, topics))}); check its names and patterns"
            )
        return Decoding((), None, None, user, mapped)
    if option.lower() not in ("true", "auto"):
        if option not in TOPICS:
            raise ValueError(f"kafka-log: decode={option!r}: use true or one of {list(TOPICS)}")
        names = _selection(record_types, (option,), package)
        return Decoding((option,), option, names, user, mapped)
    present = {family_of_topic(t) for t in topics}
    families = tuple(f for f in TOPICS if f in present and TOPICS[f].has_specs(package))
    if not families and not mapped:
        raise ValueError(
            "kafka-log: decode=true found no internal topic to decode (topics: "
            f"{sorted(map(str, topics))}); give folders of __consumer_offsets, "
            "__transaction_state, __share_group_state, __cluster_metadata or "
            "__remote_log_metadata, name the family "
            f"(decode=consumer_offsets, one of {list(TOPICS)}), or leave decode out"
        )
    return Decoding(families, None, _selection(record_types, families, package), user, mapped)


def _selection(option: str, families: tuple[str, ...], package: str) -> Selection:
    """The ``recordTypes`` option as record names of ``families``; "" selects all."""
    wanted = [n.strip() for n in option.split(",") if n.strip()]
    if not wanted:
        return None
    known = record_names(families, package)
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise ValueError(
            f"kafka-log: recordTypes names {unknown}, which {list(families)} do not have; "
            f"use recordName values: {known}"
        )
    return frozenset(wanted)


def output_schema(opts: dict[str, str], decoding: Decoding | None, mode: Mode) -> pa.Schema:
    """The columns a read returns: every raw column and the decoded ones, or those the
    ``columns`` option names (with the error columns, always)."""
    fields = list(RAW_SCHEMA)
    if decoding is not None:
        permissive = mode == Mode.PERMISSIVE
        package = opts.get("package", SHIPPED)
        fields += list(decoding.decoded_type(permissive, package))
    wanted = [c.strip() for c in opts.get("columns", "").split(",") if c.strip()]
    if not wanted:
        return pa.schema(fields)
    have = [f.name for f in fields]
    unknown = [c for c in wanted if c not in have]
    if unknown:
        raise ValueError(
            f"kafka-log: columns names {unknown}, which this read does not have: {have}"
        )
    return pa.schema([f for f in fields if f.name in wanted or f.name in _ERROR_COLUMNS])


# Always returned: the record's or the batch's damage must show.
_ERROR_COLUMNS = ("_error", "_decode_error")
# The raw columns decoding reads (the key and value, and which record fails).
DECODE_INPUTS = ("offset", "key", "value", "isControl")
