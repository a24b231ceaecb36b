"""Stage 2: the raw spec model to a frozen, checked intermediate representation.

Every semantic rule of Kafka's generator (and a few more) is checked here, and every
problem of the whole spec set is collected before anything is raised. The IR has
versions parsed into :class:`VersionRange` values, struct references resolved, Python
and JSON names chosen and defaults turned into Python values.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from codegen.errors import ProblemLog
from codegen.naming import (
    RESERVED_ATTRIBUTES,
    attribute_name,
    class_name_problem,
    json_name,
    length_problem,
    module_name,
    shown,
)
from codegen.spec import FieldSpec, MessageSpec, StructSpec
from codegen.versions import VersionRange, VersionRangeError

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
    a problem from a value with ``isinstance(result, _Problem)``.
    """
    kind = ftype.kind
    if kind in INTEGER_RANGES:
        if text is None or text == "":
            return 0
        result = _integer_default(text, kind)
        return _Problem(result) if isinstance(result, str) else result
    if kind == "bool":
        if text is None or text == "":
            return False
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        return _Problem(f"invalid default {text!r} for bool: use true or false")
    if kind == "float64":
        if text is None or text == "":
            return 0.0
        try:
            value = float(text)
        except ValueError:
            return _Problem(f"invalid default {text!r} for float64")
        if math.isnan(value) and text.strip().lower() != "nan":
            return _Problem(f"invalid default {text!r} for float64")
        return value
    if kind == "uuid":
        if text is None or text == "":
            return uuid.UUID(int=0)
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (ValueError, TypeError):
            raw = b""
        if len(raw) != 16:
            return _Problem(f"invalid default {text!r} for uuid: expected 22 base64url characters")
        return uuid.UUID(bytes=raw)
    if kind == "string":
        if text == "null":
            return None
        return "" if text is None else text
    if kind == "records":
        if text not in (None, "", "null"):
            return _Problem("the only valid default for a records field is null")
        return None
    names = {"bytes": "bytes", "array": "array", "struct": "struct"}
    if text not in (None, "", "null"):
        empty = {"bytes": "empty", "array": "the empty array", "struct": "the empty struct"}[kind]
        return _Problem(f"the only valid default for a {names[kind]} field is {empty} or null")
    if text == "null":
        return None
    empties: dict[str, DefaultValue] = {
        "bytes": b"",
        "array": EmptyArray(),
        "struct": EmptyStruct(),
    }
    return empties[kind]


class _Problem(str):
    """A default that could not be parsed; the text says why."""


# --------------------------------------------------------------------------- building


@dataclass(slots=True)
class _Context:
    spec: MessageSpec
    log: ProblemLog
    flexible: VersionRange
    common: dict[str, StructSpec]
    inline_names: dict[str, str]  # inline struct name -> json path of first definition
    built: dict[str, Struct]
    order: list[str]

    def problem(self, json_path: str, line: int, message: str) -> None:
        self.log.add(self.spec.path, line, json_path, message)


def _range(
    ctx: _Context, text: str | None, json_path: str, line: int, what: str
) -> VersionRange | None:
    if text is None:
        return None
    try:
        return VersionRange.parse(text)
    except VersionRangeError as exc:
        ctx.problem(json_path, line, f"{what}: {exc}")
        return None


