"""The frozen intermediate representation: messages, structs, fields and their types, with
versions as :class:`VersionRange` values, struct references resolved, Python and JSON names
chosen and defaults as Python values; and the parsing of a field's type and default text.

:mod:`codegen.ir_build` builds it from the spec model (stage 2); the emitters read it.
"""

from __future__ import annotations

import base64
import math
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from codegen.versions import VersionRange

# Fixed-width types: size in bytes and struct-module format letter.
FIXED_TYPES: dict[str, tuple[int, str]] = {
    "bool": (1, "?"),
    "int8": (1, "b"),
    "int16": (2, "h"),
    "int32": (4, "i"),
    "int64": (8, "q"),
    "uint16": (2, "H"),
    "uint32": (4, "I"),
    "float64": (8, "d"),
    "uuid": (16, "16s"),
}
INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
VARIABLE_TYPES = ("string", "bytes", "records")
NULLABLE_KINDS = frozenset({"string", "bytes", "records", "array", "struct"})
ENTITY_BASE_TYPES = {
    "unknown": None,
    "transactionalId": "string",
    "producerId": "int64",
    "groupId": "string",
    "topicName": "string",
    "brokerId": "int32",
}
KEYED_TYPES = frozenset({"request", "response", "metadata", "coordinator-key", "coordinator-value"})
_STRUCT_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")


@dataclass(frozen=True, slots=True)
class FieldType:
    """``int32``, ``string``, ``[]int32``, ``Topic``, ``[]Topic``..."""

    kind: str  # a FIXED_TYPES or VARIABLE_TYPES name, "array" or "struct"
    element: FieldType | None = None
    struct_name: str | None = None

    @property
    def spec_text(self) -> str:
        if self.kind == "array":
            assert self.element is not None
            return f"[]{self.element.spec_text}"
        return self.struct_name if self.kind == "struct" and self.struct_name else self.kind

    @property
    def is_struct_like(self) -> bool:
        """A struct or an array of structs."""
        return self.kind == "struct" or (
            self.kind == "array" and self.element is not None and self.element.kind == "struct"
        )

    @property
    def is_fixed(self) -> bool:
        return self.kind in FIXED_TYPES

    @property
    def can_be_nullable(self) -> bool:
        return self.kind in NULLABLE_KINDS


class EmptyStruct:
    """Marker default: a new instance of the field's struct with its own defaults."""

    def __repr__(self) -> str:
        return "EmptyStruct()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmptyStruct)

    def __hash__(self) -> int:
        return 1


class EmptyArray:
    """Marker default: a new empty list."""

    def __repr__(self) -> str:
        return "EmptyArray()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmptyArray)

    def __hash__(self) -> int:
        return 2


DefaultValue = int | float | bool | str | bytes | uuid.UUID | EmptyStruct | EmptyArray | None


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    attr: str
    json_key: str
    type: FieldType
    versions: VersionRange
    nullable_versions: VersionRange
    tagged_versions: VersionRange
    tag: int | None
    flexible_versions: VersionRange
    default: DefaultValue
    default_text: str | None
    ignorable: bool
    map_key: bool
    entity_type: str | None
    about: str
    zero_copy: bool
    struct: Struct | None = field(compare=False, repr=False)

    @property
    def mandatory_versions(self) -> VersionRange:
        """Versions where the field is in the fixed part (not the tagged section)."""
        rest = self.versions.subtract(self.tagged_versions)
        assert rest is not None  # taggedVersions is open-ended and inside versions
        return rest

    @property
    def is_tagged(self) -> bool:
        return self.tag is not None

    def tagged_in(self, version: int) -> bool:
        return version in self.tagged_versions

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_versions

    def flexible_in(self, version: int) -> bool:
        return version in self.flexible_versions


@dataclass(frozen=True, slots=True)
class Struct:
    """A message's top-level fields, a common struct, or an inline struct."""

    name: str
    versions: VersionRange
    fields: tuple[Field, ...]
    is_root: bool
    is_common: bool

    @property
    def children(self) -> tuple[Struct, ...]:
        """The structs its fields use, each once, in field order."""
        seen: dict[str, Struct] = {}
        for f in self.fields:
            if f.struct is not None:
                seen.setdefault(f.struct.name, f.struct)
        return tuple(seen.values())

    def tagged_fields(self) -> tuple[Field, ...]:
        return tuple(sorted((f for f in self.fields if f.is_tagged), key=lambda f: f.tag or 0))

    @property
    def first_unknown_tag(self) -> int:
        """The lowest tag no field of the struct has at any version (tags run from 0)."""
        return max((f.tag for f in self.fields if f.tag is not None), default=-1) + 1


