"""Whole-topic decoding of coordinator and metadata topics, on Arrow arrays. No pyspark here.

A coordinator record is ``key = int16 record type || key``, ``value = int16 version || value``
(null value = tombstone). The record type picks the key and value specs (the specs' ``apiKey``).
Bytes left over after a coordinator key or value are ignored, as Kafka's deserializer does.
``__cluster_metadata`` values are frames (``uvarint frame version, api key, version``) and keys
are null. Control records (transaction markers, KRaft control) are not decoded. A record type the
specs do not know is not an error (Kafka skips it, KIP-915): its decoded columns are null.

Decoded keys and values are unions, represented as a struct with one field per spec of the
topic, named after the spec; exactly one is set. A selection of record names (``recordName``
values such as ``OffsetCommit`` or ``TopicRecord``) narrows the unions to those specs and
decodes only those records; the others are left undecoded, as a record type the specs do not
know is.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa

from codegen.columnar.decode import (
    I64,
    BoolArr,
    Rows,
    _nulls,
    clamp_versions,
    decode_rows,
    distinct,
    parse_frames,
)
from codegen.columnar.package import SHIPPED, codecs
from codegen.columnar.schema import message_arrow_type

__all__ = [
    "TOPICS",
    "Topic",
    "TopicDecoded",
    "decode_topic_arrays",
    "family_of_topic",
    "record_names",
    "topic_arrow_type",
    "topics_arrow_type",
    "widen_to",
]


@dataclass(frozen=True, slots=True)
class Topic:
    """A topic family: its spec folder and how records are framed."""

    name: str  # Kafka topic name
    folder: str  # spec folder
    framing: str  # "coordinator" or "metadata"

    def keys(self, package: str = SHIPPED) -> dict[int, str]:
        """Key spec by record type, in ``package``."""
        return _specs(self.folder, "coordinator-key", package)

    def values(self, package: str = SHIPPED) -> dict[int, str]:
        """Value spec by record type (metadata: by api key), in ``package``."""
        kind = "metadata" if self.framing == "metadata" else "coordinator-value"
        return _specs(self.folder, kind, package)

    def has_specs(self, package: str = SHIPPED) -> bool:
        """Whether ``package`` has specs of this topic (a user's package may have none)."""
        return bool(self.values(package))

    def record_name(self, record_type: int, package: str = SHIPPED) -> str | None:
        specs = self.values(package) if self.framing == "metadata" else self.keys(package)
        spec = specs.get(record_type)
        if spec is None:
            return None
        return spec[: -len("Key")] if spec.endswith("Key") else spec

    def selected(self, record_type: int, names: Selection, package: str = SHIPPED) -> bool:
        """Whether ``names`` (None: all) selects records of ``record_type``."""
        return names is None or self.record_name(record_type, package) in names


# Record names to decode (``recordName`` values); None decodes every record type.
Selection = frozenset[str] | None

TOPICS: dict[str, Topic] = {
    "consumer_offsets": Topic("__consumer_offsets", "consumer_offsets", "coordinator"),
    "transaction_state": Topic("__transaction_state", "transaction_state", "coordinator"),
    "share_group_state": Topic("__share_group_state", "share_group_state", "coordinator"),
    "cluster_metadata": Topic("__cluster_metadata", "cluster_metadata", "metadata"),
    "remote_log_metadata": Topic("__remote_log_metadata", "remote_log_metadata", "metadata"),
}


@cache
def _specs(folder: str, spec_type: str, package: str = SHIPPED) -> dict[int, str]:
    found = codecs(package)
    kinds = getattr(found.messages, "kinds", None)  # None: an older package, ask the classes
    out: dict[int, str] = {}
    for name, f in sorted(found.folders.items()):
        if f != folder:
            continue
        if kinds is not None:
            kind, api_key = kinds[name].spec_type, kinds[name].api_key
        else:
            cls = found.messages[name]
            kind, api_key = cls.SPEC_TYPE, cls.API_KEY
        if spec_type == kind and api_key is not None:
            out[api_key] = name
    return out


def record_names(families: tuple[str, ...], package: str = SHIPPED) -> list[str]:
    """Every ``recordName`` of ``families`` in ``package``, in record-type order per family."""
    names: list[str] = []
    for family in families:
        topic = TOPICS[family]
        specs = topic.values(package) if topic.framing == "metadata" else topic.keys(package)
        names += [n for t in sorted(specs) if (n := topic.record_name(t, package)) is not None]
    return names


@cache
def union_type(
    family: str, spec_type: str, package: str = SHIPPED, names: Selection = None
) -> pa.StructType:
    """One field per spec of ``family`` (the records ``names`` selects)."""
    topic = TOPICS[family]
    specs = _specs(topic.folder, spec_type, package)
    return pa.struct(
        [
            pa.field(n, message_arrow_type(n, package))
            for t, n in sorted(specs.items())
            if topic.selected(t, names, package)
        ]
    )


@cache
def topic_arrow_type(
    family: str, permissive: bool, package: str = SHIPPED, names: Selection = None
) -> pa.StructType:
    """The struct a topic decoder returns (field order is the output column order)."""
    topic = TOPICS[family]
    fields = [pa.field("recordType", pa.int16()), pa.field("recordName", pa.string())]
    if topic.framing == "coordinator":
        keys = union_type(family, "coordinator-key", package, names)
        fields.append(pa.field("decodedKey", keys))
        values = union_type(family, "coordinator-value", package, names)
        fields.append(pa.field("decodedValue", values))
    else:
        fields.append(pa.field("decodedValue", union_type(family, "metadata", package, names)))
    fields += [
        pa.field("valueVersion", pa.int16()),
        pa.field("isTombstone", pa.bool_()),
        pa.field("isNewerVersion", pa.bool_()),
    ]
    if permissive:
        fields.append(pa.field("_decode_error", pa.string()))
    return pa.struct(fields)


def family_of_topic(topic: str | None) -> str | None:
    """The family of an internal topic's name (``__consumer_offsets`` -> ``consumer_offsets``)."""
    for family, t in TOPICS.items():
        if t.name == topic:
            return family
    return None


@cache
def topics_arrow_type(
    families: tuple[str, ...], permissive: bool, package: str = SHIPPED, names: Selection = None
) -> pa.StructType:
    """The decoded columns of several families at once: the fields of
    :func:`topic_arrow_type`, with ``decodedKey`` and ``decodedValue`` holding one field per
    spec of every family (spec names are unique across families). One family gives exactly
    its own type."""
    if len(families) == 1:
        return topic_arrow_type(families[0], permissive, package, names)
    types = [topic_arrow_type(f, permissive, package, names) for f in families]
    fields: list[pa.Field] = []
    for t in types:
        for field in t:
            if field.name in {f.name for f in fields}:
                continue
            if field.name in ("decodedKey", "decodedValue"):
                members = [
                    member
                    for other in types
                    if other.get_field_index(field.name) >= 0
                    for member in other.field(field.name).type
                ]
                field = pa.field(field.name, pa.struct(members))
            fields.append(field)
    order = [f.name for f in topic_arrow_type("consumer_offsets", permissive, package, names)]
    return pa.struct(sorted(fields, key=lambda f: order.index(f.name)))


def widen_to(columns: dict[str, pa.Array], typ: pa.StructType, n: int) -> list[pa.Array]:
    """The arrays of ``typ``'s fields, in order, from one family's ``columns``: a union gets
    null members for the other families' specs, a missing column is all null."""
    out: list[pa.Array] = []
    for field in typ:
        arr = columns.get(field.name)
        if arr is None:
            out.append(pa.nulls(n, field.type))
        elif arr.type == field.type:
            out.append(arr)
        else:
            assert isinstance(arr, pa.StructArray)
            children = [
                arr.field(member.name)
                if arr.type.get_field_index(member.name) >= 0
                else pa.nulls(n, member.type)
                for member in field.type
            ]
            mask = pa.array(~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.bool_))
            out.append(pa.StructArray.from_arrays(children, fields=list(field.type), mask=mask))
    return out


