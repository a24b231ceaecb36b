"""Stage 2: the raw spec model to the frozen, checked intermediate representation
(:mod:`codegen.ir`).

Every semantic rule of Kafka's generator (and a few more) is checked here, and every
problem of the whole spec set is collected before anything is raised.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from codegen.errors import ProblemLog
from codegen.ir import (
    ENTITY_BASE_TYPES,
    KEYED_TYPES,
    DefaultProblem,
    Field,
    FieldType,
    Message,
    Struct,
    parse_default,
    parse_field_type,
)
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

__all__ = ["build_message", "build_messages"]


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
    if isinstance(default, DefaultProblem):
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