def _build_field(ctx: _Context, spec: FieldSpec, parent: VersionRange, top: bool) -> Field | None:
    p, line = spec.json_path, spec.line

    def problem(message: str, key: str = "") -> None:
        ctx.problem(f"{p}.{key}" if key else p, line, message)

    ok = True
    ftype_or_problem = parse_field_type(spec.type)
    if isinstance(ftype_or_problem, str):
        problem(ftype_or_problem, "type")
        ftype = FieldType("int32")
        ok = False
    else:
        ftype = ftype_or_problem

    tagged = _range(ctx, spec.tagged_versions, f"{p}.taggedVersions", line, "taggedVersions")
    versions = _range(ctx, spec.versions, f"{p}.versions", line, "versions")
    if spec.versions is None:
        if tagged is None:
            problem(f"field {spec.name} has no versions; give versions (or taggedVersions)")
            ok = False
        versions = tagged
    if versions is None:
        versions = VersionRange.NONE
        ok = False
    elif not versions.empty and not parent.overlaps(versions):
        problem(
            f"field {spec.name} has versions {versions}, but its struct exists only in "
            f"versions {parent}",
            "versions",
        )
        ok = False

    nullable = _range(
        ctx, spec.nullable_versions, f"{p}.nullableVersions", line, "nullableVersions"
    )
    nullable = VersionRange.NONE if nullable is None else nullable
    if not nullable.empty:
        if ftype.kind == "uuid":
            problem(
                "type uuid cannot be nullable (Kafka's UUID type has no null)", "nullableVersions"
            )
            ok = False
        elif not ftype.can_be_nullable:
            problem(f"type {ftype.spec_text} cannot be nullable", "nullableVersions")
            ok = False

    tag = spec.tag
    if tag is not None and tag < 0:
        problem("tags cannot be negative", "tag")
        ok = False
    if tag is not None and tagged is None:
        problem("a tag is given, so taggedVersions must be given as well", "tag")
        ok = False
    if tagged is not None:
        if tag is None:
            problem("taggedVersions is given, but no tag", "taggedVersions")
            ok = False
        if not tagged.empty and not tagged.open_ended:
            problem(
                f"taggedVersions {tagged} is not open-ended; use none or a range ending in +",
                "taggedVersions",
            )
            ok = False
        elif not versions.contains(tagged):
            problem(
                f"taggedVersions {tagged} must be a subset of versions {versions}",
                "taggedVersions",
            )
            ok = False
        elif not ctx.flexible.contains(tagged):
            problem(
                f"taggedVersions {tagged} must be inside the message's flexibleVersions "
                f"{ctx.flexible}",
                "taggedVersions",
            )
            ok = False
        if spec.map_key:
            problem("a tagged field cannot be a map key", "mapKey")
            ok = False
        if ftype.kind == "records":
            problem("a records field cannot be tagged", "tag")
            ok = False
        some_nullable = nullable.intersect(tagged)
        if not some_nullable.empty and some_nullable != tagged:
            problem(
                f"nullableVersions {nullable} covers only part of taggedVersions {tagged}; "
                "either all tagged versions are nullable or none",
                "nullableVersions",
            )
            ok = False
    tagged = VersionRange.NONE if tagged is None else tagged

    if spec.map_key and top:
        problem("mapKey cannot be set on top-level fields", "mapKey")
        ok = False

    flexible = ctx.flexible
    if spec.flexible_versions is not None:
        override = _range(
            ctx, spec.flexible_versions, f"{p}.flexibleVersions", line, "flexibleVersions"
        )
        if ftype.kind not in ("string", "bytes"):
            problem(
                "only string and bytes fields can override flexibleVersions", "flexibleVersions"
            )
            ok = False
        elif override is not None:
            if not override.empty and not override.open_ended:
                problem(f"flexibleVersions {override} is not open-ended", "flexibleVersions")
                ok = False
            elif not ctx.flexible.contains(override):
                problem(
                    f"flexibleVersions {override} must be inside the message's flexibleVersions "
                    f"{ctx.flexible}",
                    "flexibleVersions",
                )
                ok = False
            flexible = override

    if spec.zero_copy and ftype.kind != "bytes":
        problem("only bytes fields can use zeroCopy", "zeroCopy")
        ok = False

    if spec.entity_type is not None and spec.entity_type != "unknown":
        base = ftype.element if ftype.kind == "array" and ftype.element else ftype
        expected = ENTITY_BASE_TYPES[spec.entity_type]
        if base.kind != expected:
            problem(
                f"entityType {spec.entity_type} needs type {expected}, not {ftype.spec_text}",
                "entityType",
            )
            ok = False

    default = parse_default(spec.default, ftype)
    if isinstance(default, _Problem):
        problem(str(default), "default")
        default = None
        ok = False
    elif spec.default == "null" and ftype.kind != "records" and not nullable.contains(versions):
        problem(
            f"null cannot be the default of {spec.name}: it is not nullable in all of its "
            f"versions {versions}",
            "default",
        )
        ok = False

    struct: Struct | None = None
    if spec.fields is not None and not ftype.is_struct_like:
        problem(f"field {spec.name} of type {ftype.spec_text} cannot have fields", "fields")
        ok = False
    if ftype.is_struct_like and ok:
        struct = _struct_for_field(ctx, spec, ftype, versions)
        if struct is None:
            ok = False

    if not ok:
        return None
    return Field(
        name=spec.name,
        attr=attribute_name(spec.name),
        json_key=json_name(spec.name),
        type=ftype,
        versions=versions,
        nullable_versions=nullable,
        tagged_versions=tagged,
        tag=tag,
        flexible_versions=flexible,
        default=default,
        default_text=spec.default,
        ignorable=spec.ignorable,
        map_key=spec.map_key,
        entity_type=spec.entity_type,
        about=spec.about,
        zero_copy=spec.zero_copy,
        struct=struct,
    )