@dataclass(frozen=True, slots=True)
class Message:
    name: str
    spec_type: str
    api_key: int | None
    valid_versions: VersionRange
    flexible_versions: VersionRange
    latest_version_unstable: bool
    root: Struct
    structs: tuple[Struct, ...]  # every struct, root first, then in order of first use
    module: str
    source_path: Path
    source_sha256: str

    @property
    def class_name(self) -> str:
        return self.name

    @property
    def has_struct_arrays(self) -> bool:
        """True when decoding may build many objects (an array of structs anywhere)."""
        return any(
            f.type.kind == "array" and f.struct is not None for s in self.structs for f in s.fields
        )

    def struct_named(self, name: str) -> Struct:
        for s in self.structs:
            if s.name == name:
                return s
        raise KeyError(name)


# --------------------------------------------------------------------------- parsing


def parse_field_type(text: str) -> FieldType | str:
    """A FieldType, or the text of the problem."""
    if text.startswith("[]"):
        inner = text[2:]
        if not inner:
            return "cannot parse the array type []: no element type"
        if inner.startswith("[]"):
            return f"cannot parse {text}: arrays of arrays are not allowed"
        element = parse_field_type(inner)
        if isinstance(element, str):
            return element
        if element.kind == "records":
            return f"cannot parse {text}: records cannot be an array element"
        return FieldType("array", element=element)
    if text in FIXED_TYPES or text in VARIABLE_TYPES:
        return FieldType(text)
    if _STRUCT_NAME.match(text):
        return FieldType("struct", struct_name=text)
    return f"unknown type {text!r}"


def _integer_default(text: str, kind: str) -> int | str:
    t = text.strip()
    negative = t.startswith("-")
    body = t[1:] if negative else t
    if body.lower().startswith("0x"):
        digits, base = body[2:], 16
    else:
        digits, base = body, 10
        if len(digits) > 1 and digits.startswith("0"):
            return f"invalid default {text!r} for {kind}: leading zeros are ambiguous"
    if not digits or not re.fullmatch(r"[0-9a-fA-F]+" if base == 16 else r"[0-9]+", digits):
        return f"invalid default {text!r} for {kind}"
    value = int(digits, base) * (-1 if negative else 1)
    low, high = INTEGER_RANGES[kind]
    if not low <= value <= high:
        return f"invalid default {text!r} for {kind}: out of range {low}..{high}"
    return value


def parse_default(text: str | None, ftype: FieldType) -> DefaultValue | str:
    """The Python value of a default (None text means the implicit default).

    Returns a string describing the problem when the default is invalid: callers tell
    a problem from a value with ``isinstance(result, DefaultProblem)``.
    """
    kind = ftype.kind
    if kind in INTEGER_RANGES:
        if text is None or text == "":
            return 0
        result = _integer_default(text, kind)
        return DefaultProblem(result) if isinstance(result, str) else result
    if kind == "bool":
        if text is None or text == "":
            return False
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        return DefaultProblem(f"invalid default {text!r} for bool: use true or false")
    if kind == "float64":
        if text is None or text == "":
            return 0.0
        try:
            value = float(text)
        except ValueError:
            return DefaultProblem(f"invalid default {text!r} for float64")
        if math.isnan(value) and text.strip().lower() != "nan":
            return DefaultProblem(f"invalid default {text!r} for float64")
        return value
    if kind == "uuid":
        if text is None or text == "":
            return uuid.UUID(int=0)
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (ValueError, TypeError):
            raw = b""
        if len(raw) != 16:
            return DefaultProblem(
                f"invalid default {text!r} for uuid: expected 22 base64url characters"
            )
        return uuid.UUID(bytes=raw)
    if kind == "string":
        if text == "null":
            return None
        return "" if text is None else text
    if kind == "records":
        if text not in (None, "", "null"):
            return DefaultProblem("the only valid default for a records field is null")
        return None
    names = {"bytes": "bytes", "array": "array", "struct": "struct"}
    if text not in (None, "", "null"):
        empty = {"bytes": "empty", "array": "the empty array", "struct": "the empty struct"}[kind]
        return DefaultProblem(
            f"the only valid default for a {names[kind]} field is {empty} or null"
        )
    if text == "null":
        return None
    empties: dict[str, DefaultValue] = {
        "bytes": b"",
        "array": EmptyArray(),
        "struct": EmptyStruct(),
    }
    return empties[kind]


class DefaultProblem(str):
    """A default that could not be parsed; the text says why."""