@dataclass(slots=True)
class TopicDecoded:
    columns: dict[str, pa.Array]
    errors: dict[int, str]


def _union(
    parts: dict[str, tuple[BoolArr, pa.StructArray]], typ: pa.StructType, n: int
) -> pa.StructArray:
    """One struct field per spec; ``parts`` maps a spec to (its rows, its full-length structs)."""
    present = np.zeros(n, np.bool_)
    children = []
    for field in typ:
        if field.name in parts:
            rows, arr = parts[field.name]
            present |= rows
            children.append(arr)
        else:
            children.append(_nulls(field.type, n))
    mask = pa.array(~present) if not present.all() else None
    return pa.StructArray.from_arrays(children, fields=list(typ), mask=mask)


def _null_where(arr: pa.StructArray, rows: BoolArr) -> pa.StructArray:
    """``arr`` with the structs of ``rows`` set to null."""
    if not rows.any():
        return arr
    null = rows | ~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.bool_)
    children = [arr.field(i) for i in range(arr.type.num_fields)]
    return pa.StructArray.from_arrays(children, fields=list(arr.type), mask=pa.array(null))


def _value_side(
    spec: str,
    rows: Rows,
    live: BoolArr,
    errors: dict[int, str],
    versions_out: I64,
    has_version: BoolArr,
    newer_out: BoolArr,
    package: str,
    fields: frozenset[str] | None = None,
) -> tuple[BoolArr, pa.StructArray]:
    """Decode the version-prefixed values of rows ``live`` (non-null) as ``spec``."""
    starts, ends = rows.starts, rows.ends
    prefix, have = rows.int16_at(starts, ends)
    for i in np.nonzero(live & ~have)[0].tolist():
        errors[i] = "could not read the int16 value version prefix"
    have &= live
    versions_out[have] = prefix[have]
    has_version |= have
    index = np.arange(rows.n, dtype=np.int64)
    eff, newer, ok = clamp_versions(spec, prefix, have, errors, index, package)
    newer_out[live] = newer[live]
    structs, errs = decode_rows(
        spec, rows, starts + 2, ends, eff, ok, trailing_ok=True, package=package, fields=fields
    )
    return _decoded_rows(ok, errs, errors), structs