def _struct_for_field(
    ctx: _Context, spec: FieldSpec, ftype: FieldType, versions: VersionRange
) -> Struct | None:
    name = ftype.struct_name if ftype.kind == "struct" else ftype.element.struct_name  # type: ignore[union-attr]
    assert name is not None
    where = f"{spec.json_path}.type"
    if spec.fields is None:
        if name in ctx.common:
            return _build_common(ctx, name)
        ctx.problem(
            where,
            spec.line,
            f"no struct named {name}: define its fields inline or in commonStructs",
        )
        return None
    bad_name = class_name_problem(name)
    if bad_name is not None:
        ctx.problem(where, spec.line, f"struct name {shown(name)} {bad_name}")
        return None
    if name in ctx.common:
        ctx.problem(
            where, spec.line, f"{name} is a common struct and cannot be specified again inline"
        )
        return None
    if name in ctx.inline_names:
        ctx.problem(
            where,
            spec.line,
            f"struct {name} is specified twice (first at {ctx.inline_names[name]})",
        )
        return None
    ctx.inline_names[name] = spec.json_path
    ctx.order.append(name)
    fields = _build_fields(ctx, spec.fields, versions, name, top=False)
    if fields is None:
        return None
    struct = Struct(name=name, versions=versions, fields=fields, is_root=False, is_common=False)
    ctx.built[name] = struct
    return struct


def _build_common(ctx: _Context, name: str) -> Struct | None:
    if name in ctx.built:
        return ctx.built[name]
    spec = ctx.common[name]
    versions = _range(ctx, spec.versions, f"{spec.json_path}.versions", spec.line, "versions")
    if versions is None:
        return None
    ctx.built[name] = Struct(name=name, versions=versions, fields=(), is_root=False, is_common=True)
    ctx.order.append(name)
    fields = _build_fields(ctx, spec.fields, versions, name, top=False)
    if fields is None:
        return None
    struct = Struct(name=name, versions=versions, fields=fields, is_root=False, is_common=True)
    ctx.built[name] = struct
    return struct


