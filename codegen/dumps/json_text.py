"""The JSON form of generated structs as data, for the native jsonl printer.

``codegen/native/jsontext.c`` prints a decoded value straight from its slots. What it prints,
and when, is the generated ``to_json`` (``templates/json.py.j2``, Kafka's JsonConverter form),
here made data from two things every generated package carries:

- the struct's layout table at the version (``_NATIVE_TABLES``, ``codegen.native_tables``):
  which fields are on the wire (printed always), tagged (printed when not their default) or
  absent (not printed) at that version, their slots and nested structs;
- its JSON names and spec order (``_spark_schemas``: the ``json_key`` of each field, with its
  attribute and spec type).

A struct the printer cannot print exactly (a ``float64`` field, whose text is the
reference's encoder's) gets no plan: its records go through ``to_json`` and orjson. The plans
are checked against ``to_json`` for every message and version by tests/test_jsonl_native.py.
"""

from __future__ import annotations

import importlib
import sys
import uuid
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

import orjson

from codegen.native.table_format import (
    ARRAY,
    DEFAULT_LIST,
    DEFAULT_STRUCT,
    DEFAULT_UUID,
    FLOAT64,
    MAGIC,
    NULLABLE,
    STRUCT,
)
from codegen.runtime import backends

__all__ = ["jsontext_module", "native_printer", "value_plans", "wire_plans", "wire_sides"]

if TYPE_CHECKING:
    from codegen.dumps.user_topics import UserTopicDecoder

_UNKNOWN_TAGS: Final = "unknown_tags"


class _Unprintable(Exception):
    """A struct the native printer cannot print exactly: its records take the reference."""


@cache
def jsontext_module() -> ModuleType | None:
    """The compiled printer (``codegen.native._jsontext``), or None when it is not built."""
    try:
        return importlib.import_module("codegen.native._jsontext")
    except ImportError:
        return None


def native_printer() -> ModuleType | None:
    """The compiled printer where the native backend prints: None when it is not built or the
    pure backend is asked for (the reference prints then)."""
    return None if backends.requested() == backends.PURE else jsontext_module()


def _kinds(module: ModuleType) -> dict[str, int]:
    ints = dict.fromkeys(("int8", "int16", "int32", "int64", "uint16", "uint32"), module.INT)
    return {
        **ints,
        "bool": module.BOOL,
        "string": module.STRING,
        "bytes": module.BYTES,
        "records": module.RECORDS,
        "uuid": module.UUID,
        "struct": module.STRUCT,
    }


def _schemas(cls: type) -> dict[str, Any]:
    """The ``_spark_schemas.SCHEMAS`` of the package that generated ``cls``."""
    package = cls.__module__.rpartition(".")[0]
    module = sys.modules.get(f"{package}._spark_schemas") or importlib.import_module(
        f"{package}._spark_schemas"
    )
    schemas: dict[str, Any] = module.SCHEMAS
    return schemas


def _default(kind: int, payload: object, classes: dict[str, type]) -> object:
    """A tagged field's default as to_json compares with it (``!=``)."""
    if kind == DEFAULT_UUID:
        assert isinstance(payload, int)
        return uuid.UUID(int=payload)
    if kind == DEFAULT_LIST:
        return []
    if kind == DEFAULT_STRUCT:
        assert isinstance(payload, str)
        return classes[payload]()
    return payload


def _kind(module: ModuleType, spec_type: str) -> int:
    kind = _kinds(module).get(spec_type)
    if kind is None:  # float64: its text is the reference encoder's
        raise _Unprintable(spec_type)
    return kind