def _decoded_rows(rows: BoolArr, errs: dict[int, str], errors: dict[int, str]) -> BoolArr:
    """``rows`` without those that failed to decode; their reasons join ``errors``."""
    errors.update(errs)
    if not errs:
        return rows
    rows = rows.copy()
    rows[list(errs)] = False
    return rows


def _record_names(topic: Topic, rtype: I64, types: list[int], package: str) -> pa.Array:
    """``recordName`` per row from the record types found in the batch (-1: none)."""
    codes = np.zeros(len(rtype), np.int64)  # 0: no name
    names: list[str | None] = [None]
    for t in types:
        name = topic.record_name(t, package)
        if name is not None:
            names.append(name)
            codes[rtype == t] = len(names) - 1
    return pa.array(names, pa.string()).take(pa.array(codes))


def _distinct(record_types: I64) -> list[int]:
    """The record types of a batch in order."""
    return distinct(record_types).tolist()  # type: ignore[no-any-return]


def decode_topic_arrays(
    family: str,
    key: pa.Array,
    value: pa.Array,
    control: pa.Array | None = None,
    package: str = SHIPPED,
    names: Selection = None,
    wanted: frozenset[str] | None = None,
    fields: frozenset[str] | None = None,
) -> TopicDecoded:
    """Decode one batch of (key, value) pairs of a topic family; see the module docstring.

    ``package`` is the generated package whose specs name the record types (the shipped one
    by default): a package generated from a newer Kafka release decodes its new record types.
    ``names`` (record names) decodes only those records, into unions of only their specs.
    ``wanted`` names the columns to build (default: all); every selected record is decoded
    either way, so ``errors`` is the same. ``fields`` names the fields of the decoded keys
    and values a caller reads: with the native engine the others may be left null (every
    field is still read, so ``errors`` is the same).
    """
    topic = TOPICS[family]
    vrows = Rows(value)
    n = vrows.n
    errors: dict[int, str] = {}
    is_control = np.zeros(n, np.bool_)
    if control is not None:
        is_control = np.asarray(control.fill_null(False).to_numpy(zero_copy_only=False), np.bool_)
    rtype = np.full(n, -1, np.int64)
    versions = np.full(n, -1, np.int64)
    # which rows have a record type / value version (they may be negative: -1 is no sentinel)
    known = np.zeros(n, np.bool_)
    has_version = np.zeros(n, np.bool_)
    newer = np.zeros(n, np.bool_)
    key_parts: dict[str, tuple[BoolArr, pa.StructArray]] = {}
    value_parts: dict[str, tuple[BoolArr, pa.StructArray]] = {}
    tombstone = np.zeros(n, np.bool_)
    if topic.framing == "coordinator":
        krows = Rows(key)
        cand = krows.valid & ~is_control
        prefix, have = krows.int16_at(krows.starts, krows.ends)
        for i in np.nonzero(cand & ~have)[0].tolist():
            errors[i] = "could not read the int16 record type of the key"
        for i in np.nonzero(~krows.valid & vrows.valid & ~is_control)[0].tolist():
            errors[i] = "record has no key"  # a value without a key: Kafka fails on it too
        cand &= have
        rtype[cand] = prefix[cand]
        known |= cand
        types = _distinct(prefix[cand])
        keys, values = topic.keys(package), topic.values(package)
        zeros = np.zeros(n, np.int64)
        for t in types:
            sel = cand & (prefix == t) if len(types) > 1 else cand
            kspec, vspec = keys.get(t), values.get(t)
            if kspec is None or not topic.selected(t, names, package):
                continue  # an unknown record type: skipped, as Kafka does
            structs, errs = decode_rows(
                kspec,
                krows,
                krows.starts + 2,
                krows.ends,
                zeros,
                sel,
                trailing_ok=True,
                package=package,
                fields=fields,
            )
            key_ok = _decoded_rows(sel, errs, errors)
            key_parts[kspec] = (key_ok, structs)
            tombstone |= sel & ~vrows.valid
            with_value = key_ok & vrows.valid
            if vspec is not None and with_value.any():
                value_parts[vspec] = _value_side(
                    vspec, vrows, with_value, errors, versions, has_version, newer, package, fields
                )
    else:
        cand_rows = np.nonzero(vrows.valid & ~is_control)[0].astype(np.int64)
        api, ver, body, frame_errors = parse_frames(vrows, cand_rows)
        errors.update(frame_errors)
        framed = api >= 0
        rtype[cand_rows[framed]] = api[framed]
        versions[cand_rows[framed]] = ver[framed]
        known[cand_rows[framed]] = True
        has_version |= known
        starts = vrows.starts.copy()
        starts[cand_rows] = body
        types = _distinct(api[framed])
        for a in types:
            spec = topic.values(package).get(a)
            if spec is None or not topic.selected(a, names, package):
                continue
            sel = rtype == a
            index = np.arange(n, dtype=np.int64)
            eff, nw, ok = clamp_versions(spec, versions, sel, errors, index, package)
            newer |= nw
            structs, errs = decode_rows(spec, vrows, starts, vrows.ends, eff, ok, package=package)
            value_parts[spec] = (_decoded_rows(ok, errs, errors), structs)
    if errors:  # a record that failed has no decoded key or value
        failed = np.zeros(n, np.bool_)
        failed[list(errors)] = True
        for parts in (key_parts, value_parts):
            for name, (rows, arr) in list(parts.items()):
                parts[name] = (rows & ~failed, _null_where(arr, rows & failed))

    def want(column: str) -> bool:
        return wanted is None or column in wanted

    columns: dict[str, pa.Array] = {}
    if want("recordType"):
        columns["recordType"] = pa.array(np.where(known, rtype, 0).astype(np.int16), mask=~known)
    if want("recordName"):
        columns["recordName"] = _record_names(topic, rtype, types, package)
    if topic.framing == "coordinator":
        if want("decodedKey"):
            ktype = union_type(family, "coordinator-key", package, names)
            columns["decodedKey"] = _union(key_parts, ktype, n)
        vtype = union_type(family, "coordinator-value", package, names)
    else:
        vtype = union_type(family, "metadata", package, names)
    if want("decodedValue"):
        columns["decodedValue"] = _union(value_parts, vtype, n)
    if want("valueVersion"):
        columns["valueVersion"] = pa.array(
            np.where(has_version, versions, 0).astype(np.int16), mask=~has_version
        )
    if want("isTombstone"):
        columns["isTombstone"] = pa.array(tombstone)
    if want("isNewerVersion"):
        columns["isNewerVersion"] = pa.array(newer)
    return TopicDecoded(columns, errors)