def _build_fields(
    ctx: _Context,
    specs: tuple[FieldSpec, ...],
    versions: VersionRange,
    owner: str,
    top: bool,
) -> tuple[Field, ...] | None:
    fields: list[Field] = []
    ok = True
    names: dict[str, FieldSpec] = {}
    attrs: dict[str, FieldSpec] = {}
    tags: dict[int, FieldSpec] = {}
    for spec in specs:
        if spec.name in names:
            ctx.problem(
                f"{spec.json_path}.name",
                spec.line,
                f"in {owner}, field {spec.name} has a duplicate name; field names must be unique",
            )
            ok = False
            continue
        names[spec.name] = spec
        too_long = length_problem(spec.name)
        if too_long is not None:
            ctx.problem(
                f"{spec.json_path}.name", spec.line, f"field name {shown(spec.name)} {too_long}"
            )
            ok = False
        attr = attribute_name(spec.name)
        if attr in attrs:
            ctx.problem(
                f"{spec.json_path}.name",
                spec.line,
                f"in {owner}, fields {attrs[attr].name} and {spec.name} both become the "
                f"Python attribute {attr}",
            )
            ok = False
        attrs[attr] = spec
        if attr in RESERVED_ATTRIBUTES:
            ctx.problem(
                f"{spec.json_path}.name",
                spec.line,
                f"field {spec.name} would become the attribute {attr}, which generated "
                "classes use for their own API; rename the field",
            )
            ok = False
        if spec.tag is not None and spec.tag >= 0:
            if spec.tag in tags:
                ctx.problem(
                    f"{spec.json_path}.tag",
                    spec.line,
                    f"in {owner}, field {spec.name} has a duplicate tag {spec.tag} "
                    f"(also used by {tags[spec.tag].name}); tags must be unique",
                )
                ok = False
            tags[spec.tag] = spec
        built = _build_field(ctx, spec, versions, top)
        if built is None:
            ok = False
        else:
            fields.append(built)
    if tags and ok:
        expected = list(range(len(tags)))
        if sorted(tags) != expected:
            missing = min(set(expected) - set(tags))
            spec = tags[max(tags)]
            ctx.problem(
                f"{spec.json_path}.tag",
                spec.line,
                f"in {owner}, the tags are not contiguous: use tag {missing} before any higher tag",
            )
            ok = False
    return tuple(fields) if ok else None


def build_message(spec: MessageSpec, log: ProblemLog) -> Message | None:
    """Check one spec and build its IR; problems go to ``log``."""
    before = len(log.problems)
    text = spec.source

    def problem(json_path: str, message: str) -> None:
        log.add(spec.path, text.line_of(json_path), json_path, message)

    valid = None
    try:
        valid = VersionRange.parse(spec.valid_versions)
    except VersionRangeError as exc:
        problem("$.validVersions", f"validVersions: {exc}")
    if valid is not None and valid.open_ended:
        problem(
            "$.validVersions",
            f"validVersions {valid} is open-ended; a message must name its highest version",
        )
    if valid is not None and valid.empty and len(log.problems) == before:
        # Kafka keeps specs of removed APIs with validVersions "none" and generates nothing.
        return None
    bad_name = class_name_problem(spec.name)
    if bad_name is not None:
        problem("$.name", f"message name {shown(spec.name)} {bad_name}")
    if not spec.has_fields:
        problem("$", "fields is missing; a message with versions needs a list of fields")

    flexible = VersionRange.NONE
    if spec.flexible_versions is None:
        problem("$", "flexibleVersions is missing; use 0+ for new messages, or none")
    else:
        try:
            flexible = VersionRange.parse(spec.flexible_versions)
        except VersionRangeError as exc:
            problem("$.flexibleVersions", f"flexibleVersions: {exc}")
        if not flexible.empty and not flexible.open_ended:
            problem(
                "$.flexibleVersions",
                f"flexibleVersions {flexible} is not open-ended; use none or a range ending in +",
            )

    if spec.latest_version_unstable and spec.type != "request":
        problem("$.latestVersionUnstable", "latestVersionUnstable is only valid for requests")
    if spec.listeners and spec.type != "request":
        problem("$.listeners", "listeners are only valid for requests")
    if spec.type in KEYED_TYPES and spec.api_key is None:
        problem("$", f"a {spec.type} spec needs an apiKey")
    if spec.type == "coordinator-key":
        if spec.valid_versions != "0":
            problem("$.validVersions", "a coordinator-key must have validVersions 0")
        if spec.flexible_versions not in (None, "none"):
            problem("$.flexibleVersions", "a coordinator-key must have flexibleVersions none")

    common: dict[str, StructSpec] = {}
    for struct in spec.common_structs:
        bad_name = class_name_problem(struct.name)
        if bad_name is not None:
            problem(f"{struct.json_path}.name", f"struct name {shown(struct.name)} {bad_name}")
        if struct.name in common:
            problem(f"{struct.json_path}.name", f"common struct {struct.name} is specified twice")
        common[struct.name] = struct
    if spec.name in common:
        problem("$.name", f"the message name {spec.name} is also a common struct name")

    ctx = _Context(spec, log, flexible, common, {}, {}, [])
    # With unusable validVersions, check fields against all versions: one problem, not many.
    usable = valid if valid is not None and not valid.empty else VersionRange.ALL
    fields = _build_fields(ctx, spec.fields, usable, spec.name, top=True)
    for name in common:
        if name not in ctx.built:
            _build_common(ctx, name)  # unused common structs are still checked and emitted
    if spec.name in ctx.inline_names:
        problem(
            f"{ctx.inline_names[spec.name]}.type",
            f"struct {spec.name} has the same name as its message",
        )
    for name in (spec.name, *ctx.order):
        if f"{name}Row" in (spec.name, *ctx.order):
            where = ctx.inline_names.get(f"{name}Row")
            shadowing = f"{where}.type" if where else _common_path(spec, f"{name}Row")
            problem(
                shadowing,
                f"struct {name}Row has the name of {name}'s row type, which the module "
                "defines; rename the struct",
            )
    if len(log.problems) > before or fields is None or valid is None:
        return None
    root = Struct(name=spec.name, versions=valid, fields=fields, is_root=True, is_common=False)
    structs = (root, *(ctx.built[n] for n in ctx.order))
    return Message(
        name=spec.name,
        spec_type=spec.type,
        api_key=spec.api_key,
        valid_versions=valid,
        flexible_versions=flexible,
        latest_version_unstable=spec.latest_version_unstable,
        root=root,
        structs=structs,
        module=module_name(spec.name),
        source_path=spec.path,
        source_sha256=hashlib.sha256(text.text.encode("utf-8")).hexdigest(),
    )


