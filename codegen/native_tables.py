"""Layout tables for the native decoder: each struct of a message at one version, as data.

One hand-written C engine (``codegen/native/engine.c``) reads every message; what differs
between messages is only the table it is given. A table is a small tuple of ints, strings
and default values, built here from the frozen IR and converted once by the engine:

    (MAGIC, FORMAT_VERSION, message name, version, (struct, ...))   root struct first

    struct = (class name, flexible, slot count, ops, absent, tagged, tags valid elsewhere)
    op     = (opcode, flags, slot, attribute, element opcode, child struct index)
    absent = (slot, attribute, default kind, default)       not on the wire at this version
    tagged = (tag, op, default kind, default)                sorted by tag

``slot`` is the field's position in the class's ``__slots__`` (``unknown_tags`` is the
last slot); the engine checks it against the class before it writes slots directly. The
semantics are the pure reader's (``templates/read.py.j2``): the same checks, in the same
order, with the same errors.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from codegen.ir import EmptyArray, EmptyStruct, Field, FieldType, Message, Struct
from codegen.native.table_format import (
    ARRAY,
    BOOL,
    BYTES,
    COMPACT,
    DEFAULT_LIST,
    DEFAULT_STRUCT,
    DEFAULT_UUID,
    DEFAULT_VALUE,
    FLOAT64,
    FORMAT_VERSION,
    INT8,
    INT16,
    INT32,
    INT64,
    MAGIC,
    NULLABLE,
    STRING,
    STRUCT,
    TAGGED_MARKER,
    UINT16,
    UINT32,
    UUID,
)

# The format's numbers (opcodes, flags, default kinds): codegen.native.table_format.
_FIXED_OPCODES = {
    "int8": INT8,
    "int16": INT16,
    "int32": INT32,
    "int64": INT64,
    "uint16": UINT16,
    "uint32": UINT32,
    "float64": FLOAT64,
    "bool": BOOL,
    "uuid": UUID,
}
_OPCODES = {**_FIXED_OPCODES, "string": STRING, "bytes": BYTES, "records": BYTES}

Op = tuple[int, int, int, str, int, int]
Default = tuple[int, object]
StructTable = tuple[
    str,
    bool,
    int,
    tuple[Op, ...],
    tuple[tuple[int, str, int, object], ...],
    tuple[tuple[int, Op, int, object], ...],
    tuple[int, ...],
]
StructTables = tuple[StructTable, ...]
MessageTable = tuple[str, int, str, int, StructTables]


def _default(f: Field) -> Default:
    value = f.default
    if isinstance(value, EmptyArray):
        return DEFAULT_LIST, None
    if isinstance(value, EmptyStruct):
        assert f.struct is not None
        return DEFAULT_STRUCT, f.struct.name
    if isinstance(value, uuid.UUID):
        return DEFAULT_UUID, value.int
    return DEFAULT_VALUE, value


class _Builder:
    """The structs of one message at one version, numbered in order of first use."""

    def __init__(self, message: Message, version: int) -> None:
        self.message = message
        self.version = version
        self.index: dict[str, int] = {}
        self.tables: list[StructTable | None] = []

    def struct_index(self, struct: Struct) -> int:
        found = self.index.get(struct.name)
        if found is not None:
            return found
        i = len(self.tables)
        self.index[struct.name] = i
        self.tables.append(None)  # reserved: children get the next numbers
        self.tables[i] = self._struct(struct)
        return i

    def _op(self, f: Field, slot: int, compact: bool, tagged: bool) -> Op:
        v = self.version
        ftype: FieldType = f.type
        variable = ftype.kind in ("string", "bytes", "records", "array")
        flags = (COMPACT if compact and variable else 0) | (NULLABLE if f.nullable_in(v) else 0)
        if ftype.kind == "struct":
            assert f.struct is not None
            if tagged and f.nullable_in(v):
                flags |= TAGGED_MARKER
            return (STRUCT, flags, slot, f.attr, 0, self.struct_index(f.struct))
        if ftype.kind == "array":
            assert ftype.element is not None
            element = ftype.element
            if element.kind == "struct":
                assert f.struct is not None
                return (ARRAY, flags, slot, f.attr, STRUCT, self.struct_index(f.struct))
            return (ARRAY, flags, slot, f.attr, _OPCODES[element.kind], -1)
        return (_OPCODES[ftype.kind], flags, slot, f.attr, 0, -1)

    def _struct(self, struct: Struct) -> StructTable:
        v = self.version
        ops: list[Op] = []
        absent: list[tuple[int, str, int, object]] = []
        for slot, f in enumerate(struct.fields):
            if v in f.mandatory_versions:
                ops.append(self._op(f, slot, f.flexible_in(v), tagged=False))
            elif v not in f.tagged_versions:
                absent.append((slot, f.attr, *_default(f)))
        tagged: list[tuple[int, Op, int, object]] = []
        elsewhere: list[int] = []
        slots = {f.name: slot for slot, f in enumerate(struct.fields)}
        for f in struct.tagged_fields():
            assert f.tag is not None
            if v in f.tagged_versions:
                op = self._op(f, slots[f.name], True, tagged=True)
                tagged.append((f.tag, op, *_default(f)))
            else:
                elsewhere.append(f.tag)
        flexible = v in self.message.flexible_versions
        return (
            struct.name,
            flexible,
            len(struct.fields) + 1,
            tuple(ops),
            tuple(absent),
            tuple(tagged),
            tuple(elsewhere),
        )


def message_table(message: Message, version: int) -> MessageTable:
    """The layout table of ``message`` at ``version`` (its root struct first)."""
    if version not in message.valid_versions:
        raise ValueError(f"{message.name} has no version {version}")
    builder = _Builder(message, version)
    builder.struct_index(message.root)
    structs = tuple(t for t in builder.tables if t is not None)
    assert len(structs) == len(builder.tables)
    return (MAGIC, FORMAT_VERSION, message.name, version, structs)


def message_tables(message: Message) -> dict[int, MessageTable]:
    """The table of every valid version of ``message``."""
    return {v: message_table(message, v) for v in message.valid_versions.versions()}


@dataclass(frozen=True, slots=True)
class ModuleTables:
    """A message's tables as its module carries them, each part once: a struct whose layout
    is the same at several versions (most nested structs) has one table, versions with the
    same wire layout share one struct list.

    ``structs`` holds each distinct struct table, ``layouts`` each distinct struct list (as
    indexes into ``structs``, root first) and ``versions`` maps a version to its index into
    ``layouts``. Tables are told apart by their text (``repr``), which is what the module
    holds, so a default ``1`` and a default ``True`` never share a table."""

    magic: str
    format_version: int
    structs: tuple[StructTable, ...]
    layouts: tuple[tuple[int, ...], ...]
    versions: tuple[tuple[int, int], ...]


def module_tables(message: Message) -> ModuleTables:
    """Every version's table of ``message``, each struct table and struct list once."""
    structs: dict[str, int] = {}
    distinct: list[StructTable] = []
    layouts: dict[tuple[int, ...], int] = {}
    versions: list[tuple[int, int]] = []
    for version, table in message_tables(message).items():
        members = []
        for struct in table[4]:
            text = repr(struct)
            if text not in structs:
                structs[text] = len(distinct)
                distinct.append(struct)
            members.append(structs[text])
        layout = layouts.setdefault(tuple(members), len(layouts))
        versions.append((version, layout))
    return ModuleTables(MAGIC, FORMAT_VERSION, tuple(distinct), tuple(layouts), tuple(versions))