def _struct_plan(
    module: ModuleType,
    structs: tuple[Any, ...],
    index: int,
    schema: dict[str, Any],
    classes: dict[str, type],
    past_newest: bool = False,
) -> Any:
    """A struct's plan by its layout at a version; ``past_newest``: at a version past the
    newest, read with that layout (the fields whose versions end there are not printed)."""
    name, _flexible, _nslots, ops, absent, tagged, _elsewhere = structs[index]
    cls = classes[name]
    wire = {op[3]: op for op in ops}
    tagged_ops = {t[1][3]: t for t in tagged}
    absent_attrs = {a[1] for a in absent}
    fields = []
    for field in schema["fields"]:
        meta = field["metadata"]
        attr = meta["attr"]
        if attr == _UNKNOWN_TAGS:
            continue  # to_json prints no unknown tags
        if past_newest:
            versions = meta.get("versions")
            if versions is None:  # a package generated before fields said their versions
                raise _Unprintable(f"{name}.{attr}: no versions")
            if not versions.endswith("+"):
                continue
        if attr in wire:
            op, is_tagged, default = wire[attr], False, None
        elif attr in tagged_ops:
            tag = tagged_ops[attr]
            op, is_tagged, default = tag[1], True, _default(tag[2], tag[3], classes)
        elif attr in absent_attrs:
            continue
        else:
            raise _Unprintable(f"{name}.{attr} is not in its layout")
        opcode, flags, _slot, _attr, _element, child_index = op
        spec_type = meta["kafkaType"]
        if opcode == ARRAY:
            kind, element = module.ARRAY, _kind(module, meta["elementType"])
            child_schema = field["type"]["elementType"]
        else:
            kind, element = _kind(module, spec_type), 0
            child_schema = field["type"]
        child = None
        if (element or kind) == module.STRUCT:
            child = _struct_plan(module, structs, child_index, child_schema, classes, past_newest)
        key = orjson.dumps(field["name"]) + b":"
        fields.append((key, attr, kind, element, bool(flags & NULLABLE), is_tagged, default, child))
    return module.Plan(cls, tuple(fields))


def value_plans(cls: type) -> tuple[Any, ...]:
    """The plans of a generated message class by version (index): a ``Plan``, or None where
    its ``to_json`` prints it (no layout table, a field the printer does not print). The last
    is the plan of every version past the newest, which the decoder reads with the newest
    version's reader when the message is flexible there (``RecordType.value_reader``):
    ``to_json`` then prints the fields of open-ended versions only (``3+``)."""
    module = jsontext_module()
    tables: dict[int, Any] | None = getattr(cls, "_NATIVE_TABLES", None)
    classes: dict[str, type] | None = getattr(cls, "_NATIVE_CLASSES", None)
    name: str | None = getattr(cls, "SPEC_NAME", None)
    if module is None or not tables or classes is None or name is None:
        return ()
    try:
        schema = _schemas(cls)[name]
    except (ImportError, KeyError):
        return ()
    newest = max(tables)
    plans: list[Any] = [None] * (newest + 2)
    for version, table in tables.items():
        magic, _format, _message, _version, structs = table
        if magic != MAGIC or version < 0:
            continue
        plans[version] = _plan(module, structs, schema, classes, past_newest=False)
        if version == newest and structs[0][1]:  # flexible: newer versions are read with it
            plans[-1] = _plan(module, structs, schema, classes, past_newest=True)
    return tuple(plans)


def _plan(
    module: ModuleType,
    structs: tuple[Any, ...],
    schema: dict[str, Any],
    classes: dict[str, type],
    *,
    past_newest: bool,
) -> Any:
    """The plan of a message by one version's layout, or None where it cannot print it."""
    try:
        return _struct_plan(module, structs, 0, schema, dict(classes), past_newest)
    except (_Unprintable, TypeError, ValueError, KeyError):
        return None


def wire_plans(cls: type) -> tuple[Any, ...]:
    """The ``WirePlan`` of a generated message class by version (index), or None where the
    printer of record bytes (``codegen/native/json_wire.h``) leaves it to the objects' path
    (no layout table; a field it does not print: ``float64``, a tagged struct's default). A
    plan reads the bytes as the engine reads them at that version and prints what ``to_json``
    prints at it."""
    module = jsontext_module()
    tables: dict[int, Any] | None = getattr(cls, "_NATIVE_TABLES", None)
    name: str | None = getattr(cls, "SPEC_NAME", None)
    if module is None or not tables or name is None:
        return ()
    try:
        schema = _schemas(cls)[name]
    except (ImportError, KeyError):
        return ()
    plans: list[Any] = [None] * (max(tables) + 1)
    for version, table in tables.items():
        magic, _format, _message, _version, structs = table
        if magic != MAGIC or version < 0:
            continue
        try:
            plans[version] = _wire_struct(module, structs, 0, schema, {})
        except (_Unprintable, TypeError, ValueError, KeyError, OverflowError):
            plans[version] = None
    return tuple(plans)