def _common_path(spec: MessageSpec, name: str) -> str:
    """The JSON path of the name of common struct ``name`` (of the message without one)."""
    for struct in spec.common_structs:
        if struct.name == name:
            return f"{struct.json_path}.name"
    return "$.name"


def build_messages(specs: list[MessageSpec], spec_log: ProblemLog) -> list[Message]:
    """Build every spec, then check the rules that span specs (names, apiKeys).

    A spec with schema problems (``spec.reported``) is checked too, for problems the schema
    did not already report; it builds no message.
    """
    messages: list[Message] = []
    names: dict[str, MessageSpec] = {}
    modules: dict[str, MessageSpec] = {}
    # apiKeys are unique per folder: Kafka generates each module's folder on its own.
    keys: dict[tuple[Path, str, int], MessageSpec] = {}
    for spec in specs:
        text = spec.source
        log = spec_log if not spec.reported else ProblemLog()
        if spec.name in names:
            log.add(
                spec.path,
                text.line_of("$.name"),
                "$.name",
                f"spec name {spec.name} is already used by {names[spec.name].path}",
            )
        names[spec.name] = spec
        mod = module_name(spec.name)
        if mod in modules and modules[mod].name != spec.name:
            log.add(
                spec.path,
                text.line_of("$.name"),
                "$.name",
                f"spec {spec.name} and {modules[mod].name} would both become module {mod}",
            )
        modules[mod] = spec
        if spec.api_key is not None and spec.type in KEYED_TYPES:
            key = (spec.path.parent, spec.type, spec.api_key)
            if key in keys:
                log.add(
                    spec.path,
                    text.line_of("$.apiKey"),
                    "$.apiKey",
                    f"apiKey {spec.api_key} is already used by the {spec.type} {keys[key].name}",
                )
            keys[key] = spec
        message = build_message(spec, log)
        if spec.reported:
            fresh = (p for p in log.problems if not _under_any(p.json_path, spec.reported))
            spec_log.problems.extend(fresh)
        elif message is not None:
            messages.append(message)
    return sorted(messages, key=lambda m: m.name)


def _under_any(json_path: str, roots: tuple[str, ...]) -> bool:
    """``json_path`` is one of ``roots`` or inside one; ``$`` (the message) covers only the
    problems at ``$`` itself, not every problem of the spec."""
    return any(
        json_path == r or (r != "$" and json_path.startswith((f"{r}.", f"{r}["))) for r in roots
    )