def wire_sides(decoder: UserTopicDecoder) -> tuple[Any, Any]:
    """A user topic's (key side, value side) as ``codegen/native/json_wire.h`` takes them: the
    native loop's form (``UserTopicDecoder.loop_sides``) with a ``WirePlan`` for each reader
    (None where there is no plan: those records take the decoded path)."""
    plans: dict[type, tuple[Any, ...]] = {}

    def plan(cls: type, version: int) -> Any:
        if cls not in plans:
            plans[cls] = wire_plans(cls)
        found = plans[cls]
        return found[version] if version < len(found) else None

    return decoder.loop_sides(plan)


def _wire_default(module: ModuleType, kind: int, payload: object) -> tuple[int, object]:
    """A tagged field's default as ``WirePlan`` compares with it: (default kind, value)."""
    if kind == DEFAULT_LIST:
        return module.D_EMPTY_LIST, None
    if kind == DEFAULT_UUID:
        assert isinstance(payload, int)
        return module.D_UUID, payload.to_bytes(16, "big")
    if kind == DEFAULT_STRUCT:  # a struct read is compared by the reference
        return module.D_STRUCT, None
    if isinstance(payload, float):
        raise _Unprintable(f"tagged default {payload!r}")
    if payload is None:
        return module.D_NONE, None
    if isinstance(payload, int):  # bool too: read as 0 or 1
        return module.D_INT, int(payload)
    if isinstance(payload, str):
        return module.D_TEXT, payload.encode()
    if isinstance(payload, bytes):
        return module.D_TEXT, payload
    raise _Unprintable(f"tagged default {payload!r}")


def _wire_struct(
    module: ModuleType,
    structs: tuple[Any, ...],
    index: int,
    schema: dict[str, Any],
    made: dict[int, Any],
) -> Any:
    """The ``WirePlan`` of struct ``index`` of a version's table (``made``: those built)."""
    if index in made:
        return made[index]
    _name, flexible, nslots, ops, _absent, tagged, elsewhere = structs[index]
    by_attr = {f["metadata"]["attr"]: f for f in schema["fields"]}

    def wire_op(op: tuple[Any, ...]) -> tuple[Any, ...]:
        opcode, flags, slot, attr, element, child_index = op
        if FLOAT64 in (opcode, element):
            raise _Unprintable(attr)
        child = None
        if STRUCT in (opcode, element):
            field = by_attr[attr]
            child_schema = field["type"]["elementType"] if opcode == ARRAY else field["type"]
            child = _wire_struct(module, structs, child_index, child_schema, made)
        return (opcode, flags, slot, element, child)

    wire = {op[3]: op for op in ops}
    tagged_ops = {t[1][3]: t for t in tagged}
    fields = []
    for field in schema["fields"]:
        meta = field["metadata"]
        attr = meta["attr"]
        if attr == _UNKNOWN_TAGS or (attr not in wire and attr not in tagged_ops):
            continue  # to_json prints no unknown tags, nor the fields absent at the version
        is_tagged = attr in tagged_ops
        op = tagged_ops[attr][1] if is_tagged else wire[attr]
        dkind, default = (
            _wire_default(module, *tagged_ops[attr][2:4]) if is_tagged else (module.D_NONE, None)
        )
        if op[0] == ARRAY:
            kind, element = module.ARRAY, _kind(module, meta["elementType"])
        else:
            kind, element = _kind(module, meta["kafkaType"]), 0
        key = orjson.dumps(field["name"]) + b":"
        nullable = bool(op[1] & NULLABLE)
        fields.append((key, op[2], kind, element, nullable, is_tagged, dkind, default))
    plan = module.WirePlan(
        bool(flexible),
        nslots,
        tuple(wire_op(op) for op in ops),
        tuple((t[0], wire_op(t[1])) for t in tagged),
        tuple(elsewhere),
        tuple(fields),
    )
    made[index] = plan
    return plan
